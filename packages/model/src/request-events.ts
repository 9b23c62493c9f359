/**
 * The key under which the data plane (proxy-core's `markRequest`) and the
 * analytics beacon mark what happened to a request on its response object:
 * `RequestEvent` bits, read into the request record when the response
 * closes. Defined once here, so analytics marks its beacons without
 * proxy-core's runtime; a registered symbol, so two copies of this module
 * (two installs of the package) still agree.
 */
export const REQUEST_EVENTS_KEY: unique symbol = Symbol.for('proxyd.requestEvents');
