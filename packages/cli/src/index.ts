export { AdminClient, type AdminClientOptions, type AdminResponse, errorMessage } from './client.js';
export {
  buildProgram,
  type DaemonCommands,
  type RunOptions,
  type TrustCommandOptions,
  type TrustCommandReport,
  type TrustCommands,
} from './program.js';
