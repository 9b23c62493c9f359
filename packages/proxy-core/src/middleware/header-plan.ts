import type { IncomingMessage, OutgoingHttpHeaders } from 'node:http';
import type { HeaderOp } from '@proxyd/model';
import type { RequestContext } from '../hooks.js';
import { Template } from './placeholders.js';
import { matcherOf, type RequestMatch } from './request-matcher.js';

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
  /** The value's placeholders (null: `value` as is). */
  readonly template: Template | null;
  /** `header @name …`: the op applies only to requests it matches. */
  readonly match: RequestMatch | null;
}

const NO_MATCHERS: ReadonlyMap<string, RequestMatch> = new Map();

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
  /** Edit for plain-HTTP responses (static plans only: see {@link dynamic}). */
  readonly plain: HeaderEdit;
  /** Edit for HTTPS responses (static plans only). */
  readonly secure: HeaderEdit;
  /**
   * Whether an op depends on the request (a placeholder in its value, or
   * `header @name`): then {@link editFor} builds the edit per request and
   * precomputed answers apply it when sent. A static plan costs nothing per request.
   */
  readonly dynamic: boolean;
  readonly #plainSteps: readonly Step[];
  readonly #secureSteps: readonly Step[];

  /**
   * @param ops site ops followed by block ops, in the order they apply.
   * @param matchers the site's named matchers (`header @name …`).
   */
  constructor(ops: readonly HeaderOp[], matchers: ReadonlyMap<string, RequestMatch> = NO_MATCHERS) {
    this.#plainSteps = compileSteps(ops, false, matchers);
    this.#secureSteps = compileSteps(ops, true, matchers);
    this.dynamic = this.#plainSteps.some((step) => step.template !== null || step.match !== null);
    this.plain = compileEdit(this.#plainSteps);
    this.secure = compileEdit(this.#secureSteps);
  }

  /** The edit for a response on a TLS (`secure`) or plain connection (static plans only). */
  edit(secure: boolean): HeaderEdit {
    return secure ? this.secure : this.plain;
  }

  /** The edit for one request's response: the precompiled one for a static plan, else one built for it. */
  editFor(req: IncomingMessage, ctx: RequestContext): HeaderEdit {
    if (!this.dynamic) return ctx.secure ? this.secure : this.plain;
    const steps = ctx.secure ? this.#secureSteps : this.#plainSteps;
    return (headers) => runSteps(steps, headers, req, ctx);
  }
}

function compileSteps(ops: readonly HeaderOp[], secure: boolean, matchers: ReadonlyMap<string, RequestMatch>): Step[] {
  const fixed = { template: null, match: null };
  const defaults: Step[] = [
    { kind: 0, name: 'x-content-type-options', value: 'nosniff', ...fixed },
    { kind: 0, name: 'x-frame-options', value: DEFAULT_FRAME_OPTIONS, ...fixed },
  ];
  if (secure) defaults.push({ kind: 0, name: 'strict-transport-security', value: DEFAULT_HSTS, ...fixed });
  const steps: Step[] = [];
  for (const op of ops) {
    const name = op.name.toLowerCase();
    const kind = op.op === 'set' ? 1 : op.op === 'add' ? 2 : 3;
    const value = op.value ?? '';
    steps.push({
      kind,
      name,
      value,
      template: kind === 3 ? null : Template.of(value),
      match: matcherOf(matchers, op.matcher),
    });
  }
  // A default that an op always sets or deletes is dropped from the defaults (the op decides).
  const decided = new Set(steps.filter((s) => (s.kind === 1 || s.kind === 3) && s.match === null).map((s) => s.name));
  return [...defaults.filter((d) => !decided.has(d.name)), ...steps];
}

/** Runs the steps of a dynamic plan for one request: matchers decide, placeholders are filled. */
function runSteps(
  steps: readonly Step[],
  headers: OutgoingHttpHeaders,
  req: IncomingMessage,
  ctx: RequestContext,
): void {
  for (let i = 0; i < steps.length; i++) {
    const step = steps[i] as Step;
    if (step.match !== null && !step.match.matches(req, ctx)) continue;
    const value = step.template === null ? step.value : step.template.render(req, ctx);
    apply(headers, step, value);
  }
}

function apply(headers: OutgoingHttpHeaders, step: Step, value: string): void {
  switch (step.kind) {
    case 0:
      if (headers[step.name] === undefined) headers[step.name] = value;
      break;
    case 1:
      headers[step.name] = value;
      break;
    case 2: {
      const prev = headers[step.name];
      if (prev === undefined) headers[step.name] = value;
      else if (Array.isArray(prev)) headers[step.name] = [...prev, value];
      else headers[step.name] = [String(prev), value];
      break;
    }
    default:
      delete headers[step.name];
  }
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
