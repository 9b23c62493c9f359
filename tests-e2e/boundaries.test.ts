import { existsSync } from 'node:fs';
import { readdir, readFile } from 'node:fs/promises';
import { builtinModules } from 'node:module';
import path from 'node:path';
import { fileURLToPath } from 'node:url';
import { describe, expect, it } from 'vitest';

const root = fileURLToPath(new URL('..', import.meta.url));
const libraries = [
  'packages/model',
  'packages/proxy-core',
  'packages/route-store',
  'packages/cluster',
  'packages/telemetry',
  'packages/certificates',
  'packages/proxyfile',
  'packages/docker-source',
  'packages/analytics',
  'packages/history',
  'packages/admin-api',
  'packages/dashboard',
  'packages/cli',
  'packages/test-peers',
];
const apps = ['apps/proxyd'];

// Which workspace entries each package may import (DESIGN.md, "Packages, and what each may import").
// Where today's code still reaches past that table, the entry says so and why; the contract issue
// (29) removes those.
const allowed: Record<string, string[]> = {
  // The ground floor: nothing of the product (and only typebox besides, checked below).
  '@proxyd/model': [],
  '@proxyd/proxy-core': ['@proxyd/model'],
  '@proxyd/route-store': ['@proxyd/model'],
  // Telemetry's types (a worker's metrics snapshot) for the fleet's messages, as types only (checked below).
  '@proxyd/cluster': ['@proxyd/model', '@proxyd/telemetry'],
  // Request metrics, access and site logs read the model's request record; nothing else of the product.
  '@proxyd/telemetry': ['@proxyd/model'],
  // Also the data plane's ports it implements (CertificateStore, ChallengeResponder), as types, until
  // they move to the control↔data contract.
  '@proxyd/certificates': ['@proxyd/model', '@proxyd/proxy-core'],
  // route-store for its sink type only (checked below): the Proxyfile source writes through it.
  '@proxyd/proxyfile': ['@proxyd/model', '@proxyd/route-store'],
  // The labels source: the model and its value rules; route-store for its sink type only (checked below).
  '@proxyd/docker-source': ['@proxyd/model', '@proxyd/route-store'],
  // Types only (checked below): analytics implements proxy-core's hook interfaces without its runtime.
  '@proxyd/analytics': ['@proxyd/model', '@proxyd/proxy-core'],
  // Also the rollups it stores (their type, mergeRollups) and the HyperLogLog estimator, until they move to the model.
  '@proxyd/history': ['@proxyd/model', '@proxyd/analytics'],
  '@proxyd/admin-api': ['@proxyd/model'],
  // Also proxy-core, for the `basic_auth` check the dashboard listener shares with the data plane.
  '@proxyd/dashboard': ['@proxyd/model', '@proxyd/proxy-core'],
  '@proxyd/cli': ['@proxyd/proxyfile', '@proxyd/admin-api'],
  // Real peers for tests (pebble): imports nothing of the product, and nothing ships it.
  '@proxyd/test-peers': [],
  '@proxyd/proxyd': [
    '@proxyd/model',
    '@proxyd/proxy-core',
    '@proxyd/route-store',
    '@proxyd/proxyfile',
    '@proxyd/analytics',
    '@proxyd/history',
    '@proxyd/certificates',
    // The light entry a data-plane worker loads (the challenge table, no ACME client).
    '@proxyd/certificates/challenge-table',
    // The light entry `proxyd trust` loads (the local CA and the trust stores, no ACME client).
    '@proxyd/certificates/trust',
    // The light entry for the certificate directory's default (the manager loads with automatic HTTPS only).
    '@proxyd/certificates/file-storage',
    '@proxyd/cluster',
    '@proxyd/docker-source',
    '@proxyd/admin-api',
    '@proxyd/dashboard',
    '@proxyd/cli',
    '@proxyd/telemetry',
    // The entry a data-plane worker loads (its metrics as plain data, no prom-client).
    '@proxyd/telemetry/worker',
  ],
};
// The model's entry without schemas (no typebox, issue 32) is allowed wherever the model is.
for (const entries of Object.values(allowed))
  if (entries.includes('@proxyd/model')) entries.push('@proxyd/model/rules');

