import { ProxyfileErrorCode } from '../errors.js';
import { readMatcherRef } from '../matchers.js';
import { checkPlaceholders } from '../placeholders.js';
import { nearest } from '../suggest.js';
import type { Directive } from './directive.js';

const STATUS = /^=([45]\d\d)$/;

/**
 * ```
 * try_files [@name] <file>... [=<status>] {
 *     policy first_exist                # the only policy (Caddy's default)
 * }
 * ```
 * Rewrites the request to the first candidate that exists below the
 * block's `root`: a candidate ending in `/` must be a directory, others a
 * file; request placeholders are filled (`try_files {path} {path}/
 * /index.html` serves a single-page app). When none exists the request
 * goes on unchanged, or, after a final `=<status>`, is answered with that
 * status as an error (`handle_errors` applies). Once per block, which
 * needs `root`.
 */
export const tryFiles: Directive = {
  name: 'try_files',
  scope: 'any',
  once: true,
  parse(d, state) {
    const matcher = readMatcherRef(d, state.matchers);
    const args = d.remainingArgs();
    if (args.length === 0) throw d.missing('the files to try, such as {path} /index.html');
    let status: number | null = null;
    const files: string[] = [];
    args.forEach((t, i) => {
      const m = STATUS.exec(t.text);
      if (m !== null) {
        if (i !== args.length - 1) throw d.unexpected(args[i + 1] ?? t, 'the end of the line after =<status>');
        if (files.length === 0) throw d.unexpected(t, 'a file to try before =<status>');
        status = Number(m[1]);
        return;
      }
      if (t.text.startsWith('=')) {
        throw d.unexpected(t, 'a status from 400 to 599 after = (e.g. =404)', ProxyfileErrorCode.INVALID_VALUE);
      }
      d.nonEmpty(t, 'a file to try');
      checkPlaceholders(t, 'a try_files candidate');
      files.push(t.text);
    });
    for (const sub of d.blockLines()) {
      if (sub.name.text !== 'policy') {
        const near = nearest(sub.name.text, ['policy']);
        throw sub.unexpected(
          sub.name,
          `a try_files option${near ? ' (did you mean "policy"?)' : ''}: policy`,
          ProxyfileErrorCode.UNKNOWN_DIRECTIVE,
        );
      }
      const p = sub.arg('a policy: first_exist');
      if (p.text !== 'first_exist') {
        throw sub.unexpected(
          p,
          "first_exist (proxyd tries the files in order; Caddy's size and modification policies are not supported)",
          ProxyfileErrorCode.INVALID_VALUE,
        );
      }
      sub.end();
    }
    // The root is the block's, known once the whole block is read (compile.ts).
    state.target.try_files = { files, root: '.', status, ...(matcher === null ? {} : { matcher }) };
    state.tryFilesAt = d.name;
  },
};
