/**
 * The CLI paths that archive originals (`contextd fork`, `contextd compact`) store them with
 * secrets redacted, as the daemon does by default (archive.redactSecrets): the state dir's
 * SQLite holds no planted secret verbatim, and `contextd recall` says what was redacted.
 * Real CLI processes, a real state database.
 */
import { mkdtempSync, readFileSync, rmSync, writeFileSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import Database from 'better-sqlite3';
import { afterEach, describe, expect, it } from 'vitest';
import { stateDbPath } from '../../src/store/paths.js';
import { runCli } from '../e2e/spawn.js';
import { plantedSecrets } from '../harvest/fixtures.js';

const dirs: string[] = [];
afterEach(() => {
  for (const d of dirs.splice(0)) rmSync(d, { recursive: true, force: true });
});
function temp(): string {
  const d = mkdtempSync(join(tmpdir(), 'contextd-redact-cli-'));
  dirs.push(d);
  return d;
}

const aws = plantedSecrets(7).find((s) => s.kind === 'aws-access-key');
const awsSecret = plantedSecrets(7).find((s) => s.kind === 'aws-secret-key');

/** A Claude Code session of read-and-explain rounds; the first tool output holds AWS credentials. */
function claudeSessionWithSecret(rounds: number): string {
  const lines: Record<string, unknown>[] = [];
  let n = 0;
  const push = (l: Record<string, unknown>): void => {
    n++;
    lines.push({ ...l, uuid: `x${n}`, parentUuid: n === 1 ? null : `x${n - 1}`, sessionId: 'secretive', cwd: '/w/app', isSidechain: false, timestamp: '2026-01-01T00:00:00.000Z' });
  };
  const assistant = (content: unknown[]): void => push({ type: 'assistant', message: { id: `msg_${n + 1}`, role: 'assistant', model: 'claude-x', content, stop_reason: null } });
  push({ type: 'user', message: { role: 'user', content: 'Read the deployment config and every storage module, and explain each.' } });
  for (let r = 0; r < rounds; r++) {
    const body =
      r === 0
        ? `# deploy/env\nAWS_ACCESS_KEY_ID=${aws?.text}\n${awsSecret?.text}\nREGION=eu-west-1\n`
        : Array.from({ length: 40 }, (_, i) => `export function store${r}_${i}(key: string): number { return key.length * ${r + i}; }`).join('\n');
    assistant([{ type: 'tool_use', id: `t${r}`, name: 'Read', input: { file_path: r === 0 ? '/w/app/deploy/env' : `/w/app/src/store/mod${r}.ts` } }]);
    push({ type: 'user', message: { role: 'user', content: [{ type: 'tool_result', tool_use_id: `t${r}`, content: body }] } });
    assistant([{ type: 'text', text: `Module ${r} is read; nothing else depends on it.` }]);
  }
  push({ type: 'user', message: { role: 'user', content: 'Now summarize the storage layer in three sentences.' } });
  return lines.map((l) => JSON.stringify(l)).join('\n') + '\n';
}

/** The session written in a temp dir, and a state dir beside it. */
function secretiveSession(): { file: string; state: string } {
  const d = temp();
  const file = join(d, 'secretive.jsonl');
  writeFileSync(file, claudeSessionWithSecret(30));
  return { file, state: join(d, 'state') };
}

interface Row {
  handle: string;
  messages: string;
  redactions: string;
}

/** Every archived row; asserts no planted secret is stored verbatim; returns the handles with redactions. */
async function checkArchive(state: string): Promise<string[]> {
  const db = new Database(stateDbPath(state), { readonly: true });
  let rows: Row[];
  try {
    rows = db.prepare('SELECT handle, messages, redactions FROM archive').all() as Row[];
  } finally {
    db.close();
  }
  expect(rows.length).toBeGreaterThan(0);
  const all = rows.map((r) => r.messages).join('\n');
  for (const s of [...(aws?.mustNotLeak ?? []), ...(awsSecret?.mustNotLeak ?? [])]) expect(all).not.toContain(s);
  expect(all).toContain('[REDACTED:');
  // nothing verbatim in the database file either (its free pages included)
  const bytes = readFileSync(stateDbPath(state)).toString('latin1');
  for (const s of aws?.mustNotLeak ?? []) expect(bytes).not.toContain(s);
  const redacted = rows.filter((r) => (JSON.parse(r.redactions) as unknown[]).length > 0).map((r) => r.handle);
  expect(redacted).toHaveLength(1);
  const handle = redacted[0] as string;
  const recall = await runCli(['recall', handle, '--state', state, '--json']);
  expect(recall.code, recall.stderr).toBe(0);
  const entry = JSON.parse(recall.stdout) as { redactions: { rule: string; count: number }[]; messages: { text: string }[] };
  expect(entry.redactions.length).toBeGreaterThan(0);
  expect(entry.redactions.reduce((n, r) => n + r.count, 0)).toBeGreaterThanOrEqual(2);
  expect(entry.messages.map((m) => m.text).join('\n')).toContain('REGION=eu-west-1');
  const human = await runCli(['recall', handle, '--state', state]);
  expect(human.stdout).toMatch(/secrets redacted before archiving: .*×\d/);
  return redacted;
}

describe('CLI archive records are redacted', () => {
  it('contextd fork archives the originals of a session with planted AWS credentials with no secret verbatim', async () => {
    expect(aws && awsSecret).toBeTruthy();
    const { file, state } = secretiveSession();
    const forked = await runCli(['fork', file, '--budget', '4000', '--state', state, '--json']);
    expect(forked.code, forked.stderr).toBe(0);
    const f = JSON.parse(forked.stdout) as { edits: number };
    expect(f.edits).toBeGreaterThan(0);
    await checkArchive(state);
  });

  it('contextd compact archives them redacted too', async () => {
    const { file, state } = secretiveSession();
    const compacted = await runCli(['compact', file, '--budget', '4000', '--state', state, '--json']);
    expect(compacted.code, compacted.stderr).toBe(0);
    expect((JSON.parse(compacted.stdout) as { archived: number }).archived).toBeGreaterThan(0);
    await checkArchive(state);
  });
});
