/**
 * Child process for store-spill-unwritable.test.ts (plain Node importing the built `dist/`, since
 * Node 20 cannot run TypeScript): appends three large tool results one per call through the
 * rewriting layer (trim on, nothing kept verbatim) over the SDK's InMemorySessionStore, resumes
 * twice, and prints what happened as one JSON line. The test runs it where the spill directory
 * cannot be written.
 */
import { readdirSync } from 'node:fs';
import path from 'node:path';
import { InMemorySessionStore } from '@anthropic-ai/claude-agent-sdk';
import { RewritingSessionStore } from '../../dist/store/rewriting-store.js';

const [workspace] = process.argv.slice(2);
const warnings = [];
const store = new RewritingSessionStore(new InMemorySessionStore(), {
  workspace,
  trim: { enabled: true, keepRecent: 0 },
  onWarning: (line) => warnings.push(line),
});
const key = { projectKey: '-child', sessionId: 'unwritable' };
const texts = ['x', 'y', 'z'].map((letter) => letter.repeat(4000));
let parentUuid = null;
for (const [index, text] of texts.entries()) {
  const use = {
    type: 'assistant',
    uuid: `use-${index}`,
    parentUuid,
    message: {
      role: 'assistant',
      content: [{ type: 'tool_use', id: `toolu-${index}`, name: 'Read', input: { file_path: `f${index}` } }],
    },
  };
  const result = {
    type: 'user',
    uuid: `result-${index}`,
    parentUuid: use.uuid,
    message: {
      role: 'user',
      content: [{ type: 'tool_result', tool_use_id: `toolu-${index}`, content: text }],
    },
  };
  await store.append(key, [use]);
  await store.append(key, [result]);
  parentUuid = result.uuid;
}
const loaded = await store.load(key);
await store.load(key);
const results = loaded
  .flatMap((entry) => (Array.isArray(entry.message?.content) ? entry.message.content : []))
  .filter((block) => block.type === 'tool_result')
  .map((block) => block.content);
let files;
try {
  files = readdirSync(path.join(workspace, '.flower', 'spill'));
} catch (error) {
  files = error.code;
}
console.log(
  JSON.stringify({
    warnings,
    report: store.lastLoadReport(key),
    untrimmed: results.length === texts.length && results.every((content, index) => content === texts[index]),
    files,
  }),
);
