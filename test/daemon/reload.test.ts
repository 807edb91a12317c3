import { afterEach, describe, expect, it } from 'vitest';
import { mkdirSync, mkdtempSync, rmSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { Writable } from 'node:stream';
import { pino } from 'pino';
import { Daemon } from '../../src/daemon/daemon.js';
import { resolveDaemonOptions } from '../../src/daemon/config.js';

const dirs: string[] = [];
const daemons: Daemon[] = [];
afterEach(async () => {
  for (const d of daemons.splice(0)) await d.stop();
  for (const d of dirs.splice(0)) rmSync(d, { recursive: true, force: true });
});

describe('daemon reload (SIGHUP)', () => {
  it('says a new warmSnapshotDelayMs takes a restart and keeps the one it runs with, instead of reporting it applied', async () => {
    const dir = mkdtempSync(join(tmpdir(), 'contextd-reload-'));
    dirs.push(dir);
    mkdirSync(join(dir, 'sessions'));
    const lines: Record<string, unknown>[] = [];
    const sink = new Writable({
      write(chunk: Buffer, _enc, cb) {
        for (const l of chunk.toString().split('\n').filter(Boolean)) lines.push(JSON.parse(l) as Record<string, unknown>);
        cb();
      },
    });
    const flags = { watch: [join(dir, 'sessions')], socket: join(dir, 's.sock'), state: join(dir, 'state') };
    const daemon = new Daemon(resolveDaemonOptions({ warmSnapshotDelayMs: 2_000 }, flags), { logger: pino({ level: 'info' }, sink) });
    daemons.push(daemon);
    await daemon.start();

    // A reload that changes nothing needs no restart.
    daemon.reload(resolveDaemonOptions({ warmSnapshotDelayMs: 2_000 }, flags));
    const reloaded = () => lines.filter((l) => l['msg'] === 'configuration reloaded');
    expect(reloaded().at(-1)?.['restartNeeded']).toEqual([]);

    daemon.reload(resolveDaemonOptions({ warmSnapshotDelayMs: 50 }, flags));
    expect(reloaded().at(-1)?.['restartNeeded']).toEqual(['warmSnapshotDelayMs']);
    expect(lines.find((l) => l['msg'] === 'some changed settings take effect only after a restart')).toMatchObject({ restartNeeded: ['warmSnapshotDelayMs'] });
    // The options in force keep the value the snapshot writer was built with.
    expect((daemon as unknown as { options: { warmSnapshotDelayMs: number } }).options.warmSnapshotDelayMs).toBe(2_000);
  });
});
