/**
 * `flower-agent/testing`: the scripted Messages API server (the mock model) and its script format.
 */

export { type MockModelEnvOptions, mockModelEnv } from './env.js';
export { type IdentifyInput, identifyAgent } from './identify.js';
export * from './recording.js';
export * from './script.js';
export { type MockModel, type MockModelOptions, startMockModel } from './server.js';