// Packages from outside the workspace (node: built-ins included) a package's shipped sources may import,
// where DESIGN.md's table pins them down.
const allowedExternal: Record<string, string[]> = {
  // Pure: no I/O and no runtime module, so any package (and a browser bundle) can load it.
  '@proxyd/model': ['typebox'],
};
// Imported by a package's sources, but only as types.
const typeOnly: Record<string, string[]> = {
  '@proxyd/analytics': ['@proxyd/proxy-core'],
  '@proxyd/proxyfile': ['@proxyd/route-store'],
  '@proxyd/docker-source': ['@proxyd/route-store'],
  '@proxyd/cluster': ['@proxyd/telemetry'],
};

// Exact entries imported only as types (other entries of that package may be values):
// certificates implements the data plane's ports but uses only the model at run time.
const typeOnlyEntries: Record<string, string[]> = {
  '@proxyd/certificates': ['@proxyd/proxy-core'],
};

// The arrows go one way: sources → store → table → data plane (DESIGN.md, "The system in one
// picture"). What each package must never import, by any entry, in sources or tests, nor depend on.
const neverImports: Record<string, string[]> = {
  // The data plane only reads the table it was handed: nothing of the control plane or the sources.
  '@proxyd/proxy-core': ['@proxyd/route-store', '@proxyd/proxyfile', '@proxyd/admin-api', '@proxyd/docker-source'],
  // The store is written through by the sources, never the other way round.
  '@proxyd/route-store': ['@proxyd/proxyfile', '@proxyd/docker-source', '@proxyd/admin-api'],
};

// Issue 29: one concern per file, and no file that needs another which needs it back.
/** The most lines a shipped source file may have (tests, their helpers and generated files aside). */
const MAX_LINES = 600;
// Files over MAX_LINES today, each with who is splitting it. Empty this list as they are split.
const longFileExceptions: string[] = [];
// Run-time import cycles today, each written as the test names it (`a.ts → b.ts → a.ts`, starting at the
// first file in sort order). Only packages/certificates and apps/proxyd may hold one, while their owners
// rework them (issue 29); there is none in either today. Empty this list as they are broken.
const cycleExceptions: string[] = [];
// Classes apps/proxyd/src still exports: the app is the composition root, and a class it exports is a
// component that belongs in a package (DESIGN.md). The engineers moving metrics, logs, the watcher, the
// history flush, trust and the cluster contract out of the app (issue 29) take these with them; empty
// this list as they go.
const appClassExceptions: string[] = [];
// apps/proxyd/src files its README's "behaviour → file" table does not name yet. The engineers moving
// things out of the app (issue 29) add a row, or move the file out; empty this list as they do.
const appReadmeExceptions: string[] = [];

interface PackageJson {
  name: string;
  exports?: Record<string, unknown>;
  bin?: Record<string, string>;
  dependencies?: Record<string, string>;
  peerDependencies?: Record<string, string>;
  devDependencies?: Record<string, string>;
}

interface Import {
  file: string;
  spec: string;
  /** `import type …` / `export type …`: erased at build time. */
  typeOnly: boolean;
}

const readJson = async (file: string) => JSON.parse(await readFile(file, 'utf8')) as PackageJson;

async function sourceFiles(dir: string): Promise<string[]> {
  const entries = await readdir(dir, { withFileTypes: true, recursive: true });
  return entries
    .filter((e) => e.isFile() && /\.(ts|mts|js|mjs)$/.test(e.name))
    .map((e) => path.join(e.parentPath, e.name))
    .filter((file) => !file.split(path.sep).some((part) => part === 'node_modules' || part === 'results'));
}

/** Every module specifier a file names: static imports and re-exports, side-effect and dynamic imports. */
function importsOf(file: string, text: string): Import[] {
  const found: Import[] = [];
  for (const m of text.matchAll(/^\s*(?:import|export)\s+(type\s+)?[\w\s{},*$]*?\bfrom\s*['"]([^'"]+)['"]/gm)) {
    found.push({ file, spec: m[2] as string, typeOnly: m[1] !== undefined });
  }
  for (const m of text.matchAll(/^\s*import\s*['"]([^'"]+)['"]/gm)) {
    found.push({ file, spec: m[1] as string, typeOnly: false });
  }
  for (const m of text.matchAll(/\bimport\(\s*['"]([^'"]+)['"]\s*\)/g)) {
    found.push({ file, spec: m[1] as string, typeOnly: false });
  }
  return found;
}

