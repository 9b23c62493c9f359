export { buildProgram, type DaemonCommands, type RunOptions } from './program.js';
