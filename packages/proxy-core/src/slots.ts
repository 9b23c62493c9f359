/**
 * Per-request slots the data plane keeps on Node's own objects (the server
 * response, the upstream request) instead of allocating closures. The
 * server's response class declares them up front so every response has one
 * hidden class.
 */
export const kExchange = Symbol('proxyd.exchange');
/** The pending request record of a response (see proxy-server.ts). */
export const kRecord = Symbol('proxyd.record');
/**
 * Set on responses whose server already listens for 'close' once and calls
 * {@link closeSlot}: the forwarder then adds no listener of its own.
 */
export const kCloseOwned = Symbol('proxyd.closeOwned');
/** The forwarder's close handler for a response's exchange (set by the forwarder module). */
export const closeSlot: { onClose: ((res: object) => void) | null } = { onClose: null };
