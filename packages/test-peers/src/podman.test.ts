import { describeContainerRuntime } from './container-runtime.test-helpers.js';
import { startPodman } from './podman.js';

describeContainerRuntime('podman', () => startPodman());
