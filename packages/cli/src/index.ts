export { AdminClient, type AdminClientOptions, type AdminResponse, errorMessage } from './client.js';
export { buildProgram, type DaemonCommands, type RunOptions } from './program.js';
