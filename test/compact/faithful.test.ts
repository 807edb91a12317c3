/**
 * Faithful tool summaries, on generated Claude Code, Codex and hermes (openai-chat)
 * transcripts read through the real adapters: distinct edits are not "redundant", an edit
 * keeps its gist, a command keeps its exit status and verdict, a success is never an error,
 * a failure keeps its assertion / exception line, nothing points "above", no section ids,
 * no path or value fragments, omitted images are noted with a recall handle.
 */
import { mkdtempSync, rmSync, writeFileSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { afterEach, describe, expect, it } from 'vitest';
import { planCompaction } from '../../src/compact/planner.js';
import { detectorContext } from '../../src/compact/planner.js';
import { redundantToolOutput } from '../../src/compact/detectors/redundant-tool-output.js';
import { verboseErrorTrace } from '../../src/compact/detectors/verbose-error-trace.js';
import type { Plan } from '../../src/compact/types.js';
import { readTranscriptFile } from '../../src/ingest/decoder.js';
import { SessionModel } from '../../src/model/index.js';

const dirs: string[] = [];
afterEach(() => {
  for (const d of dirs.splice(0)) rmSync(d, { recursive: true, force: true });
});

function writeJsonl(name: string, lines: unknown[]): string {
  const dir = mkdtempSync(join(tmpdir(), 'contextd-faithful-'));
  dirs.push(dir);
  const file = join(dir, name);
  writeFileSync(file, lines.map((l) => JSON.stringify(l)).join('\n') + '\n');
  return file;
}

async function modelOf(file: string): Promise<SessionModel> {
  const t = await readTranscriptFile(file);
  const model = new SessionModel({ sessionId: 'faithful', budgetTokens: 1_000_000 });
  model.applyAll(t.events);
  return model;
}

/** Plan down to `share` of the current tokens; every summary of the plan. */
async function summaries(model: SessionModel, share = 0.3): Promise<{ plan: Plan; texts: string[] }> {
  const plan = await planCompaction(model, { mode: 'manual', targetTokens: Math.floor(model.tokens() * share) });
  return { plan, texts: plan.edits.map((e) => e.summary.content) };
}

function expectNoInternalIds(texts: readonly string[]): void {
  for (const t of texts) {
    expect(t).not.toMatch(/\bs\d+\b/);
    expect(t).not.toMatch(/\bsections?\b/i);
    expect(t).not.toMatch(/see above|above for more details/i);
  }
}

// ---- Codex rollout --------------------------------------------------------------------
const ts = '2026-01-01T00:00:00.000Z';
const env = (type: string, payload: Record<string, unknown>) => ({ timestamp: ts, type, payload });
const codexUser = (text: string) => env('response_item', { type: 'message', role: 'user', content: [{ type: 'input_text', text }] });
const codexSay = (text: string) => env('response_item', { type: 'message', role: 'assistant', content: [{ type: 'output_text', text }] });
const codexShell = (id: string, script: string) => env('response_item', { type: 'function_call', name: 'shell', call_id: id, arguments: JSON.stringify({ command: ['bash', '-lc', script] }) });
const codexOut = (id: string, output: string, exit: number) =>
  env('response_item', { type: 'function_call_output', call_id: id, output: JSON.stringify({ output, metadata: { exit_code: exit, duration_seconds: 0.1 } }) });

function patch(i: number): string {
  return [
    "apply_patch <<'PATCH'",
    '*** Begin Patch',
    `*** Update File: src/parts/part${i}.ts`,
    `@@ export function handlePart${i}(input: string)`,
    `-  const limit${i} = ${i};`,
    `+  const limit${i} = ${i + 100};`,
    `+  const retryBudget${i} = computeRetry(limit${i});`,
    `   return process${i}(input, limit${i});`,
    '*** End Patch',
    'PATCH',
  ].join('\n');
}

const PASSING_VITEST = [
  '> app@1.0.0 test',
  '> vitest run',
  '',
  ' RUN  v4.0.1 /w/app',
  '',
  'stderr | src/logger.test.ts > logs failures',
  'error: undefined',
  'Error: simulated failure for the logger test',
  '    at Object.<anonymous> (/w/app/src/logger.test.ts:14:11)',
  '    at runTest (/w/app/node_modules/@vitest/runner/dist/index.js:781:11)',
  '    at runSuite (/w/app/node_modules/@vitest/runner/dist/index.js:909:15)',
  '    at runSuite (/w/app/node_modules/@vitest/runner/dist/index.js:909:15)',
  '    at runFiles (/w/app/node_modules/@vitest/runner/dist/index.js:958:5)',
  '    at startTests (/w/app/node_modules/@vitest/runner/dist/index.js:967:3)',
  '    at processTicksAndRejections (node:internal/process/task_queues:95:5)',
  '',
  ...Array.from({ length: 30 }, (_, i) => ` ✓ src/mod${i}.test.ts (8 tests) ${10 + i}ms`),
  '',
  ' Test Files  31 passed (31)',
  '      Tests  245 passed (245)',
  '   Start at  10:00:00',
  '   Duration  3.21s',
].join('\n');

const FAILING_VITEST = [
  '> app@1.0.0 test',
  '> vitest run',
  '',
  ...Array.from({ length: 20 }, (_, i) => ` ✓ src/mod${i}.test.ts (8 tests) ${10 + i}ms`),
  ' ❯ src/format.test.ts (3 tests | 1 failed) 12ms',
  '   × formats an empty cell as ??',
  '',
  ' FAIL  src/format.test.ts > formats an empty cell as ??',
  "AssertionError: expected '' to be '??' // Object.is equality",
  '',
  "- Expected: '??'",
  "+ Received: ''",
  '',
  ' ❯ src/format.test.ts:21:27',
  '     19|   it("formats an empty cell as ??", () => {',
  "     20|     const out = formatCell('');",
  "     21|     expect(out).toBe('??');",
  '',
  ' Test Files  1 failed | 20 passed (21)',
  '      Tests  1 failed | 167 passed (168)',
  ' ELIFECYCLE  Test failed. See above for more details.',
].join('\n');

function codexSession(): unknown[] {
  const lines: unknown[] = [env('session_meta', { id: 'codex-faithful', cwd: '/w/app' }), codexUser('Raise every part limit by 100 and add a retry budget, then run the tests.')];
  for (let i = 1; i <= 17; i++) {
    lines.push(codexSay(`Updating part ${i}.`), codexShell(`p${i}`, patch(i)), codexOut(`p${i}`, `Success. Updated the following files:\nM src/parts/part${i}.ts\n`, 0));
  }
  lines.push(codexShell('t1', 'npm test'), codexOut('t1', FAILING_VITEST, 1));
  lines.push(codexSay('One formatting test fails; fixing formatCell.'));
  lines.push(codexShell('t2', 'npm test'), codexOut('t2', PASSING_VITEST, 0));
  lines.push(codexSay('All tests pass now.'), codexUser('Good. Now document the retry budget in the README.'));
  return lines;
}

describe('faithful summaries of a Codex session', () => {
  it('does not call 17 distinct patches redundant because their outputs read alike', async () => {
    const model = await modelOf(writeJsonl('rollout.jsonl', codexSession()));
    const candidates = redundantToolOutput.detect(detectorContext(model));
    expect(candidates).toEqual([]);
  });

  it("keeps each edit's gist: file, hunk, lines added/removed, changed identifiers", async () => {
    const model = await modelOf(writeJsonl('rollout.jsonl', codexSession()));
    const { texts } = await summaries(model);
    const all = texts.join('\n');
    for (const i of [1, 9, 17]) {
      expect(all).toContain(`edited src/parts/part${i}.ts (+2 −1) at "export function handlePart${i}(input: string)"`);
      expect(all).toContain(`retryBudget${i}`);
    }
    expect(all).not.toContain('redundant-tool-output');
  });

  it('keeps the verdict of a passing run and never calls it an error', async () => {
    const model = await modelOf(writeJsonl('rollout.jsonl', codexSession()));
    expect(verboseErrorTrace.detect(detectorContext(model)).length).toBe(0);
    const { texts } = await summaries(model);
    const passing = texts.find((t) => t.includes('Tests 245 passed (245)'));
    expect(passing).toBeDefined();
    expect(passing).toContain('`npm test` → exit 0: Tests 245 passed (245)');
    expect(passing).not.toMatch(/error: undefined|verbose-error-trace/);
  });

  it("keeps a failing run's exit status, verdict and assertion, without 'see above'", async () => {
    const model = await modelOf(writeJsonl('rollout.jsonl', codexSession()));
    const { texts } = await summaries(model);
    const failing = texts.find((t) => t.includes("expected '' to be '??'"));
    expect(failing).toBeDefined();
    expect(failing).toContain('`npm test` failed (exit 1): Tests 1 failed | 167 passed (168)');
    expectNoInternalIds(texts);
  });
});

// ---- Claude Code session --------------------------------------------------------------
const S = 'claude-faithful';
let seq = 0;
function cu(content: unknown): Record<string, unknown> {
  seq++;
  return { type: 'user', uuid: `u${seq}`, parentUuid: seq > 1 ? `x${seq - 1}` : null, sessionId: S, cwd: '/w/app', isSidechain: false, timestamp: ts, message: { role: 'user', content } };
}
function ca(content: unknown[]): Record<string, unknown> {
  seq++;
  return {
    type: 'assistant',
    uuid: `a${seq}`,
    parentUuid: `x${seq - 1}`,
    sessionId: S,
    isSidechain: false,
    timestamp: ts,
    message: { id: `msg_${seq}`, role: 'assistant', model: 'claude-x', content, stop_reason: null, usage: { input_tokens: 1, output_tokens: 1 } },
  };
}
/** Link each line to the previous one (uuid chain), as Claude Code writes them. */
function chain(lines: Record<string, unknown>[]): Record<string, unknown>[] {
  return lines.map((l, i) => ({ ...l, uuid: `x${i + 1}`, parentUuid: i === 0 ? null : `x${i}` }));
}
const PNG = 'iVBORw0KGgo' + 'A'.repeat(4000);

function claudeSession(): Record<string, unknown>[] {
  seq = 0;
  const filler = Array.from({ length: 40 }, (_, i) => `row ${i}: value ${i * 7} of the sample table`).join('\n');
  return chain([
    cu('Make the lyrics page render the screenshot layout; keep the API unchanged.'),
    cu([
      { type: 'text', text: 'Here is how it looks now.' },
      { type: 'image', source: { type: 'base64', media_type: 'image/png', data: PNG } },
    ]),
    ca([{ type: 'text', text: 'I will check the parser: if parts.length === 3 the header is split, and text/lyrics content arrives from the X/Twitter embed.' }]),
    ca([{ type: 'tool_use', id: 'b1', name: 'Bash', input: { command: 'python3 tools/render.py --page lyrics' } }]),
    cu([
      {
        type: 'tool_result',
        tool_use_id: 'b1',
        is_error: true,
        content: `Traceback (most recent call last):\n  File "/w/app/tools/render.py", line 3, in <module>\n    from layout import grid\nImportError: cannot import name 'grid' from 'layout' (/w/app/layout/__init__.py)\n${filler}`,
      },
    ]),
    ca([{ type: 'tool_use', id: 'b2', name: 'mcp__browser__screenshot', input: { url: 'http://localhost:3000/lyrics' } }]),
    cu([
      {
        type: 'tool_result',
        tool_use_id: 'b2',
        content: [
          { type: 'text', text: `Screenshot of http://localhost:3000/lyrics\n${filler}` },
          { type: 'image', source: { type: 'base64', media_type: 'image/png', data: PNG } },
        ],
      },
    ]),
    ca([{ type: 'tool_use', id: 'e1', name: 'Edit', input: { file_path: '/w/app/src/lyrics.tsx', old_string: 'const cols = 2;\nrender(cols);', new_string: 'const cols = gridColumns(width);\nrender(cols);' } }]),
    cu([{ type: 'tool_result', tool_use_id: 'e1', content: `The file /w/app/src/lyrics.tsx has been updated.\n${filler}` }]),
    ca([{ type: 'text', text: 'The page now uses gridColumns.' }]),
    cu('Thanks. Now add a test for gridColumns.'),
  ]);
}

describe('faithful summaries of a Claude Code session', () => {
  it('keeps the ImportError line of a failed Python run', async () => {
    const model = await modelOf(writeJsonl('s.jsonl', claudeSession()));
    // A budget tight enough that the failed run itself is summarized (at 30% the chat runs
    // around it are compacted first and the trace stays verbatim).
    const { texts } = await summaries(model, 0.12);
    const all = texts.join('\n');
    expect(all).toMatch(/render\.py|python/);
    expect(all).toContain("ImportError: cannot import name 'grid' from 'layout'");
    expect(all).not.toMatch(/render\.py[^\n]*→ exit 0/);
  });

  it('notes omitted images with a recall handle', async () => {
    const model = await modelOf(writeJsonl('s.jsonl', claudeSession()));
    const { plan } = await summaries(model, 0.3);
    const withImage = plan.edits.filter((e) => /\[(?:\d+ images|image) omitted — recall h_[0-9a-f]{16}\]/.test(e.summary.content));
    expect(withImage.length).toBeGreaterThan(0);
    for (const e of withImage) expect(e.summary.content).toContain(`recall ${e.handle}]`);
  });

  it('lists whole paths and values only, and no internal ids', async () => {
    const model = await modelOf(writeJsonl('s.jsonl', claudeSession()));
    const { texts } = await summaries(model, 0.3);
    const all = texts.join('\n');
    expect(all).toContain('edited /w/app/src/lyrics.tsx (+1 −1)');
    expect(all).toContain('gridColumns');
    for (const line of all.split('\n').filter((l) => /^(?:Paths|Values):|^- /.test(l))) {
      expect(line).not.toMatch(/parts\.length ===|(?<![\w/])text\/lyrics|X\/Twitter/);
    }
    expectNoInternalIds(texts);
  });
});

// ---- hermes (openai-chat) -------------------------------------------------------------
describe('faithful summaries of a hermes session', () => {
  it('keeps the ImportError inside a JSON tool result', async () => {
    const err = { status: 'error', output: '', error: `Traceback (most recent call last):\n  File "<code>", line 1, in <module>\nImportError: No module named 'pandas'`, exit_code: 1 };
    const big = Array.from({ length: 60 }, (_, i) => `line ${i} of the notes`).join('\n');
    const file = writeJsonl('h.jsonl', [
      { role: 'system', content: 'You are hermes.' },
      { role: 'user', content: 'Summarize the sales sheet.' },
      { role: 'assistant', content: '', tool_calls: [{ id: 'c1', type: 'function', function: { name: 'execute_code', arguments: JSON.stringify({ code: `import pandas\n# ${big}` }) } }] },
      { role: 'tool', tool_call_id: 'c1', name: 'execute_code', content: JSON.stringify(err) },
      { role: 'assistant', content: `pandas is missing; I will parse the CSV by hand.\n${big}` },
      { role: 'user', content: 'ok, and chart it' },
    ]);
    const model = await modelOf(file);
    const { texts } = await summaries(model, 0.3);
    const all = texts.join('\n');
    expect(all).toContain("ImportError: No module named 'pandas'");
    expect(all).toContain('failed (exit 1)');
  });
});
