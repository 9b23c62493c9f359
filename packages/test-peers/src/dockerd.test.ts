import { describeContainerRuntime } from './container-runtime.test-helpers.js';
import { startDockerd } from './dockerd.js';

describeContainerRuntime('dockerd', () => startDockerd());
