/**
 * One token truth and handles that resolve, through the real CLI process: `compact --budget`
 * counts what `inspect` counts (calibrated to the agent's usage reports), and every handle a
 * summary quotes is archived under `--state` so `contextd recall` returns the originals.
 */
import { mkdtempSync, rmSync, writeFileSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { afterEach, describe, expect, it } from 'vitest';
import { runCli } from './spawn.js';

const dirs: string[] = [];
afterEach(() => {
  for (const d of dirs.splice(0)) rmSync(d, { recursive: true, force: true });
});
function temp(): string {
  const d = mkdtempSync(join(tmpdir(), 'contextd-truth-'));
  dirs.push(d);
  return d;
}

/**
 * A Claude Code session of `rounds` read-and-explain turns whose last assistant message
 * reports `reported` context tokens: far more than the transcript shows (the agent's system
 * prompt and tool definitions), as on real Claude sessions.
 */
function claudeSession(rounds: number, reported: number): string {
  const lines: Record<string, unknown>[] = [];
  let n = 0;
  const push = (l: Record<string, unknown>): void => {
    n++;
    lines.push({ ...l, uuid: `x${n}`, parentUuid: n === 1 ? null : `x${n - 1}`, sessionId: 'truth', cwd: '/w/app', isSidechain: false, timestamp: '2026-01-01T00:00:00.000Z' });
  };
  const assistant = (content: unknown[], usage?: Record<string, number>): void =>
    push({ type: 'assistant', message: { id: `msg_${n + 1}`, role: 'assistant', model: 'claude-x', content, stop_reason: null, ...(usage ? { usage } : {}) } });
  push({ type: 'user', message: { role: 'user', content: 'Walk through the storage modules one by one and explain what each does.' } });
  for (let r = 0; r < rounds; r++) {
    const body = Array.from({ length: 40 }, (_, i) => `export function store${r}_${i}(key: string): number { return key.length * ${r + i}; }`).join('\n');
    assistant([{ type: 'tool_use', id: `t${r}`, name: 'Read', input: { file_path: `/w/app/src/store/mod${r}.ts` } }]);
    push({ type: 'user', message: { role: 'user', content: [{ type: 'tool_result', tool_use_id: `t${r}`, content: body }] } });
    assistant([{ type: 'text', text: `Module ${r} maps keys to lengths times ${r}; nothing else depends on it.` }]);
  }
  assistant([{ type: 'text', text: 'That covers every module.' }], { input_tokens: 10, cache_read_input_tokens: reported - 10, output_tokens: 8 });
  push({ type: 'user', message: { role: 'user', content: 'Now summarize the storage layer in three sentences.' } });
  return lines.map((l) => JSON.stringify(l)).join('\n') + '\n';
}

describe('compact and inspect agree, and quoted handles resolve', () => {
  it('budgets against the calibrated count and archives originals for recall', async () => {
    const d = temp();
    const file = join(d, 'session.jsonl');
    writeFileSync(file, claudeSession(40, 60_000));
    const budget = 60_000;

    const inspected = await runCli(['inspect', file, '--json', '--budget', String(budget)]);
    expect(inspected.code).toBe(0);
    const report = JSON.parse(inspected.stdout) as { tokens: number; countedTokens: number; budget: { reserveRatio: number } };
    // the agent reports far more than the transcript shows: over the budget by inspect's count
    expect(report.tokens).toBeGreaterThan(report.countedTokens * 1.5);
    const target = Math.floor(budget * (1 - report.budget.reserveRatio));
    expect(report.tokens).toBeGreaterThan(target);
    // while the raw count alone would already "fit"
    expect(report.countedTokens).toBeLessThan(target);

    const state = join(d, 'state');
    const compacted = await runCli(['compact', file, '--budget', String(budget), '--json', '--state', state]);
    expect(compacted.stderr).toBe('');
    expect(compacted.code).toBe(0);
    const result = JSON.parse(compacted.stdout) as {
      tokensBefore: number;
      tokensAfter: number;
      budget: number;
      countedTokensBefore: number;
      countedTokensAfter: number;
      archived: number;
      edits: { handle?: string }[];
      messages: { content: string }[];
    };
    expect(result.tokensBefore).toBe(report.tokens);
    expect(result.countedTokensBefore).toBe(report.countedTokens);
    expect(result.budget).toBe(target);
    expect(result.edits.length).toBeGreaterThan(0);
    expect(result.tokensAfter).toBeLessThanOrEqual(target);

    // every handle quoted in the compacted context resolves through `contextd recall`
    const quoted = [...new Set(result.messages.flatMap((m) => [...m.content.matchAll(/\[contextd recall (h_[0-9a-f]{16})\]/g)].map((x) => x[1] as string)))];
    expect(quoted.length).toBeGreaterThan(0);
    expect(result.archived).toBe(result.edits.filter((e) => e.handle).length);
    for (const h of quoted) {
      const r = await runCli(['recall', h, '--state', state, '--json']);
      expect(r.code).toBe(0);
      const entry = JSON.parse(r.stdout) as { handle: string; messages: { text: string }[] };
      expect(entry.handle).toBe(h);
      expect(entry.messages.length).toBeGreaterThan(0);
    }
  });
});
