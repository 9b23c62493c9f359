import {
  ENCODE_DEFAULT_ENCODINGS,
  ENCODE_DEFAULT_MINIMUM_LENGTH,
  type EncodeConfig,
  type Encoding,
} from '@proxyd/model';
import type { Dispenser } from '../dispenser.js';
import { ProxyfileErrorCode } from '../errors.js';
import { show, type Token } from '../lexer.js';
import { parseSize } from '../values.js';
import type { Directive } from './directive.js';

const CODINGS: readonly string[] = ['zstd', 'br', 'gzip'];
const EXPECTED_CODING = 'an encoding: zstd, br or gzip';

/**
 * ```
 * encode [zstd] [br] [gzip] [{
 *     zstd | br | gzip              # also as lines of the block (Caddy's form)
 *     minimum_length <bytes>        # smallest body compressed; default 512
 * }]
 * ```
 * Compresses the site's responses, negotiated from `Accept-Encoding`;
 * the encodings in the server's preference order (for equal client
 * `q`). No encoding named: `zstd gzip` (Caddy's default). Site-wide only:
 * the step wraps every response of the site (proxy-core README "`encode`").
 */
export const encode: Directive = {
  name: 'encode',
  scope: 'site',
  once: true,
  parse(d, state) {
    const encodings: Encoding[] = [];
    const add = (line: Dispenser, t: Token) => {
      if (!CODINGS.includes(t.text)) throw line.unexpected(t, EXPECTED_CODING, ProxyfileErrorCode.INVALID_VALUE);
      const coding = t.text as Encoding;
      if (encodings.includes(coding)) {
        throw line.error(t, ProxyfileErrorCode.DUPLICATE_DIRECTIVE, `encoding "${coding}" is named twice`);
      }
      encodings.push(coding);
    };
    for (const t of d.remainingArgs()) add(d, t);
    const config: EncodeConfig = { encodings, minimum_length: ENCODE_DEFAULT_MINIMUM_LENGTH };
    let minimumSeen = false;
    for (const sub of d.blockLines()) {
      const name = sub.name;
      if (name.text === 'minimum_length') {
        if (minimumSeen) throw sub.error(name, ProxyfileErrorCode.DUPLICATE_DIRECTIVE, '"minimum_length" is set twice');
        minimumSeen = true;
        const t = sub.arg('a size in bytes, such as 512 or 1KiB');
        const bytes = parseSize(t.text);
        if (bytes === null)
          throw sub.unexpected(t, 'a size in bytes, such as 512 or 1KiB', ProxyfileErrorCode.INVALID_VALUE);
        config.minimum_length = bytes;
      } else if (CODINGS.includes(name.text)) {
        add(sub, name);
      } else {
        throw sub.error(
          name,
          ProxyfileErrorCode.UNKNOWN_DIRECTIVE,
          `unexpected ${show(name)}, expected an encode option (zstd, br, gzip, minimum_length)`,
        );
      }
      sub.end();
      sub.noBlock();
    }
    if (encodings.length === 0) encodings.push(...ENCODE_DEFAULT_ENCODINGS);
    state.site.encode = config;
  },
};
