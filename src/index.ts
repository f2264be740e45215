/**
 * flower's public library API (`import { ... } from 'flower-agent'`).
 * Every symbol exported here is part of the documented surface; internals stay unexported.
 */
export { packageVersion } from './version.js';
