import { type Static, Type } from '@sinclair/typebox';

/** Body of `GET /health`. */
export const HealthResponse = Type.Object(
  {
    status: Type.Literal('ok', { description: 'Always "ok" while the process serves' }),
    uptime_secs: Type.Integer({ minimum: 0, description: 'Whole seconds since the process started' }),
  },
  { additionalProperties: false },
);
export type HealthResponse = Static<typeof HealthResponse>;
