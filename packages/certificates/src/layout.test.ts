import { readdirSync, readFileSync } from 'node:fs';
import path from 'node:path';
import { fileURLToPath } from 'node:url';
import { describe, expect, it } from 'vitest';

/**
 * Issue 29: the package keeps one concern per file, as certmagic does (a
 * file per phase): no source file over 600 lines, and no import cycle that
 * survives compilation (`import type` and `export type` are erased, so a
 * cycle through them is fine; `import { type A }` is not erased under
 * `verbatimModuleSyntax`, so it counts).
 */

const SRC = path.dirname(fileURLToPath(import.meta.url));
const MAX_LINES = 600;

function sources(dir: string): string[] {
  const out: string[] = [];
  for (const item of readdirSync(dir, { withFileTypes: true })) {
    const full = path.join(dir, item.name);
    if (item.isDirectory()) out.push(...sources(full));
    else if (item.name.endsWith('.ts') && !/\.test(-helpers)?\.ts$/.test(item.name)) out.push(full);
  }
  return out.sort();
}

/** Relative modules `file` imports or re-exports at run time (not `import type` / `export type`). */
function runtimeImports(file: string): string[] {
  const text = readFileSync(file, 'utf8');
  const statement =
    /^\s*(?:import|export)\s+(type\s+)?(?:(?:\{[^}]*\}|\*(?:\s+as\s+\w+)?|\w+(?:\s*,\s*\{[^}]*\})?)\s+from\s+)?['"](\.[^'"]+)['"]/gm;
  const out: string[] = [];
  for (const match of text.matchAll(statement)) {
    if (match[1] !== undefined) continue;
    const target = path.resolve(path.dirname(file), (match[2] as string).replace(/\.js$/, '.ts'));
    out.push(target);
  }
  return out;
}

/** The cycles of the graph: each strongly connected component of more than one file (or a file importing itself). */
function cycles(graph: Map<string, string[]>): string[][] {
  let index = 0;
  const indices = new Map<string, number>();
  const low = new Map<string, number>();
  const stack: string[] = [];
  const onStack = new Set<string>();
  const found: string[][] = [];
  const visit = (node: string): void => {
    indices.set(node, index);
    low.set(node, index);
    index += 1;
    stack.push(node);
    onStack.add(node);
    for (const next of graph.get(node) ?? []) {
      if (!graph.has(next)) continue;
      if (!indices.has(next)) {
        visit(next);
        low.set(node, Math.min(low.get(node) as number, low.get(next) as number));
      } else if (onStack.has(next)) {
        low.set(node, Math.min(low.get(node) as number, indices.get(next) as number));
      }
    }
    if (low.get(node) !== indices.get(node)) return;
    const component: string[] = [];
    let member: string;
    do {
      member = stack.pop() as string;
      onStack.delete(member);
      component.push(member);
    } while (member !== node);
    if (component.length > 1 || (graph.get(node) ?? []).includes(node)) found.push(component.sort());
  };
  for (const node of graph.keys()) if (!indices.has(node)) visit(node);
  return found;
}

describe('package layout (issue 29)', () => {
  const files = sources(SRC);
  const relative = (file: string) => path.relative(SRC, file);

  it(`has no source file over ${MAX_LINES} lines`, () => {
    const long = files
      .map((file) => ({ file: relative(file), lines: readFileSync(file, 'utf8').split('\n').length - 1 }))
      .filter((f) => f.lines > MAX_LINES);
    expect(long).toEqual([]);
  });

  it('has no import cycle other than through type-only imports', () => {
    const graph = new Map(files.map((file) => [file, runtimeImports(file)]));
    expect(cycles(graph).map((cycle) => cycle.map(relative))).toEqual([]);
  });

  it('reads the imports it checks (a cycle through a value import is found)', () => {
    const manager = path.join(SRC, 'manager', 'certificate-manager.ts');
    const maintain = path.join(SRC, 'manager', 'maintain.ts');
    expect(runtimeImports(manager)).toContain(maintain);
    expect(
      cycles(
        new Map([
          [manager, [maintain]],
          [maintain, [manager]],
        ]),
      ).length,
    ).toBe(1);
  });
});
