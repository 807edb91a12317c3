/**
 * A summary says a command edited a file only when it did: quoted code holding a `>`
 * (`python -c '… n >= 0'`, `node -e "if (a > b) …"`) is no redirect to a file named `=` or
 * `b)`. A Claude Code transcript is written, read through the real adapter, and planned.
 */
import { mkdtempSync, rmSync, writeFileSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { afterEach, describe, expect, it } from 'vitest';
import { planCompaction } from '../../src/compact/planner.js';
import { readTranscriptFile } from '../../src/ingest/decoder.js';
import { SessionModel } from '../../src/model/index.js';

const dirs: string[] = [];
afterEach(() => {
  for (const d of dirs.splice(0)) rmSync(d, { recursive: true, force: true });
});

const S = 'shell-writes-truth';
const ts = '2026-01-01T00:00:00.000Z';
let seq = 0;
function line(type: 'user' | 'assistant', content: unknown): Record<string, unknown> {
  seq++;
  const message =
    type === 'user'
      ? { role: 'user', content }
      : { id: `msg_${seq}`, role: 'assistant', model: 'claude-x', content, stop_reason: null, usage: { input_tokens: 1, output_tokens: 1 } };
  return { type, uuid: `x${seq}`, parentUuid: seq > 1 ? `x${seq - 1}` : null, sessionId: S, cwd: '/w/app', isSidechain: false, timestamp: ts, message };
}

const COMMANDS = [
  "python -c 'import billing; n = billing.rate(); assert n >= 0, n'",
  'node -e "const [a, b] = [3, 2]; if (a > b) console.log(a)"',
  "python3 -c 'import sys; print(1 if len(sys.argv) > 1 else 0)' > argv-check.txt",
];

function session(): Record<string, unknown>[] {
  seq = 0;
  const output = (i: number): string => Array.from({ length: 60 }, (_, j) => `check ${i}.${j}: rate row ${j * 3} within bounds`).join('\n');
  const lines = [line('user', 'Check that every billing rate is non-negative, and record the argv check.')];
  COMMANDS.forEach((command, i) => {
    lines.push(line('assistant', [{ type: 'tool_use', id: `b${i}`, name: 'Bash', input: { command } }]));
    lines.push(line('user', [{ type: 'tool_result', tool_use_id: `b${i}`, content: output(i) }]));
  });
  lines.push(line('assistant', [{ type: 'text', text: 'All rates are non-negative.' }]));
  lines.push(line('user', 'Good. Now document the rate table.'));
  return lines;
}

async function summaries(): Promise<string> {
  const dir = mkdtempSync(join(tmpdir(), 'contextd-shell-writes-'));
  dirs.push(dir);
  const file = join(dir, 'session.jsonl');
  writeFileSync(file, session().map((l) => JSON.stringify(l)).join('\n') + '\n');
  const model = new SessionModel({ sessionId: S, budgetTokens: 1_000_000 });
  model.applyAll((await readTranscriptFile(file)).events);
  const plan = await planCompaction(model, { mode: 'manual', targetTokens: Math.floor(model.tokens() * 0.2) });
  return plan.edits.map((e) => e.summary.content).join('\n');
}

describe('summary of shell commands with > inside quoted code', () => {
  it('names the commands but never an edit of "=" or "b)"; a real redirect is still an edit', async () => {
    const all = await summaries();
    expect(all).not.toMatch(/edited (?:=|b\))/);
    expect(all).not.toMatch(/edited [^\n]*, (?:=|b\))/);
    expect(all).toContain('billing.rate()');
    expect(all).toContain('if (a > b)');
    expect(all).toMatch(/edited argv-check\.txt\b/);
  });
});
