import * as fs from 'node:fs';
import * as os from 'node:os';
import * as path from 'node:path';
import { Command } from 'commander';
import { afterEach, beforeEach, describe, expect, it, vi } from 'vitest';
import { registerCompact } from '../../src/cli/compact.js';
import { isContextdError } from '../../src/util/errors.js';
import { generateTranscript, writeTranscripts } from '../fixtures/transcripts.js';

let dir: string;
let out: string[];

beforeEach(() => {
  dir = fs.mkdtempSync(path.join(os.tmpdir(), 'contextd-'));
  out = [];
  vi.spyOn(process.stdout, 'write').mockImplementation((chunk: string | Uint8Array) => {
    out.push(String(chunk));
    return true;
  });
});
afterEach(() => {
  vi.restoreAllMocks();
  fs.rmSync(dir, { recursive: true, force: true });
});

async function run(...args: string[]): Promise<void> {
  const program = new Command('contextd').exitOverride();
  registerCompact(program);
  // originals are archived: into this test's own state dir, never the user's
  await program.parseAsync(['node', 'contextd', 'compact', ...args, '--state', path.join(dir, 'state')]);
}

/** A hermes-style openai-chat transcript. */
function writeTranscript(lines: object[]): string {
  const f = path.join(dir, 'session.jsonl');
  fs.writeFileSync(f, lines.map((l) => JSON.stringify(l)).join('\n') + '\n');
  return f;
}

function chatSession(): object[] {
  const lines: object[] = [
    { role: 'system', content: 'You are a coding agent.' },
    { role: 'user', content: 'Fix the parser in src/parse.ts. Never change the grammar file.' },
  ];
  for (let i = 0; i < 6; i++) {
    lines.push({ role: 'assistant', content: '', tool_calls: [{ id: `call_${i}`, type: 'function', function: { name: 'read_file', arguments: JSON.stringify({ path: `src/p${i}.ts` }) } }] });
    lines.push({ role: 'tool', tool_call_id: `call_${i}`, content: Array.from({ length: 50 }, (_, j) => `export const v${i}_${j} = ${i * j}; // parser table row`).join('\n') });
  }
  lines.push({ role: 'user', content: 'Now run the parser tests.' });
  return lines;
}

describe('contextd compact', () => {
  it('prints the result as JSON and writes the compacted messages as JSONL', async () => {
    const file = writeTranscript(chatSession());
    const outFile = path.join(dir, 'out.jsonl');
    await run(file, '--budget', '2000', '--reserve', '0.1', '--json', '--out', outFile);
    const doc = JSON.parse(out.join('')) as Record<string, unknown>;
    expect(doc['strategy']).toBe('contextd');
    expect(doc['format']).toBe('openai-chat');
    expect(doc['budget']).toBe(1800);
    expect(doc['tokensAfter'] as number).toBeLessThanOrEqual(1800);
    expect(doc['tokensBefore'] as number).toBeGreaterThan(1800);
    expect((doc['edits'] as unknown[]).length).toBeGreaterThan(0);
    const written = fs.readFileSync(outFile, 'utf8').trim().split('\n').map((l) => JSON.parse(l) as { role: string; content: string });
    expect(written).toEqual(doc['messages']);
    expect(written.some((m) => m.content.includes('[contextd recall h_'))).toBe(true);
    expect(written.some((m) => m.content.startsWith('Fix the parser in src/parse.ts'))).toBe(true);
  });

  it('prints a human table for a baseline strategy', async () => {
    const file = writeTranscript(chatSession());
    await run(file, '--budget', '2000', '--strategy', 'truncate');
    const text = out.join('');
    expect(text).toMatch(/truncate/);
    expect(text).toMatch(/tokens \d+ → \d+ \(target 1700/);
  });

  it('rejects an unknown strategy and a bad budget as usage errors', async () => {
    const file = writeTranscript(chatSession());
    await expect(run(file, '--budget', '2000', '--strategy', 'magic')).rejects.toSatisfy((e) => isContextdError(e, 'USAGE'));
    await expect(run(file, '--budget', '-5')).rejects.toSatisfy((e) => isContextdError(e, 'USAGE'));
  });

  it('fails with the blocking anchors when the budget is unreachable', async () => {
    const file = writeTranscript(chatSession());
    let err: unknown;
    try {
      await run(file, '--budget', '60', '--json');
    } catch (e) {
      err = e;
    }
    expect(isContextdError(err, 'BUDGET_UNREACHABLE')).toBe(true);
    const doc = JSON.parse(out.join('')) as { unreachable: { anchors: string[] } };
    expect(doc.unreachable.anchors.length).toBeGreaterThan(0);
    expect((err as Error).message).toContain(doc.unreachable.anchors[0]!);
  });

  it('writes --out owner-only whatever the umask, and tightens an existing file', async () => {
    const file = writeTranscript(chatSession());
    const fresh = path.join(dir, 'fresh.jsonl');
    const existing = path.join(dir, 'existing.jsonl');
    fs.writeFileSync(existing, 'old\n');
    fs.chmodSync(existing, 0o666);
    const umask = process.umask(0);
    try {
      await run(file, '--budget', '2000', '--json', '--out', fresh);
      await run(file, '--budget', '2000', '--json', '--out', existing);
    } finally {
      process.umask(umask);
    }
    for (const f of [fresh, existing]) {
      expect(fs.statSync(f).mode & 0o777).toBe(0o600);
      expect(fs.readFileSync(f, 'utf8')).toContain('[contextd recall h_');
    }
  });

  it('writes no --out when the budget is unreachable, and leaves an existing one as it was', async () => {
    const file = writeTranscript(chatSession());
    const fresh = path.join(dir, 'fresh.jsonl');
    const existing = path.join(dir, 'existing.jsonl');
    fs.writeFileSync(existing, 'earlier result\n', { mode: 0o600 });
    for (const f of [fresh, existing]) await expect(run(file, '--budget', '60', '--json', '--out', f)).rejects.toSatisfy((e) => isContextdError(e, 'BUDGET_UNREACHABLE'));
    expect(fs.existsSync(fresh)).toBe(false);
    expect(fs.readFileSync(existing, 'utf8')).toBe('earlier result\n');
  });

  it('compacts a Claude Code transcript', async () => {
    const [file = ''] = writeTranscripts(dir, [generateTranscript('claude-code', { seed: 7, turns: 8 })]);
    await run(file, '--budget', '8000', '--reserve', '0', '--json', '--strategy', 'mask');
    const doc = JSON.parse(out.join('')) as { format: string; tokensAfter: number; tokensBefore: number };
    expect(doc.format).toBe('claude-code');
    expect(doc.tokensAfter).toBeLessThanOrEqual(8000);
    expect(doc.tokensBefore).toBeGreaterThan(8000);
  });
});
