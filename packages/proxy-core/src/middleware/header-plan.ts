import type { OutgoingHttpHeaders } from 'node:http';
import type { HeaderOp } from '../model/index.js';

/** `X-Frame-Options` value proxyd sends by default (framing by the same origin only). */
export const DEFAULT_FRAME_OPTIONS = 'SAMEORIGIN';
/** `Strict-Transport-Security` value proxyd sends on HTTPS responses by default (one year). */
export const DEFAULT_HSTS = 'max-age=31536000';

/** One compiled step: 0 = set if absent (a default), 1 = set, 2 = add, 3 = delete. */
interface Step {
  readonly kind: 0 | 1 | 2 | 3;
  /** Lowercase header name. */
  readonly name: string;
  readonly value: string;
}

/** Edits a response's headers in place (the `ForwardOptions.editResponseHeaders` shape). */
export type HeaderEdit = (headers: OutgoingHttpHeaders, status: number) => void;

/**
 * The response headers of one block, compiled once: the default security
 * headers, then the site's `header` ops, then the `handle` block's own ops.
 * Two precompiled edits, for plain HTTP and for HTTPS responses (HSTS only on
 * the latter); each runs a fixed step list with no allocation.
 *
 * Semantics: a default is written only when the response (e.g. the upstream)
 * has not set that header itself; `set` replaces, `add` appends a value,
 * `delete` removes the header, a default included.
 */
export class HeaderPlan {
  /** Edit for plain-HTTP responses. */
  readonly plain: HeaderEdit;
  /** Edit for HTTPS responses. */
  readonly secure: HeaderEdit;

  /** @param ops site ops followed by block ops, in the order they apply. */
  constructor(ops: readonly HeaderOp[]) {
    this.plain = compileEdit(compileSteps(ops, false));
    this.secure = compileEdit(compileSteps(ops, true));
  }

  /** The edit for a response on a TLS (`secure`) or plain connection. */
  edit(secure: boolean): HeaderEdit {
    return secure ? this.secure : this.plain;
  }
}

function compileSteps(ops: readonly HeaderOp[], secure: boolean): Step[] {
  const defaults: Step[] = [
    { kind: 0, name: 'x-content-type-options', value: 'nosniff' },
    { kind: 0, name: 'x-frame-options', value: DEFAULT_FRAME_OPTIONS },
  ];
  if (secure) defaults.push({ kind: 0, name: 'strict-transport-security', value: DEFAULT_HSTS });
  const steps: Step[] = [];
  for (const op of ops) {
    const name = op.name.toLowerCase();
    const kind = op.op === 'set' ? 1 : op.op === 'add' ? 2 : 3;
    steps.push({ kind, name, value: op.value ?? '' });
  }
  // A default that an op sets or deletes is dropped from the defaults (the op decides).
  const decided = new Set(steps.filter((s) => s.kind === 1 || s.kind === 3).map((s) => s.name));
  return [...defaults.filter((d) => !decided.has(d.name)), ...steps];
}

function compileEdit(steps: readonly Step[]): HeaderEdit {
  return (headers) => {
    for (let i = 0; i < steps.length; i++) {
      const step = steps[i] as Step;
      switch (step.kind) {
        case 0:
          if (headers[step.name] === undefined) headers[step.name] = step.value;
          break;
        case 1:
          headers[step.name] = step.value;
          break;
        case 2: {
          const prev = headers[step.name];
          if (prev === undefined) headers[step.name] = step.value;
          else if (Array.isArray(prev)) headers[step.name] = [...prev, step.value];
          else headers[step.name] = [String(prev), step.value];
          break;
        }
        default:
          delete headers[step.name];
      }
    }
  };
}
