export { type Position, ProxyfileError, ProxyfileErrorCode } from './errors.js';
export { type ParseOptions, parse } from './parse.js';
