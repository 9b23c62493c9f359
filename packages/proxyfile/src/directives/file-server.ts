import type { Directive } from './directive.js';

/**
 * ```
 * root [*] <dir>
 * file_server [{
 *     root <dir>
 * }]
 * ```
 * Serves static files from `<dir>`: `root` names the directory, `file_server`
 * makes it the block's handler. One without the other is an error.
 */
export const root: Directive = {
  name: 'root',
  scope: 'any',
  once: true,
  parse(d, state) {
    let t = d.arg('a directory');
    if (t.text === '*' && d.peekArg() !== null) t = d.arg('a directory');
    d.nonEmpty(t, 'a directory');
    d.end();
    d.noBlock();
    state.root = { dir: t.text, at: d.name };
  },
};

/** See {@link root}. */
export const fileServer: Directive = {
  name: 'file_server',
  scope: 'any',
  once: true,
  parse(d, state) {
    d.end();
    for (const sub of d.blockLines()) {
      if (sub.name.text !== 'root') throw sub.unexpected(sub.name, 'a file_server option (root)');
      const t = sub.nonEmptyArg('a directory');
      sub.end();
      sub.noBlock();
      if (state.root !== null) {
        throw sub.unexpected(
          sub.name,
          `one root per block (root is already set at ${state.root.at.file}:${state.root.at.line}:${state.root.at.column})`,
        );
      }
      state.root = { dir: t.text, at: sub.name };
    }
    state.fileServerAt = d.name;
  },
};