async function importsUnder(dir: string): Promise<Import[]> {
  const found: Import[] = [];
  for (const file of await sourceFiles(dir)) found.push(...importsOf(file, await readFile(file, 'utf8')));
  return found;
}

/**
 * The relative imports of a file that load a module at run time, resolved to files: static imports,
 * re-exports and side-effect imports, and dynamic ones. `import type` and `export type` are erased by
 * the build and left out. `import { type A }` is not: under `verbatimModuleSyntax` tsc keeps it as
 * `import {} from './a.js'`, which still loads (and orders) the module, so it counts.
 */
function runtimeImportsOf(file: string, text: string): string[] {
  const specs: string[] = [];
  for (const m of text.matchAll(/^\s*(?:import|export)\s+(type\s+)?[\w\s{},*$]*?\bfrom\s*['"](\.[^'"]+)['"]/gm)) {
    if (m[1] === undefined) specs.push(m[2] as string);
  }
  for (const m of text.matchAll(/^\s*import\s*['"](\.[^'"]+)['"]/gm)) specs.push(m[1] as string);
  for (const m of text.matchAll(/\bimport\(\s*['"](\.[^'"]+)['"]\s*\)/g)) specs.push(m[1] as string);
  return specs.map((spec) => {
    const target = path.resolve(path.dirname(file), spec);
    // Sources import `./x.js` for `./x.ts` (NodeNext); a `.js` or `.mjs` source is imported as itself.
    return existsSync(target) ? target : target.replace(/\.js$/, '.ts').replace(/\.mjs$/, '.mts');
  });
}

/** Each import cycle of `graph` once, as `a → b → … → a` from its first file in sort order. */
function cyclesOf(graph: Map<string, string[]>): string[] {
  // Tarjan's strongly connected components; every component of two or more files (or a file that
  // imports itself) holds a cycle, named by the shortest one through its first file.
  let next = 0;
  const index = new Map<string, number>();
  const low = new Map<string, number>();
  const stack: string[] = [];
  const onStack = new Set<string>();
  const components: string[][] = [];
  const visit = (v: string): void => {
    index.set(v, next);
    low.set(v, next);
    next++;
    stack.push(v);
    onStack.add(v);
    for (const w of graph.get(v) ?? []) {
      if (!index.has(w)) {
        visit(w);
        low.set(v, Math.min(low.get(v) as number, low.get(w) as number));
      } else if (onStack.has(w)) low.set(v, Math.min(low.get(v) as number, index.get(w) as number));
    }
    if (low.get(v) !== index.get(v)) return;
    const component: string[] = [];
    let w: string;
    do {
      w = stack.pop() as string;
      onStack.delete(w);
      component.push(w);
    } while (w !== v);
    if (component.length > 1 || (graph.get(v) ?? []).includes(v)) components.push(component.sort());
  };
  for (const v of [...graph.keys()].sort()) if (!index.has(v)) visit(v);
  return components
    .map((component) => {
      const start = component[0] as string;
      const inside = new Set(component);
      const from = new Map<string, string>();
      const queue = [start];
      let last = start;
      // Breadth-first from `start` back to it, staying inside the component.
      search: for (let i = 0; i < queue.length; i++) {
        const v = queue[i] as string;
        for (const w of graph.get(v) ?? []) {
          if (w === start) {
            last = v;
            break search;
          }
          if (inside.has(w) && !from.has(w)) {
            from.set(w, v);
            queue.push(w);
          }
        }
      }
      const loop = [start];
      for (let v = last; v !== start; v = from.get(v) as string) loop.splice(1, 0, v);
      return [...loop, start].map(rel).join(' → ');
    })
    .sort();
}

