/**
 * `contextd fork` of a Codex rollout that starts with a UTF-8 byte order mark: the mark is
 * skipped as the transcript reader skips it, so the fork carries the source's session meta
 * (cwd, forked_from_id) exactly as the fork of the same rollout without a mark does.
 */
import { mkdtempSync, readFileSync, rmSync, writeFileSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { afterEach, describe, expect, it } from 'vitest';
import { forkSession } from '../../src/integrations/fork/index.js';

const dirs: string[] = [];
afterEach(() => {
  for (const d of dirs.splice(0)) rmSync(d, { recursive: true, force: true });
});

const SOURCE_ID = '0199a000-0000-7000-8000-00000000b0b0';
const ts = '2026-01-01T00:00:00.000Z';
const env = (type: string, payload: Record<string, unknown>) => ({ timestamp: ts, type, payload });

function rollout(): string {
  const filler = Array.from({ length: 60 }, (_, i) => `row ${i}: value ${i * 7} of the sample table`).join('\n');
  const lines: unknown[] = [
    env('session_meta', { id: SOURCE_ID, cwd: '/w/app', originator: 'codex_cli_rs', cli_version: '0.50.0' }),
    env('turn_context', { cwd: '/w/app', model: 'gpt-5-codex', approval_policy: 'never', sandbox_policy: { mode: 'read-only' } }),
    env('response_item', { type: 'message', role: 'user', content: [{ type: 'input_text', text: 'Read the tables and tell me the biggest value.' }] }),
  ];
  for (let i = 0; i < 8; i++) {
    lines.push(
      env('response_item', { type: 'function_call', name: 'shell', call_id: `c${i}`, arguments: JSON.stringify({ command: ['bash', '-lc', `cat tables/t${i}.txt`] }) }),
      env('response_item', { type: 'function_call_output', call_id: `c${i}`, output: JSON.stringify({ output: filler, metadata: { exit_code: 0, duration_seconds: 0.1 } }) }),
    );
  }
  lines.push(env('response_item', { type: 'message', role: 'assistant', content: [{ type: 'output_text', text: 'The biggest value is 413.' }] }));
  return lines.map((l) => JSON.stringify(l)).join('\n') + '\n';
}

/** Fork a rollout written with or without a leading byte order mark; the forked file's lines. */
async function forkOf(bom: boolean): Promise<Record<string, unknown>[]> {
  const dir = mkdtempSync(join(tmpdir(), 'contextd-fork-bom-'));
  dirs.push(dir);
  const file = join(dir, `rollout-2026-01-01T00-00-00-${SOURCE_ID}.jsonl`);
  const text = Buffer.from(rollout());
  writeFileSync(file, bom ? Buffer.concat([Buffer.from([0xef, 0xbb, 0xbf]), text]) : text);
  const forked = await forkSession(file, 3000, () => undefined, new Date(ts));
  return readFileSync(forked.file, 'utf8')
    .trim()
    .split('\n')
    .map((l) => JSON.parse(l) as Record<string, unknown>);
}

/**
 * A forked line without what differs between two forks of one conversation: the new session
 * id, and recall handles (keyed by the source's session id, which is its path).
 */
function stable(line: Record<string, unknown>): unknown {
  const l = JSON.parse(JSON.stringify(line).replace(/h_[0-9a-f]{16}/g, 'h_*')) as Record<string, unknown>;
  if (l['type'] !== 'session_meta') return l;
  const { id: _id, session_id: _sid, ...rest } = l['payload'] as Record<string, unknown>;
  return { ...l, payload: rest };
}

describe('fork of a Codex rollout that starts with a byte order mark', () => {
  it('carries the session meta and turn context, as the fork of the same rollout without the mark', async () => {
    const withMark = await forkOf(true);
    const meta = withMark[0]?.['payload'] as Record<string, unknown>;
    expect(withMark[0]?.['type']).toBe('session_meta');
    expect(meta['forked_from_id']).toBe(SOURCE_ID);
    expect(meta['cwd']).toBe('/w/app');
    expect(meta['cli_version']).toBe('0.50.0');
    expect(withMark[1]?.['type']).toBe('turn_context');
    expect(withMark.map(stable)).toEqual((await forkOf(false)).map(stable));
  });
});
