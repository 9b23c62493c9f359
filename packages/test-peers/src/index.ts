/** Real peers the tests bring up on loopback. See README.md. */
export { type BindOptions, type BindZone, type StartedBind, startBind } from './bind.js';
export { BUSYBOX_IMAGE } from './busybox-image.js';
export {
  type ContainerInspect,
  type ContainerRuntime,
  type HealthcheckOptions,
  httpGet,
  type RunOptions,
  type TestContainer,
  type TestNetwork,
} from './container-runtime.js';
export { type DockerdOptions, startDockerd } from './dockerd.js';
export {
  type EngineApi,
  EngineApiError,
  type EngineEvent,
  type EngineResponse,
  type EventWatch,
} from './engine-api.js';
export { createFleetNetwork, type FleetNetwork, type NodeNamespace } from './netns.js';
export {
  acmeGlobal,
  freePort,
  type Pebble,
  type PebbleOptions,
  preparePebble,
  type StartedPebble,
  startPebble,
} from './pebble.js';
export { type PodmanOptions, type PodmanRuntime, startPodman } from './podman.js';
export {
  type RedisOptions,
  type SentinelOptions,
  type StartedRedis,
  startRedis,
  startSentinel,
} from './redis.js';
