export { Channel, ChannelError, type Handler, type IpcEndpoint } from './channel.js';
export { connectToPrimary, type WorkerHandlers } from './worker.js';
export { DRAIN, INIT, WorkerPool, type WorkerPoolOptions } from './worker-pool.js';
