import { DEFAULT_SERVER, openApiDocument } from '@proxyd/admin-api';
import type { Command } from 'commander';

/**
 * `proxyd openapi`: prints the admin API's OpenAPI 3.1 document (JSON) to
 * stdout. Its `servers` is the default TCP admin listener
 * (`http://127.0.0.1:6190`); the document a running daemon serves at
 * `GET /openapi.json` names the listener it is fetched from instead.
 */
export function registerOpenapi(program: Command): void {
  program
    .command('openapi')
    .description(
      `print the admin API's OpenAPI 3.1 document (JSON); servers: ${DEFAULT_SERVER.url} (GET /openapi.json names the listener it is fetched from)`,
    )
    .action(() => {
      process.stdout.write(`${JSON.stringify(openApiDocument(), null, 2)}\n`);
    });
}
