/**
 * How the built CLI behaves as a process: closed pipes, exit codes, error messages that name
 * the path and the cause, and checks that run before the daemon starts anything.
 */
import { spawn } from 'node:child_process';
import { appendFileSync, mkdirSync, writeFileSync } from 'node:fs';
import { join } from 'node:path';
import { describe, expect, it, vi } from 'vitest';

// Each case spawns the CLI a few times; on a loaded 2-core machine that takes a while.
vi.setConfig({ testTimeout: 120_000 });
import { generateTranscript } from '../fixtures/transcripts.js';
import { CLI, e2eScope, runCli, subscribeWhenSeen } from './spawn.js';

const scope = e2eScope();
const temp = (): string => scope.emptyDir('clib');

function transcript(dir: string): string {
  const f = join(dir, 'session.jsonl');
  writeFileSync(f, generateTranscript('claude-code', { seed: 21, turns: 3 }).jsonl);
  return f;
}

/** Run the CLI with stdout read by a reader that leaves after the first chunk (like `| head -1`). */
function runIntoClosedPipe(args: readonly string[]): Promise<{ code: number | null; stderr: string }> {
  return new Promise((resolve) => {
    const p = spawn(process.execPath, [CLI, ...args], { stdio: ['ignore', 'pipe', 'pipe'] });
    let stderr = '';
    p.stderr.on('data', (d: Buffer) => (stderr += d.toString()));
    p.stdout.once('data', () => p.stdout.destroy());
    p.on('exit', (code) => resolve({ code, stderr }));
  });
}

describe('the CLI as a process', () => {
  it('ends quietly with 0 when its reader goes away (inspect | head, warm list | head)', async () => {
    const d = temp();
    const f = transcript(d);
    const inspect = await runIntoClosedPipe(['inspect', f]);
    expect(inspect).toEqual({ code: 0, stderr: '' });
    const state = join(d, 'state');
    expect((await runCli(['warm', 'harvest', f, '--state', state])).code).toBe(0);
    const list = await runIntoClosedPipe(['warm', 'list', '--state', state]);
    expect(list).toEqual({ code: 0, stderr: '' });
  });

  it('exits 1 for ids that name nothing: session, template, handle', async () => {
    const d = temp();
    const state = join(d, 'state');
    expect((await runCli(['warm', 'harvest', transcript(d), '--state', state])).code).toBe(0);
    const headroom = await runCli(['headroom', 'no-such-session', '--state', state]);
    expect(headroom.code).toBe(1);
    expect(headroom.stderr).toContain('no such session');
    const show = await runCli(['warm', 'show', 't-000000000000', '--state', state]);
    expect(show.code).toBe(1);
    expect(show.stderr).toContain('no template t-000000000000');
    const recall = await runCli(['recall', 'h_nothing', '--state', state]);
    expect(recall.code).toBe(1);
  });

  it('names the path and the real cause of a file error', async () => {
    const d = temp();
    const dir = await runCli(['inspect', d]);
    expect(dir.code).toBe(1);
    expect(dir.stderr).toBe(`contextd: cannot read ${d}: it is a folder, not a file\n`);
    const missing = join(d, 'gone.jsonl');
    const gone = await runCli(['inspect', missing]);
    expect(gone.code).toBe(1);
    expect(gone.stderr).toBe(`contextd: cannot read ${missing}: no such file or folder\n`);
  });

  it('says which required option is missing, without the whole help', async () => {
    const r = await runCli(['compact', transcript(temp())]);
    expect(r.code).toBe(2);
    expect(r.stderr).toMatch(/required option '--budget <\w+>' not specified/);
    expect(r.stderr).not.toContain('Usage:');
  });

  it('suggests the right name for a misspelled config key (exit 2)', async () => {
    const d = temp();
    const config = join(d, 'contextd.json');
    writeFileSync(config, JSON.stringify({ reserveRatoi: 0.2 }));
    const r = await runCli(['daemon', '--config', config, '--socket', join(d, 's.sock'), '--state', join(d, 'state'), '--watch', d]);
    expect(r.code).toBe(2);
    expect(r.stderr).toContain('unknown field "reserveRatoi" (did you mean "reserveRatio"?)');
  });

  it('checks the socket path before starting anything: a missing folder, a path over 107 bytes', async () => {
    const d = temp();
    const missing = await runCli(['daemon', '--socket', '/missing/dir/a.sock', '--state', join(d, 'state'), '--watch', d]);
    expect(missing.code).toBe(2);
    expect(missing.stderr).toContain('socket folder /missing/dir does not exist');
    const long = join(d, 'x'.repeat(127 - d.length - 1));
    const tooLong = await runCli(['daemon', '--socket', long, '--state', join(d, 'state'), '--watch', d]);
    expect(tooLong.code).toBe(2);
    expect(tooLong.stderr).toContain("over Linux's 107-byte limit");
    expect(tooLong.stderr).not.toMatch(/stopping|stopped/);
  });

  it('warns about a watch folder that does not exist, then reads it once created (mkdir -p)', async () => {
    const d = temp();
    const later = join(d, 'later', 'deeper', 'sessions');
    const daemon = await scope.daemon(['--watch', later, '--socket', join(d, 's.sock'), '--state', join(d, 'state')]);
    expect(daemon.logs.filter((l) => l.level === 'warn' && l.msg.includes('watch path does not exist') && l['path'] === later)).toHaveLength(1);
    mkdirSync(later, { recursive: true });
    const file = join(later, 'late.jsonl');
    appendFileSync(file, generateTranscript('claude-code', { seed: 22, turns: 2 }).jsonl);
    const client = await scope.client(join(d, 's.sock'));
    const sessionId = await subscribeWhenSeen(client, file);
    const status = await client.status();
    expect(status.sessions.map((s) => s.sessionId)).toContain(sessionId);
  });
});
