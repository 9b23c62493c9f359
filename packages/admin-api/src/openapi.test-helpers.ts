// The OpenAPI document's shape as the tests read it, and its operations.

/** A JSON object of the document. */
export type Node = Record<string, unknown>;
/** One operation object. */
export type Operation = Node & { operationId: string; tags: string[]; responses: Record<string, Node> };
/** The parts of the document the tests read. */
export type Document = {
  openapi: string;
  info: Node & { license: Node };
  servers: Node[];
  tags: Array<{ name: string; description: string }>;
  paths: Record<string, Record<string, Node>>;
  components: { schemas: Record<string, Node>; headers: Record<string, Node>; responses: Record<string, Node> };
};

/** Every operation of the document as `METHOD /path`, PURGE from `x-additionalOperations` included. */
export function operationsOf(doc: Document): Array<{ method: string; path: string; op: Operation }> {
  return Object.entries(doc.paths).flatMap(([path, item]) =>
    Object.entries(item).flatMap(([key, value]) =>
      key === 'x-additionalOperations'
        ? Object.entries(value as Record<string, Operation>).map(([method, op]) => ({ method, path, op }))
        : [{ method: key.toUpperCase(), path, op: value as Operation }],
    ),
  );
}
