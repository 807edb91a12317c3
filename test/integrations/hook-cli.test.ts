/** `contextd hook` as an agent runs it: a child process, JSON on stdin, never failing the agent. */
import { mkdtempSync, readFileSync, rmSync, writeFileSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { afterEach, describe, expect, it } from 'vitest';
import { run, CONTEXTD_BIN } from '../agents/harness.js';

const dirs: string[] = [];
afterEach(() => {
  for (const d of dirs.splice(0)) rmSync(d, { recursive: true, force: true });
});

function hook(dir: string, input: string, agent = 'claude-code'): Promise<{ code: number | null; stdout: string; stderr: string }> {
  const inFile = join(dir, 'in.json');
  writeFileSync(inFile, input);
  return run('/bin/sh', ['-c', `exec "${process.execPath}" "${CONTEXTD_BIN}" hook ${agent} --state "${dir}/state" --socket "${dir}/none.sock" < "${inFile}"`], dir, { PATH: process.env['PATH'], HOME: dir });
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

  it('with the daemon down and no templates: exits 0, no output, notes the fallback', async () => {
    const dir = mkdtempSync(join(tmpdir(), 'ctxd-hook-'));
    dirs.push(dir);
    const r = await hook(dir, JSON.stringify({ hook_event_name: 'UserPromptSubmit', session_id: 's1', prompt: 'fix the build', cwd: dir }));
    expect(r).toMatchObject({ code: 0, stdout: '' });
    expect(readFileSync(join(dir, 'state', 'hooks.log'), 'utf8')).toContain('reading the template store directly');
  });

  it('an unknown agent is a usage error (exit 2), not a silent success', async () => {
    const dir = mkdtempSync(join(tmpdir(), 'ctxd-hook-'));
    dirs.push(dir);
    const r = await hook(dir, '{}', 'gemini');
    expect(r.code).toBe(2);
  });
});
