/** The hook command `contextd install` writes, run the way agents run it (`sh -c`). */
import { mkdtempSync, readFileSync, rmSync, writeFileSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { afterEach, describe, expect, it } from 'vitest';
import { hookCommand } from '../../src/integrations/install.js';
import { run, CONTEXTD_BIN } from '../agents/harness.js';

const dirs: string[] = [];
afterEach(() => {
  for (const d of dirs.splice(0)) rmSync(d, { recursive: true, force: true });
});

/** A path Node would try (and fail) to read certificates from, warning on stderr when it does. */
const MISSING_CERTS = '/nonexistent/contextd-test-ca.pem';

describe('hookCommand', () => {
  it('runs this package’s launcher with NODE_EXTRA_CA_CERTS unset, under sh -c, and the hook answers', async () => {
    const dir = mkdtempSync(join(tmpdir(), 'ctxd-install-cmd-'));
    dirs.push(dir);
    const command = hookCommand('claude-code', { socket: join(dir, 'none.sock'), state: join(dir, 'state') });
    expect(command.startsWith('env -u NODE_EXTRA_CA_CERTS ')).toBe(true);
    expect(command).toContain(` ${CONTEXTD_BIN} hook claude-code --socket `);
    const env = { PATH: process.env['PATH'], HOME: dir, NODE_EXTRA_CA_CERTS: MISSING_CERTS };
    // The control: Node does read the variable at start-up (a missing file is a warning).
    const bare = await run('/bin/sh', ['-c', `"${process.execPath}" -e 0`], dir, env);
    expect(bare.stderr).toContain('extra certs');
    const input = join(dir, 'in.json');
    writeFileSync(input, JSON.stringify({ hook_event_name: 'UserPromptSubmit', session_id: 's1', prompt: 'fix the build', cwd: dir }));
    const r = await run('/bin/sh', ['-c', `${command} < "${input}"`], dir, env);
    expect(r).toEqual({ code: 0, stdout: '', stderr: '' });
    // It ran (no daemon, no templates: nothing to say, and the log says why).
    expect(readFileSync(join(dir, 'state', 'hooks.log'), 'utf8')).toContain('bootstrapping from the state folder');
  }, 30_000);
});
