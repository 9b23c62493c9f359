import { readdir, readFile } from 'node:fs/promises';
import path from 'node:path';
import { fileURLToPath } from 'node:url';
import { describe, expect, it } from 'vitest';

const root = fileURLToPath(new URL('..', import.meta.url));
const dirs = [
  'packages/proxy-core',
  'packages/proxyfile',
  'packages/analytics',
  'packages/admin-api',
  'packages/cli',
  'apps/proxyd',
];

// Which workspace packages each package may import (DESIGN.md, "Packages, and what each may import").
const allowed: Record<string, string[]> = {
  '@proxyd/proxy-core': [],
  '@proxyd/proxyfile': ['@proxyd/proxy-core/model'],
  '@proxyd/analytics': ['@proxyd/proxy-core', '@proxyd/proxy-core/model'],
  '@proxyd/admin-api': [],
  '@proxyd/cli': ['@proxyd/proxyfile', '@proxyd/admin-api', '@proxyd/proxy-core/model'],
  '@proxyd/proxyd': [
    '@proxyd/proxy-core',
    '@proxyd/proxy-core/model',
    '@proxyd/proxyfile',
    '@proxyd/analytics',
    '@proxyd/admin-api',
    '@proxyd/cli',
  ],
};

async function sources(dir: string): Promise<string[]> {
  const entries = await readdir(dir, { withFileTypes: true, recursive: true });
  return entries.filter((e) => e.isFile() && e.name.endsWith('.ts')).map((e) => path.join(e.parentPath, e.name));
}

describe('package boundaries', () => {
  it('no package imports another package internals or escapes its own directory', async () => {
    const violations: string[] = [];
    for (const dir of dirs) {
      const pkgDir = path.join(root, dir);
      const { name, exports } = JSON.parse(await readFile(path.join(pkgDir, 'package.json'), 'utf8')) as {
        name: string;
        exports: Record<string, unknown>;
      };
      expect(Object.keys(exports)).toContain('.');
      for (const file of await sources(path.join(pkgDir, 'src'))) {
        const text = await readFile(file, 'utf8');
        for (const m of text.matchAll(/(?:from|import)\s*\(?\s*['"]([^'"]+)['"]/g)) {
          const spec = m[1] as string;
          const where = `${path.relative(root, file)}: ${spec}`;
          if (spec.startsWith('.')) {
            const target = path.resolve(path.dirname(file), spec);
            if (!target.startsWith(path.join(pkgDir, 'src'))) violations.push(`${where} leaves the package`);
          } else if (spec.startsWith('@proxyd/') && !(allowed[name] ?? []).includes(spec)) {
            violations.push(`${where} is not an allowed public entry for ${name}`);
          }
        }
      }
    }
    expect(violations).toEqual([]);
  });
});
