// Generates clients from an OpenAPI document the way users do, then compiles
// fixture clients written against them with strict tsc: types with
// openapi-typescript for a hand-written fetch client (`generateClient`,
// admin-openapi-client.test.ts), and two generated runtime clients,
// openapi-typescript + openapi-fetch and @hey-api/openapi-ts
// (`generateRuntimeClients`, admin-openapi-generators.test.ts).
import { execFile } from 'node:child_process';
import { copyFile, readFile, symlink, writeFile } from 'node:fs/promises';
import { createRequire } from 'node:module';
import { dirname, join } from 'node:path';
import { fileURLToPath } from 'node:url';
import { promisify } from 'node:util';

const run = promisify(execFile);
const require = createRequire(import.meta.url);
const fixture = fileURLToPath(new URL('../fixtures/openapi-client/client.ts', import.meta.url));
const fixtures = fileURLToPath(new URL('../fixtures/openapi-client/', import.meta.url));
const e2eModules = fileURLToPath(new URL('../node_modules', import.meta.url));

/** The strict compiler options the fixture clients are compiled with (the repo's own strictness). */
const STRICT = {
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
};

/** A package's bin script, located from its package.json (exports maps hide the bin paths). */
function binOf(pkg: string, bin: string): string {
  return join(dirname(require.resolve(`${pkg}/package.json`)), bin);
}

/** tests-e2e's own TypeScript 6 (the generators need the compiler's JS API, which the repo's native TypeScript 7 lacks). */
const tsc = () => binOf('typescript', join('bin', 'tsc'));

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
  const generator = binOf('openapi-typescript', join('bin', 'cli.js'));
  await writeFile(join(dir, 'openapi.json'), JSON.stringify(document, null, 2));
  await run(process.execPath, [generator, join(dir, 'openapi.json'), '-o', join(dir, 'schema.d.ts')], {
    timeout: 60_000,
  });
  await copyFile(fixture, join(dir, 'client.ts'));
  await writeFile(
    join(dir, 'tsconfig.json'),
    JSON.stringify({ compilerOptions: STRICT, files: ['client.ts', 'schema.d.ts'] }),
  );
  await writeFile(join(dir, 'package.json'), JSON.stringify({ type: 'module' }));
  const compiled = await run(process.execPath, [tsc(), '-p', join(dir, 'tsconfig.json')], { timeout: 120_000 }).then(
    (r) => r.stdout,
    (error: { stdout?: string }) => `tsc failed:\n${error.stdout ?? String(error)}`,
  );
  return {
    compileOutput: compiled,
    modulePath: join(dir, 'out', 'client.js'),
    schema: await readFile(join(dir, 'schema.d.ts'), 'utf8'),
  };
}

/** What {@link generateRuntimeClients} produced. */
export interface RuntimeClients {
  /** tsc's output: empty when both fixture clients type-check against the generated code. */
  compileOutput: string;
  /** The compiled openapi-fetch client (`createAdminClient(baseUrl, token)`). */
  openapiFetch: string;
  /** The compiled @hey-api/openapi-ts client (`createAdminClient(token)`). */
  heyApi: string;
  /** The generated `hey-api/client.gen.ts` text (its base URL comes from the document's `servers`). */
  heyApiClientSource: string;
}

/**
 * Inside `dir`: writes `document`, generates `schema.d.ts` with
 * openapi-typescript and `hey-api/` with @hey-api/openapi-ts (each from its
 * CLI, as a user runs it), copies the two fixture clients beside them and
 * compiles everything strictly. `dir/node_modules` links to tests-e2e's, so
 * `openapi-fetch` resolves as in a user's project.
 */
export async function generateRuntimeClients(document: unknown, dir: string): Promise<RuntimeClients> {
  const options = { cwd: dir, timeout: 120_000 };
  await writeFile(join(dir, 'openapi.json'), JSON.stringify(document, null, 2));
  await writeFile(join(dir, 'package.json'), JSON.stringify({ type: 'module' }));
  await symlink(e2eModules, join(dir, 'node_modules'), 'dir');
  // @hey-api/openapi-ts's bundled fetch client does not compile under exactOptionalPropertyTypes
  // (e.g. `allowReserved: boolean | undefined` passed to `allowReserved?: boolean`): its project is strict without it.
  const projects = {
    'tsconfig.openapi-fetch.json': { options: STRICT, files: ['openapi-fetch-client.ts', 'schema.d.ts'] },
    'tsconfig.hey-api.json': {
      options: { ...STRICT, exactOptionalPropertyTypes: false },
      files: ['hey-api-client.ts'],
    },
  };
  for (const [name, project] of Object.entries(projects)) {
    await writeFile(join(dir, name), JSON.stringify({ compilerOptions: project.options, files: project.files }));
  }
  await run(
    process.execPath,
    [binOf('openapi-typescript', join('bin', 'cli.js')), 'openapi.json', '-o', 'schema.d.ts'],
    options,
  );
  // A NodeNext tsconfig makes the generator write `.js` import specifiers (its path is resolved from the
  // generator's own directory unless absolute).
  await writeFile(
    join(dir, 'openapi-ts.config.mjs'),
    `export default ${JSON.stringify({
      input: join(dir, 'openapi.json'),
      output: { path: join(dir, 'hey-api'), tsConfigPath: join(dir, 'tsconfig.hey-api.json') },
      logs: { file: false },
    })};\n`,
  );
  await run(
    process.execPath,
    [binOf('@hey-api/openapi-ts', join('bin', 'run.js')), '-f', 'openapi-ts.config.mjs', '-s'],
    options,
  );
  for (const file of ['openapi-fetch-client.ts', 'hey-api-client.ts'])
    await copyFile(join(fixtures, file), join(dir, file));
  let compiled = '';
  for (const name of Object.keys(projects)) {
    compiled += await run(process.execPath, [tsc(), '-p', join(dir, name)], options).then(
      (r) => r.stdout,
      (error: { stdout?: string }) => `tsc -p ${name} failed:\n${error.stdout ?? String(error)}`,
    );
  }
  return {
    compileOutput: compiled,
    openapiFetch: join(dir, 'out', 'openapi-fetch-client.js'),
    heyApi: join(dir, 'out', 'hey-api-client.js'),
    heyApiClientSource: await readFile(join(dir, 'hey-api', 'client.gen.ts'), 'utf8'),
  };
}
