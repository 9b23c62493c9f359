/** Real peers the tests bring up on loopback. See README.md. */
export {
  acmeGlobal,
  freePort,
  type Pebble,
  type PebbleOptions,
  preparePebble,
  type StartedPebble,
  startPebble,
} from './pebble.js';
