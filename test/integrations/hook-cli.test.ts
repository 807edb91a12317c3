/** `contextd hook` as an agent runs it: a child process, JSON on stdin, never failing the agent. */
import { spawn } from 'node:child_process';
import { createServer, type Socket } from 'node:net';
import { existsSync, mkdtempSync, readFileSync, readdirSync, rmSync, statSync, writeFileSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { afterEach, describe, expect, it } from 'vitest';
import { run, CONTEXTD_BIN } from '../agents/harness.js';
import { generatedCorpus, writeTranscripts } from '../fixtures/transcripts.js';
import { WARM_SNAPSHOT_FILE } from '../../src/warm/snapshot-format.js';
import { stateDbPath } from '../../src/store/paths.js';
import { plantedSecrets } from '../harvest/fixtures.js';
import Database from 'better-sqlite3';

const dirs: string[] = [];
afterEach(() => {
  for (const d of dirs.splice(0)) rmSync(d, { recursive: true, force: true });
});

function hook(dir: string, input: string, agent = 'claude-code', flags = `--socket "${dir}/none.sock"`): Promise<{ code: number | null; stdout: string; stderr: string }> {
  const inFile = join(dir, 'in.json');
  writeFileSync(inFile, input);
  return run('/bin/sh', ['-c', `exec "${process.execPath}" "${CONTEXTD_BIN}" hook ${agent} --state "${dir}/state" ${flags} < "${inFile}"`], dir, { PATH: process.env['PATH'], HOME: dir });
}

describe('contextd hook', () => {
  it('answers nothing and exits 0 on bad input, logging why to the state dir', async () => {
    const dir = mkdtempSync(join(tmpdir(), 'ctxd-hook-'));
    dirs.push(dir);
    const r = await hook(dir, '{ not json');
    expect(r).toMatchObject({ code: 0, stdout: '' });
    const log = readFileSync(join(dir, 'state', 'hooks.log'), 'utf8');
    expect(JSON.parse(log.trim().split('\n').at(-1)!)).toMatchObject({ msg: 'hook failed; answered nothing', code: 'HOOK_INPUT_INVALID' });
  });

  it('answers an event whose writer keeps stdin open (a pipe never closed)', async () => {
    const dir = mkdtempSync(join(tmpdir(), 'ctxd-hook-'));
    dirs.push(dir);
    const child = spawn(process.execPath, [CONTEXTD_BIN, 'hook', 'claude-code', '--state', join(dir, 'state'), '--socket', join(dir, 'none.sock')], { cwd: dir, env: { PATH: process.env['PATH'], HOME: dir }, stdio: ['pipe', 'pipe', 'pipe'] });
    const exited = new Promise<number | null>((r) => child.once('exit', (code) => r(code)));
    child.stdin.write(JSON.stringify({ hook_event_name: 'UserPromptSubmit', session_id: 's1', prompt: 'fix the build', cwd: dir }));
    // stdin is not ended: the hook must still answer and exit (it used to block on the read).
    const code = await Promise.race([exited, new Promise<'still running'>((r) => setTimeout(() => r('still running'), 15_000))]);
    child.kill();
    expect(code).toBe(0);
    expect(readFileSync(join(dir, 'state', 'hooks.log'), 'utf8')).toContain('bootstrapping from the state folder');
  }, 20_000);

  it('with a daemon that accepts but never answers: gives up at its socket timeout and exits, even when the connection is made after it', async () => {
    const dir = mkdtempSync(join(tmpdir(), 'ctxd-hook-'));
    dirs.push(dir);
    // A real socket that takes connections and holds them open, answering nothing (a hung daemon).
    const held: Socket[] = [];
    const server = createServer((c) => void held.push(c));
    const socket = join(dir, 'hung.sock');
    await new Promise<void>((resolve) => server.listen(socket, resolve));
    try {
      const event = JSON.stringify({ hook_event_name: 'UserPromptSubmit', session_id: 's1', prompt: 'fix the build', cwd: dir });
      // 1 ms: the deadline passes while the socket client loads and connects, so the connection
      // is made after it; a hook that kept it would wait here until the server closed it.
      for (const timeoutMs of [1, 100]) {
        const r = await hook(dir, event, 'claude-code', `--socket "${socket}" --timeout-ms ${timeoutMs}`);
        expect(r).toMatchObject({ code: 0, stdout: '' });
        expect(readFileSync(join(dir, 'state', 'hooks.log'), 'utf8')).toContain(`contextd did not answer warm.bootstrap within ${timeoutMs} ms`);
      }
      expect(held.length).toBeGreaterThan(0);
    } finally {
      for (const c of held) c.destroy();
      await new Promise((resolve) => server.close(resolve));
    }
  }, 20_000);

  it('with the daemon down and no templates: exits 0, no output, notes the fallback', async () => {
    const dir = mkdtempSync(join(tmpdir(), 'ctxd-hook-'));
    dirs.push(dir);
    const r = await hook(dir, JSON.stringify({ hook_event_name: 'UserPromptSubmit', session_id: 's1', prompt: 'fix the build', cwd: dir }));
    expect(r).toMatchObject({ code: 0, stdout: '' });
    expect(readFileSync(join(dir, 'state', 'hooks.log'), 'utf8')).toContain('daemon unavailable for warm.bootstrap; bootstrapping from the state folder');
  });

  it('with the daemon down: bootstraps from the warm snapshot `warm harvest` wrote, and from the store when the snapshot is corrupt', async () => {
    const dir = mkdtempSync(join(tmpdir(), 'ctxd-hook-'));
    dirs.push(dir);
    writeTranscripts(join(dir, 'sessions'), generatedCorpus());
    const harvest = await run(process.execPath, [CONTEXTD_BIN, 'warm', 'harvest', join(dir, 'sessions'), '--state', join(dir, 'state'), '--json'], dir, { PATH: process.env['PATH'], HOME: dir });
    expect(harvest.code, harvest.stderr).toBe(0);
    const snapshot = join(dir, 'state', WARM_SNAPSHOT_FILE);
    expect(statSync(snapshot).mode & 0o777).toBe(0o600);
    const event = JSON.stringify({ hook_event_name: 'UserPromptSubmit', session_id: 's1', prompt: 'fix the date parser offset bug', cwd: dir });
    const logLines = (): Record<string, unknown>[] =>
      readFileSync(join(dir, 'state', 'hooks.log'), 'utf8')
        .trim()
        .split('\n')
        .map((l) => JSON.parse(l) as Record<string, unknown>);

    const fromSnapshot = await hook(dir, event);
    expect(fromSnapshot.code).toBe(0);
    expect(fromSnapshot.stdout).toContain('contextd warm start');
    expect(logLines().map((l) => l['msg'])).toContain('warm bootstrap read from the warm snapshot');

    const good = readFileSync(snapshot, 'utf8');
    writeFileSync(snapshot, '{"format":"contextd-warm-snapshot","version":2,"templ');
    const fromStore = await hook(dir, event);
    // Same answer: the snapshot holds what the store holds.
    expect(fromStore).toMatchObject({ code: 0, stdout: fromSnapshot.stdout });
    const notes = logLines().slice(-2);
    expect(notes[0]).toMatchObject({ msg: 'warm snapshot unusable; reading the template store', code: 'WARM_SNAPSHOT_INVALID' });
    expect(notes[1]).toMatchObject({ msg: 'warm bootstrap read from the template store' });

    // A sound header whose template details are corrupt (each detail line overwritten in place):
    // found only when the bootstrap reads a picked template, and still answered from the store.
    const [header, ...details] = good.split('\n');
    writeFileSync(snapshot, [header, ...details.map((d) => '#'.repeat(Buffer.byteLength(d, 'utf8')))].join('\n'));
    const fromStoreAgain = await hook(dir, event);
    expect(fromStoreAgain).toMatchObject({ code: 0, stdout: fromSnapshot.stdout });
    const later = logLines().slice(-2);
    expect(later[0]).toMatchObject({ msg: 'warm snapshot unusable; reading the template store', code: 'WARM_SNAPSHOT_INVALID' });
    expect(String(later[0]?.['err'])).toMatch(/unreadable detail of template t-/);
    expect(later[1]).toMatchObject({ msg: 'warm bootstrap read from the template store' });
  });

  it('PostCompact archives the originals with secrets redacted, and says what was redacted', async () => {
    const dir = mkdtempSync(join(tmpdir(), 'ctxd-hook-'));
    dirs.push(dir);
    const key = plantedSecrets(11).find((x) => x.kind === 'aws-access-key')?.text ?? '';
    expect(key).toMatch(/^AKIA/);
    const line = (n: number, l: Record<string, unknown>) => JSON.stringify({ ...l, uuid: `u${n}`, parentUuid: n === 1 ? null : `u${n - 1}`, sessionId: 'sess-secret', cwd: dir, timestamp: '2026-01-01T00:00:00.000Z' });
    const transcript = join(dir, 'sess-secret.jsonl');
    writeFileSync(
      transcript,
      [
        line(1, { type: 'user', message: { role: 'user', content: 'Rotate the staging credentials in deploy/env and restart the worker.' } }),
        line(2, { type: 'assistant', message: { id: 'm2', role: 'assistant', model: 'claude-x', content: [{ type: 'tool_use', id: 't1', name: 'Read', input: { file_path: `${dir}/deploy/env` } }] } }),
        line(3, { type: 'user', message: { role: 'user', content: [{ type: 'tool_result', tool_use_id: 't1', content: `AWS_ACCESS_KEY_ID=${key}\nREGION=eu-west-1` }] } }),
        line(4, { type: 'assistant', message: { id: 'm4', role: 'assistant', model: 'claude-x', content: [{ type: 'text', text: 'The key in deploy/env is the old one; I will rotate it.' }] } }),
      ].join('\n') + '\n',
    );
    const event = { hook_event_name: 'PostCompact', session_id: 'sess-secret', transcript_path: transcript, cwd: dir, trigger: 'auto', compact_summary: 'Some work happened.' };
    const r = await hook(dir, JSON.stringify(event));
    expect(r.code).toBe(0);
    const db = new Database(stateDbPath(join(dir, 'state')), { readonly: true });
    try {
      const rows = db.prepare('SELECT handle, messages, redactions FROM archive').all() as { handle: string; messages: string; redactions: string }[];
      expect(rows).toHaveLength(1);
      expect(rows[0]?.messages).not.toContain(key);
      expect(rows[0]?.messages).toContain('REGION=eu-west-1');
      expect(JSON.parse(rows[0]?.redactions ?? '[]')).not.toEqual([]);
    } finally {
      db.close();
    }
  });

  it('PostCompact stashes the lost facts for SessionStart with secrets redacted; the recall handle survives', async () => {
    const dir = mkdtempSync(join(tmpdir(), 'ctxd-hook-'));
    dirs.push(dir);
    const token = plantedSecrets(23).find((x) => x.kind === 'github-token')?.text ?? '';
    expect(token).toMatch(/^ghp_/);
    const line = (n: number, l: Record<string, unknown>) => JSON.stringify({ ...l, uuid: `u${n}`, parentUuid: n === 1 ? null : `u${n - 1}`, sessionId: 'sess-stash', cwd: dir, timestamp: '2026-01-01T00:00:00.000Z' });
    const transcript = join(dir, 'sess-stash.jsonl');
    writeFileSync(
      transcript,
      [
        line(1, { type: 'user', message: { role: 'user', content: 'Look at the release script in scripts/release.sh.' } }),
        line(2, { type: 'assistant', message: { id: 'm2', role: 'assistant', model: 'claude-x', content: [{ type: 'text', text: 'It pushes tags with the token from the environment.' }] } }),
        line(3, { type: 'user', message: { role: 'user', content: `Push the release tag with GITHUB_TOKEN=${token} and then publish the changelog.` } }),
        line(4, { type: 'assistant', message: { id: 'm4', role: 'assistant', model: 'claude-x', content: [{ type: 'text', text: 'Pushing the tag now.' }] } }),
      ].join('\n') + '\n',
    );
    const post = { hook_event_name: 'PostCompact', session_id: 'sess-stash', transcript_path: transcript, cwd: dir, trigger: 'auto', compact_summary: 'Some work happened.' };
    expect((await hook(dir, JSON.stringify(post))).code).toBe(0);
    const pending = join(dir, 'state', 'hooks-pending');
    expect(readdirSync(pending)).toEqual(['sess-stash.txt']);
    const stashed = readFileSync(join(pending, 'sess-stash.txt'), 'utf8');
    expect(stashed).toContain('Push the release tag with GITHUB_TOKEN=');
    expect(stashed).not.toContain(token);
    expect(stashed).toMatch(/\[REDACTED:[\w-]+\]/);
    expect(stashed).toMatch(/contextd recall h_[0-9a-f]{16}/);
    // SessionStart(compact) hands the agent the stashed (redacted) text and removes the file
    const start = { hook_event_name: 'SessionStart', session_id: 'sess-stash', transcript_path: transcript, cwd: dir, source: 'compact' };
    const r = await hook(dir, JSON.stringify(start));
    expect(r.code).toBe(0);
    expect(r.stdout).toContain('Push the release tag');
    expect(r.stdout).not.toContain(token);
    expect(existsSync(join(pending, 'sess-stash.txt'))).toBe(false);
  });

  it('an unknown agent is a usage error (exit 2), not a silent success', async () => {
    const dir = mkdtempSync(join(tmpdir(), 'ctxd-hook-'));
    dirs.push(dir);
    const r = await hook(dir, '{}', 'gemini');
    expect(r.code).toBe(2);
  });
});
