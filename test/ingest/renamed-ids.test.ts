/**
 * An openai-chat transcript re-exported under other tool call ids (`call_…` → `toolu_exp_…`)
 * with a blank first line keeps every tool result's tool name, read whole or tailed.
 * (Reported by a review as losing toolName; not reproduced here — this pins that it does not.)
 */
import { mkdtempSync, rmSync, writeFileSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { afterEach, describe, expect, it } from 'vitest';
import { readTranscriptFile, Tailer } from '../../src/ingest/index.js';
import type { Message } from '../../src/model/messages.js';
import { generateTranscript } from '../fixtures/transcripts.js';
import { messages } from './helpers.js';
import { Recorder } from './tailer-helpers.js';

const dirs: string[] = [];
const tailers: Tailer[] = [];
afterEach(async () => {
  await Promise.all(tailers.splice(0).map((t) => t.close()));
  for (const d of dirs.splice(0)) rmSync(d, { recursive: true, force: true });
});

function reexported(): { path: string; calls: number; names: string[] } {
  const dir = mkdtempSync(join(tmpdir(), 'contextd-renamed-'));
  dirs.push(dir);
  const t = generateTranscript('openai-chat', { seed: 2, turns: 3 });
  const jsonl = t.jsonl.replaceAll('"call_', '"toolu_exp_');
  expect(jsonl).not.toContain('"call_');
  const path = join(dir, t.fileName);
  writeFileSync(path, `\n${jsonl}`);
  expect(t.facts.toolCalls).toBeGreaterThan(0);
  const names = jsonl
    .split('\n')
    .filter((l) => l.length > 0)
    .flatMap((l) => (JSON.parse(l) as { tool_calls?: { function: { name: string } }[] }).tool_calls?.map((c) => c.function.name) ?? []);
  return { path, calls: t.facts.toolCalls, names };
}

const toolResults = (list: readonly Message[]) => list.filter((m) => m.role === 'tool');

describe('openai-chat tool results under renamed call ids after a blank first line', () => {
  it('read whole: every result is paired with its call and named', async () => {
    const { path, calls, names } = reexported();
    const r = await readTranscriptFile(path);
    expect(r.format).toBe('openai-chat');
    const results = toolResults(messages(r.events));
    expect(results).toHaveLength(calls);
    expect(names).toHaveLength(calls);
    expect(results.every((m) => m.toolCallId?.startsWith('toolu_exp_'))).toBe(true);
    expect(results.map((m) => m.toolName)).toEqual(names);
  });

  it('tailed: the same names', async () => {
    const { path, calls, names } = reexported();
    const tailer = new Tailer({ paths: [path], recheckMs: 40 });
    tailers.push(tailer);
    const rec = new Recorder(tailer);
    await tailer.start();
    await rec.until(() => toolResults(rec.model(path)).length >= calls, 'every tool result');
    expect(toolResults(rec.model(path)).map((m) => m.toolName)).toEqual(names);
  });
});