/** Shipped sources of every package and app: what `src/` holds, less tests, their helpers and generated files. */
async function shippedSources(): Promise<string[]> {
  const files: string[] = [];
  for (const dir of [...libraries, ...apps]) {
    for (const file of await sourceFiles(path.join(root, dir, 'src'))) {
      if (isTest(file)) continue;
      if (/^\/[/*]\s*@generated/.test(await readFile(file, 'utf8'))) continue;
      files.push(file);
    }
  }
  return files.sort();
}

/** `@scope/name/sub` → `@scope/name`; `name/sub` → `name`. */
function packageOf(spec: string): string {
  const parts = spec.split('/');
  return spec.startsWith('@') ? parts.slice(0, 2).join('/') : (parts[0] as string);
}

const isBuiltin = (spec: string) => spec.startsWith('node:') || builtinModules.includes(spec);
/** Tests and their helpers: not shipped, so they may also use devDependencies. */
const isTest = (file: string) => /\.test(-helpers)?\.[cm]?[jt]s$/.test(file);
const rel = (file: string) => path.relative(root, file);

/** Every file path an `exports` value names, through nested conditions. */
function exportTargets(value: unknown): string[] {
  if (typeof value === 'string') return [value];
  if (value && typeof value === 'object') return Object.values(value).flatMap(exportTargets);
  return [];
}

/** `@proxyd/x` and `@proxyd/x/sub` for every entry of every library's exports map. */
async function publicEntries(): Promise<Set<string>> {
  const entries = new Set<string>();
  for (const dir of libraries) {
    const { name, exports } = await readJson(path.join(root, dir, 'package.json'));
    for (const key of Object.keys(exports ?? {})) entries.add(key === '.' ? name : `${name}/${key.slice(2)}`);
  }
  return entries;
}

describe('package boundaries', () => {
  it('no package imports another package internals or escapes its own directory', async () => {
    const entries = await publicEntries();
    const violations: string[] = [];
    for (const dir of [...libraries, ...apps]) {
      const pkgDir = path.join(root, dir);
      const { name } = await readJson(path.join(pkgDir, 'package.json'));
      for (const { file, spec } of await importsUnder(path.join(pkgDir, 'src'))) {
        const where = `${rel(file)}: ${spec}`;
        if (spec.startsWith('.')) {
          const target = path.resolve(path.dirname(file), spec);
          if (!target.startsWith(path.join(pkgDir, 'src'))) violations.push(`${where} leaves the package`);
        } else if (spec.startsWith('@proxyd/')) {
          // Shipped code follows DESIGN.md; tests may use any public entry they declare (checked below).
          if (isTest(file) ? !entries.has(spec) : !(allowed[name] ?? []).includes(spec)) {
            violations.push(`${where} is not an allowed public entry for ${name}${isTest(file) ? ' tests' : ''}`);
          }
        }
      }
    }
    expect(violations).toEqual([]);
  });

  it('the model imports only typebox: no other package, no node: built-in', async () => {
    const violations: string[] = [];
    for (const [name, external] of Object.entries(allowedExternal)) {
      const dir = libraries.find((d) => d.endsWith(`/${name.split('/')[1]}`)) as string;
      for (const { file, spec } of await importsUnder(path.join(root, dir, 'src'))) {
        if (isTest(file) || spec.startsWith('.') || spec.startsWith('@proxyd/')) continue;
        if (!external.includes(packageOf(spec)))
          violations.push(`${rel(file)}: ${spec} is not one of ${external.join(', ')}`);
      }
    }
    expect(Object.keys(allowedExternal)).toEqual(['@proxyd/model']);
    expect(violations).toEqual([]);
  });

  it('telemetry imports only the model, prom-client, pino and node: built-ins; only the app loads it', async () => {
    const violations: string[] = [];
    for (const { file, spec } of await importsUnder(path.join(root, 'packages/telemetry/src'))) {
      if (isTest(file) || spec.startsWith('.') || isBuiltin(spec)) continue;
      if (!['@proxyd/model', 'prom-client', 'pino'].includes(packageOf(spec)))
        violations.push(`${rel(file)}: ${spec} is not the model, prom-client or pino`);
    }
    const loaders = Object.entries(allowed)
      .filter(
        ([name, entries]) =>
          entries.includes('@proxyd/telemetry') && !(typeOnly[name] ?? []).includes('@proxyd/telemetry'),
      )
      .map(([name]) => name);
    expect(loaders).toEqual(['@proxyd/proxyd']);
    expect(violations).toEqual([]);
  });

  it('registered symbols are defined in one file: nothing rides hidden on shared objects under a key spelled twice', async () => {
    // The route store's changes travel in the model's RouteSnapshot, not under a symbol on the route array;
    // the one registered symbol left (the request-events key on a response) is the model's.
    const found: string[] = [];
    for (const dir of [...libraries, ...apps]) {
      for (const file of await sourceFiles(path.join(root, dir, 'src'))) {
        if (isTest(file)) continue;
        if ((await readFile(file, 'utf8')).includes('Symbol.for(')) found.push(rel(file));
      }
    }
    expect(found).toEqual(['packages/model/src/request-events.ts']);
  });

  it('test peers are for tests only: no package or app depends on them at run time', async () => {
    const violations: string[] = [];
    for (const dir of [...libraries, ...apps]) {
      const pkg = await readJson(path.join(root, dir, 'package.json'));
      if (pkg.dependencies?.['@proxyd/test-peers'] || pkg.peerDependencies?.['@proxyd/test-peers'])
        violations.push(`${dir}/package.json has @proxyd/test-peers as a run-time dependency`);
    }
    expect(violations).toEqual([]);
  });

  it('the arrows go one way: sources → store → table → data plane', async () => {
    const violations: string[] = [];
    for (const [name, forbidden] of Object.entries(neverImports)) {
      const dir = [...libraries, ...apps].find((d) => d.endsWith(`/${name.split('/')[1]}`)) as string;
      const pkg = await readJson(path.join(root, dir, 'package.json'));
      expect(pkg.name).toBe(name);
      // The table of allowed imports must not say otherwise.
      for (const spec of allowed[name] ?? []) {
        if (forbidden.includes(packageOf(spec))) violations.push(`allowed[${name}] lists ${spec}`);
      }
      const declared = [
        ...Object.keys(pkg.dependencies ?? {}),
        ...Object.keys(pkg.peerDependencies ?? {}),
        ...Object.keys(pkg.devDependencies ?? {}),
      ];
      for (const dep of declared) if (forbidden.includes(dep)) violations.push(`${dir}/package.json depends on ${dep}`);
      for (const { file, spec } of await importsUnder(path.join(root, dir, 'src'))) {
        if (forbidden.includes(packageOf(spec))) violations.push(`${rel(file)}: ${spec} points against the flow`);
      }
    }
    expect(Object.keys(neverImports)).toEqual(['@proxyd/proxy-core', '@proxyd/route-store']);
    expect(violations).toEqual([]);
  });

  it('analytics uses proxy-core, and proxyfile route-store, for types only (`import type`), so neither carries the runtime', async () => {
    const violations: string[] = [];
    for (const dir of libraries) {
      const pkgDir = path.join(root, dir);
      const { name } = await readJson(path.join(pkgDir, 'package.json'));
      const typesFrom = typeOnly[name] ?? [];
      for (const { file, spec, typeOnly: erased } of await importsUnder(path.join(pkgDir, 'src'))) {
        if (isTest(file) || erased) continue;
        if (typesFrom.includes(packageOf(spec)) || (typeOnlyEntries[name] ?? []).includes(spec)) {
          violations.push(`${rel(file)}: ${spec} is imported as a value`);
        }
      }
    }
    expect(Object.keys(typeOnly)).toEqual([
      '@proxyd/analytics',
      '@proxyd/proxyfile',
      '@proxyd/docker-source',
      '@proxyd/cluster',
    ]);
    expect(violations).toEqual([]);
  });

  it('every package declares what its sources import (dependencies; tests may also use devDependencies)', async () => {
    const rootPkg = await readJson(path.join(root, 'package.json'));
    const violations: string[] = [];
    for (const dir of [...libraries, ...apps]) {
      const pkgDir = path.join(root, dir);
      const pkg = await readJson(path.join(pkgDir, 'package.json'));
      const runtime = new Set([...Object.keys(pkg.dependencies ?? {}), ...Object.keys(pkg.peerDependencies ?? {})]);
      const forTests = new Set([
        ...Object.keys(pkg.devDependencies ?? {}),
        ...Object.keys(rootPkg.devDependencies ?? {}),
      ]);
      for (const { file, spec } of await importsUnder(path.join(pkgDir, 'src'))) {
        if (spec.startsWith('.') || isBuiltin(spec)) continue;
        const dep = packageOf(spec);
        if (runtime.has(dep) || (isTest(file) && forTests.has(dep))) continue;
        // The browser script is bundled at build time from a devDependency.
        if (file.includes(`${path.sep}browser${path.sep}`) && pkg.devDependencies?.[dep]) continue;
        violations.push(`${rel(file)}: ${spec} is not declared in ${dir}/package.json`);
      }
    }
    expect(violations).toEqual([]);
  });

  it('bench and tests-e2e reach packages only through their public entries', async () => {
    const violations: string[] = [];
    const entries = await publicEntries();
    const internals = [...libraries, ...apps].map((dir) => path.join(root, dir) + path.sep);
    for (const dir of ['bench', 'tests-e2e']) {
      for (const { file, spec } of await importsUnder(path.join(root, dir))) {
        const where = `${rel(file)}: ${spec}`;
        if (spec.startsWith('.')) {
          const target = path.resolve(path.dirname(file), spec);
          if (internals.some((prefix) => target.startsWith(prefix))) violations.push(`${where} reaches into a package`);
        } else if (spec.startsWith('@proxyd/') && !entries.has(spec)) {
          violations.push(`${where} is not a public entry`);
        }
      }
      // A dynamic import of a computed specifier could name any file: only literal ones are allowed
      // here, and the file URL of a module a test generated at run time (`import(pathToFileURL(…))`).
      for (const file of await sourceFiles(path.join(root, dir))) {
        const text = await readFile(file, 'utf8');
        if (/\bimport\(\s*(?!['"][^'"]+['"]\s*\)|pathToFileURL\()/.test(text))
          violations.push(`${rel(file)}: dynamic import of a computed specifier`);
      }
    }
    expect(entries).toContain('@proxyd/model');
    expect(entries).toContain('@proxyd/route-store');
    expect(violations).toEqual([]);
  });

  it('every library has an exports map whose targets exist after the build; the app has none, and its bin exists', async () => {
    const missing: string[] = [];
    for (const dir of libraries) {
      const { name, exports } = await readJson(path.join(root, dir, 'package.json'));
      expect(exports, `${name} has no exports map`).toBeDefined();
      expect(Object.keys(exports ?? {})).toContain('.');
      for (const [entry, conditions] of Object.entries(exports ?? {})) {
        expect(Object.keys(conditions as object), `${name} ${entry}`).toEqual(
          expect.arrayContaining(['types', 'import']),
        );
        for (const target of exportTargets(conditions)) {
          if (!existsSync(path.join(root, dir, target))) missing.push(`${name} ${entry}: ${target}`);
        }
      }
    }
    for (const dir of apps) {
      const { name, exports, bin } = await readJson(path.join(root, dir, 'package.json'));
      expect(exports, `${name} is an application, not a library`).toBeUndefined();
      for (const target of Object.values(bin ?? {})) {
        if (!existsSync(path.join(root, dir, target))) missing.push(`${name} bin: ${target}`);
      }
    }
    expect(missing).toEqual([]);
  });
});

describe('source files (issue 29: one concern per file)', () => {
  it(`no shipped source file is over ${MAX_LINES} lines`, async () => {
    const long: string[] = [];
    for (const file of await shippedSources()) {
      const lines = (await readFile(file, 'utf8')).split('\n').length - 1;
      if (lines > MAX_LINES && !longFileExceptions.includes(rel(file))) long.push(`${rel(file)}: ${lines} lines`);
    }
    expect(long).toEqual([]);
    // An exception for a file that got short, or went, is dropped from the list.
    const files = new Set((await shippedSources()).map(rel));
    for (const file of longFileExceptions) {
      expect(files.has(file), `${file} is listed but gone`).toBe(true);
      const lines = (await readFile(path.join(root, file), 'utf8')).split('\n').length - 1;
      expect(lines, `${file} is listed but ${MAX_LINES} lines or fewer`).toBeGreaterThan(MAX_LINES);
    }
  });

  it('no import cycle between shipped files that is not type-only', async () => {
    const files = await shippedSources();
    const shipped = new Set(files);
    const graph = new Map<string, string[]>();
    for (const file of files) {
      const targets = runtimeImportsOf(file, await readFile(file, 'utf8')).filter((t) => shipped.has(t));
      graph.set(file, targets);
    }
    const cycles = cyclesOf(graph);
    const allowedIn = ['packages/certificates/', 'apps/proxyd/'];
    for (const cycle of cycleExceptions) {
      expect(
        allowedIn.some((dir) => cycle.startsWith(dir)),
        `${cycle}: only certificates and proxyd wait`,
      ).toBe(true);
    }
    expect(cycles.filter((cycle) => !cycleExceptions.includes(cycle))).toEqual([]);
    expect(
      cycleExceptions.filter((cycle) => !cycles.includes(cycle)),
      'listed cycles that are gone',
    ).toEqual([]);
  });

  it('the cycle check finds a cycle, and names it', () => {
    const a = path.join(root, 'packages/x/src/a.ts');
    const b = path.join(root, 'packages/x/src/b.ts');
    const c = path.join(root, 'packages/x/src/c.ts');
    const graph = new Map([
      [a, [b]],
      [b, [c]],
      [c, [a]],
    ]);
    expect(cyclesOf(graph)).toEqual([
      'packages/x/src/a.ts → packages/x/src/b.ts → packages/x/src/c.ts → packages/x/src/a.ts',
    ]);
    expect(
      cyclesOf(
        new Map([
          [a, [b]],
          [b, []],
        ]),
      ),
    ).toEqual([]);
    const text = [
      "import type { A } from './a.js';",
      "export type { B } from './b.js';",
      "import { type C } from './c.js';",
      "import { d } from './d.js';",
      "export * from './e.js';",
      "import './f.js';",
      "const g = await import('./g.js');",
    ].join('\n');
    expect(runtimeImportsOf(a, text).map((t) => path.basename(t))).toEqual(['c.ts', 'd.ts', 'e.ts', 'f.ts', 'g.ts']);
  });

  it('the app exports no class: the components it composes live in packages', async () => {
    const found: string[] = [];
    for (const file of await sourceFiles(path.join(root, 'apps/proxyd/src'))) {
      if (isTest(file)) continue;
      const text = await readFile(file, 'utf8');
      for (const m of text.matchAll(/^export\s+(?:default\s+)?(?:abstract\s+)?class\s+(\w+)/gm)) {
        found.push(`${rel(file)}: ${m[1]}`);
      }
      // `export { Name }` of a class declared in the file counts too.
      for (const m of text.matchAll(/^export\s*\{([^}]*)\}\s*;?\s*$/gm)) {
        for (const name of (m[1] as string).split(',').map((n) => n.trim().split(/\s+as\s+/)[0] as string)) {
          if (new RegExp(`^(?:abstract\\s+)?class\\s+${name}\\b`, 'm').test(text)) found.push(`${rel(file)}: ${name}`);
        }
      }
    }
    found.sort();
    expect(found.filter((entry) => !appClassExceptions.includes(entry))).toEqual([]);
    expect(
      appClassExceptions.filter((entry) => !found.includes(entry)),
      'listed classes that are gone',
    ).toEqual([]);
  });

  it("every file of the app's src/ has a row in its README's behaviour → file table", async () => {
    const readme = await readFile(path.join(root, 'apps/proxyd/README.md'), 'utf8');
    const lines = readme.split('\n');
    const header = lines.findIndex((line) => /^\|\s*behaviour\s*\|\s*file\s*\|/.test(line));
    expect(header, 'README.md has a "| behaviour | file |" table').toBeGreaterThanOrEqual(0);
    const end = lines.findIndex((line, i) => i > header && !line.startsWith('|'));
    const rows = lines.slice(header, end < 0 ? undefined : end);
    const missing: string[] = [];
    for (const file of await sourceFiles(path.join(root, 'apps/proxyd/src'))) {
      if (isTest(file)) continue;
      const name = path.relative(path.join(root, 'apps/proxyd'), file).split(path.sep).join('/');
      if (!rows.some((row) => row.includes(`\`${name}\``))) missing.push(name);
    }
    missing.sort();
    expect(missing.filter((name) => !appReadmeExceptions.includes(name))).toEqual([]);
    expect(
      appReadmeExceptions.filter((name) => !missing.includes(name)),
      'listed files now in the table',
    ).toEqual([]);
  });
});
