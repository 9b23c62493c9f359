/**
 * Per-request slots the data plane keeps on Node's own objects (the server
 * response, the upstream request) instead of allocating closures. The
 * server's response class declares them up front so every response has one
 * hidden class.
 */
export const kExchange = Symbol('proxyd.exchange');
/** The pending request record of a response (see data-plane/request-record.ts). */
export const kRecord = Symbol('proxyd.record');
/**
 * Set on responses whose server already listens for 'close' once and calls
 * {@link ExchangeSlot.onResponseClose}: the forwarder then adds no listener
 * of its own.
 */
export const kCloseOwned = Symbol('proxyd.closeOwned');

/**
 * What a response's {@link kExchange} slot holds while a forwarder works on
 * it: the exchange itself, told when the response closes (a prototype
 * method, so the server's one 'close' listener reaches the right forwarder
 * without a module-level callback or a closure per request).
 */
export interface ExchangeSlot {
  /** The response closed: abort the upstream request if it had not finished, release the member. */
  onResponseClose(res: object): void;
}

/**
 * What the data plane did to a request, as `RequestEvent` bits set
 * on its response (`markRequest` in hooks.ts) and read into
 * `RequestRecord.events` when the response closes: the model's
 * `REQUEST_EVENTS_KEY`, under which `@proxyd/analytics` marks its beacons too.
 */
export { REQUEST_EVENTS_KEY as kEvents } from '@proxyd/model/rules';

/**
 * The captures of the regexp matchers (`path_regexp`, `header_regexp`) that
 * matched a request, on the request: name → the match (`''`: the last one),
 * read by `{re.<name>.<group>}` placeholders. Set only by sites whose
 * matchers use a regexp.
 */
export const kCaptures = Symbol('proxyd.regexpCaptures');

/**
 * The error a `handle_errors` block is answering, on the request (`status`,
 * proxyd's short `message`), read by `{err.*}` placeholders.
 */
export const kError = Symbol('proxyd.error');

/** What the {@link kError} slot holds. */
export interface ErrorSlot {
  readonly status: number;
  readonly message: string;
}
