import type { Endpoint } from '../endpoint.js';
import { OpenApiDocumentSchema } from '../schemas.js';

/** `GET /openapi.json`: the OpenAPI 3.1 document, behind auth. */
export const getOpenApi: Endpoint = {
  method: 'GET',
  path: '/openapi.json',
  url: '/openapi.json',
  operationId: 'getOpenApi',
  summary: 'OpenAPI document',
  description: 'The OpenAPI 3.1 document of this API (the same as `proxyd openapi` prints).',
  auth: true,
  responses: { 200: { description: 'The document', schema: OpenApiDocumentSchema } },
  handler: (ctx) => async () => ctx.openApiDocument(),
};
