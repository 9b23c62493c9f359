export { AdminClient, type AdminClientOptions, type AdminResponse, errorMessage } from './client.js';
export { type DemoDaemon, type DemoDaemonOptions, demoProxyfile, runDemo } from './commands/demo.js';
export type { BuildInfo } from './commands/version.js';
export { type ConfigPath, type ConfigSource, DEFAULT_PROXYFILE, resolveConfigPath } from './config-path.js';
export { EXIT_FAILURE, EXIT_USAGE, errorLine, exitCodeOf, PRIVILEGED_PORT_HINT, UsageError } from './errors.js';
export {
  buildProgram,
  type DaemonCommands,
  isReported,
  type ProgramOptions,
  type RunOptions,
  type TrustCommandOptions,
  type TrustCommandReport,
  type TrustCommands,
} from './program.js';
