/** `bench hooks` runs the hook command as installed (never asserts times: only what ran). */
import { describe, expect, it } from 'vitest';
import { benchHooks } from '../../src/bench/hooks.js';

describe('bench hooks', () => {
  it('times the installed command through sh -c, and each case reaches the path it names', async () => {
    const r = await benchHooks({ runs: 2 });
    expect(r).toMatchObject({ command: 'installed', shell: '/bin/sh -c', order: 'interleaved', templates: 40 });
    expect(String(r['installedCommand'])).toMatch(/^env -u NODE_EXTRA_CA_CERTS \S+ \S+\/bin\/contextd\.js hook claude-code --socket /);
    const answered = (name: string): unknown => (r[name] as { answered: number }).answered;
    // No state: nothing to bootstrap from; a store (snapshot or SQLite) or the daemon: a bootstrap every run.
    expect(answered('daemonDown')).toBe(0);
    for (const name of ['daemonDownWithTemplates', 'daemonDownStoreOnly', 'daemonUp', 'codexDaemonUp']) expect(answered(name), name).toBe(2);
    for (const name of ['nodeBaseline', 'nodeBareNoExtraCerts']) expect(r[name]).toMatchObject({ n: 2, answered: 0 });
  }, 120_000);
});
