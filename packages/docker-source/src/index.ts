export {
  type DiscoveryStatus,
  type DockerDiscovery,
  type DockerDiscoveryOptions,
  startDockerDiscovery,
} from './discovery.js';
export { DockerErrorCode, DockerSourceError } from './errors.js';
export {
  type ContainerMember,
  containerMember,
  HEADER_LABEL_PREFIX,
  hasProxyLabels,
  KNOWN_LABELS,
  LABEL_PREFIX,
  type MemberContext,
  type MemberResult,
  nearestLabel,
  type SiteSettings,
} from './labels.js';
export { chooseAddress, type NetworkChoice, type NetworkChoiceInput, type NetworkRule } from './network.js';
export { DOCKER_SOURCE_TAG, inRotation, type PoolRoute, poolRoute } from './pools.js';
// The client itself is not exported: the discovery loads it only when a runtime answers.
export type { DockerodeRuntimeOptions } from './runtime/dockerode-runtime.js';
export { DEFAULT_MAX_LINE_BYTES, LineSplitter, type SplitLines } from './runtime/event-lines.js';
export { parseEvent } from './runtime/events.js';
export {
  detectOwnNetworks,
  type OwnContainerClues,
  ownContainerCandidates,
  readOwnContainerClues,
} from './runtime/own-container.js';
export type {
  ContainerHealth,
  ContainerInfo,
  ContainerNetwork,
  ContainerRuntime,
  ContainerSummary,
  EventStream,
  RuntimeEvent,
  RuntimeVersion,
} from './runtime/runtime.js';
export {
  type DockerHost,
  defaultSockets,
  formatDockerHost,
  parseDockerHost,
  pingSocket,
  type ResolveDockerHostOptions,
  type ResolvedDockerHost,
  resolveDockerHost,
} from './runtime/socket.js';
export type { ContainerRef, LabelWarning } from './warnings.js';
export {
  DOCKER_LOG_TARGET,
  type DockerLogger,
  DockerSource,
  type DockerSourceOptions,
  type DockerSourceStatus,
} from './watcher.js';
