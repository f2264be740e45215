/**
 * `flower-agent/testing`: the scripted Messages API server (the mock model) and its script format.
 */
export {};
