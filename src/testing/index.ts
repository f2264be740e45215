/**
 * `flower-agent/testing`: the scripted Messages API server (the mock model) and its script format.
 *
 * Public API (others code against it; keep it stable):
 * - `startMockModel(script?, options?) → Promise<MockModel>`: listens on 127.0.0.1, random port.
 *   `MockModel` has `url` (for ANTHROPIC_BASE_URL), `port`, `requests` (every request, recorded),
 *   `unmatched`, `setScript()`, `injectFaults()`, `setDelay()`, `refuseConnectionsFor(ms)`,
 *   `messageRequests()`, `mainRequests()`, `agentRequests(name)`, `sideRequests()`,
 *   `lastRequest()`, `waitForRequest()`, `close()`.
 * - The script format (`MockScript`, `MockStep`, `MockReply`, `MockFault`, …) and `mock.*`
 *   shorthands (`text`, `toolUse`, `error`, `drop`, `refuse`, `modelNotFound`).
 * - `mockModelEnv(model, { configDir, maxRetries })`: the child-process environment for the binary.
 * - Request helpers for assertions: `systemText`, `messageText`, `lastUserText`, `contentText`,
 *   `toolResults`; routing: `identifyAgent`.
 * What the binary sends and how it retries is written down in src/testing/README.md, which the
 * package ships (node_modules/flower-agent/src/testing/README.md; src/ holds nothing else).
 */
export { type MockModelEnvOptions, mockModelEnv } from './env.js';
export { AGENT_ID_HEADER, type Delegation, type IdentifyInput, identifyAgent } from './identify.js';
export * from './recording.js';
export * from './script.js';
export { type MockModel, type MockModelOptions, startMockModel } from './server.js';
