import { openApiDocument } from '@proxyd/admin-api';
import type { Command } from 'commander';

/** `proxyd openapi`: prints the admin API's OpenAPI 3.1 document (JSON) to stdout. */
export function registerOpenapi(program: Command): void {
  program
    .command('openapi')
    .description("print the admin API's OpenAPI 3.1 document (JSON)")
    .action(() => {
      process.stdout.write(`${JSON.stringify(openApiDocument(), null, 2)}\n`);
    });
}
