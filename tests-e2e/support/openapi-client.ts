// Generates types from an OpenAPI document with openapi-typescript, then
// compiles the fixture client (`fixtures/openapi-client/client.ts`) against
// them with strict tsc: what a user generating a client from the document
// the built daemon serves does (admin-openapi-client.test.ts).
import { execFile } from 'node:child_process';
import { copyFile, readFile, writeFile } from 'node:fs/promises';
import { createRequire } from 'node:module';
import { dirname, join } from 'node:path';
import { fileURLToPath } from 'node:url';
import { promisify } from 'node:util';

const run = promisify(execFile);
const require = createRequire(import.meta.url);
const fixture = fileURLToPath(new URL('../fixtures/openapi-client/client.ts', import.meta.url));

/** What {@link generateClient} produced. */
export interface GeneratedClient {
  /** tsc's output: empty when the client type-checks against the generated types. */
  compileOutput: string;
  /** The compiled client module (`createClient`), importable by file path. */
  modulePath: string;
  /** The generated `schema.d.ts` text. */
  schema: string;
}

/** Writes `document`, runs openapi-typescript on it and compiles `client.ts` strictly, all inside `dir`. */
export async function generateClient(document: unknown, dir: string): Promise<GeneratedClient> {
  // The package's exports map `./*.js` to `./*.mjs`, so locate its bin from package.json.
  const generator = join(dirname(require.resolve('openapi-typescript/package.json')), 'bin', 'cli.js');
  // tests-e2e's own TypeScript 6 (openapi-typescript needs the compiler's JS
  // API, which the repo's native TypeScript 7 does not have); its exports map
  // has no `./bin/tsc`.
  const tsc = join(dirname(require.resolve('typescript/package.json')), 'bin', 'tsc');
  await writeFile(join(dir, 'openapi.json'), JSON.stringify(document, null, 2));
  await run(process.execPath, [generator, join(dir, 'openapi.json'), '-o', join(dir, 'schema.d.ts')], {
    timeout: 60_000,
  });
  await copyFile(fixture, join(dir, 'client.ts'));
  await writeFile(
    join(dir, 'tsconfig.json'),
    JSON.stringify({
      compilerOptions: {
        strict: true,
        exactOptionalPropertyTypes: true,
        noUncheckedIndexedAccess: true,
        module: 'NodeNext',
        moduleResolution: 'NodeNext',
        target: 'ES2022',
        lib: ['ES2022', 'DOM'],
        types: [],
        outDir: 'out',
        skipLibCheck: false,
      },
      files: ['client.ts', 'schema.d.ts'],
    }),
  );
  await writeFile(join(dir, 'package.json'), JSON.stringify({ type: 'module' }));
  const compiled = await run(process.execPath, [tsc, '-p', join(dir, 'tsconfig.json')], { timeout: 120_000 }).then(
    (r) => r.stdout,
    (error: { stdout?: string }) => `tsc failed:\n${error.stdout ?? String(error)}`,
  );
  return {
    compileOutput: compiled,
    modulePath: join(dir, 'out', 'client.js'),
    schema: await readFile(join(dir, 'schema.d.ts'), 'utf8'),
  };
}
