import { afterEach, describe, expect, it } from 'vitest';
import { mkdirSync, mkdtempSync, rmSync, writeFileSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { Writable } from 'node:stream';
import { pino } from 'pino';
import { Daemon } from '../../src/daemon/daemon.js';
import { resolveDaemonOptions } from '../../src/daemon/config.js';
import { demoTranscriptJsonl } from '../../src/demo/transcript.js';

const dirs: string[] = [];
const daemons: Daemon[] = [];
afterEach(async () => {
  for (const d of daemons.splice(0)) await d.stop();
  for (const d of dirs.splice(0)) rmSync(d, { recursive: true, force: true });
});

describe('idle harvest', () => {
  it('harvests sessions that went idle together one at a time (never two harvests in flight)', async () => {
    const dir = mkdtempSync(join(tmpdir(), 'contextd-idle-harvest-'));
    dirs.push(dir);
    mkdirSync(join(dir, 'sessions'));
    const names = ['a', 'b', 'c', 'd'];
    for (const n of names) writeFileSync(join(dir, 'sessions', `${n}.jsonl`), demoTranscriptJsonl({ rounds: 4, variant: n }));
    const lines: Record<string, unknown>[] = [];
    const sink = new Writable({
      write(chunk: Buffer, _enc, cb) {
        for (const l of chunk.toString().split('\n').filter(Boolean)) lines.push(JSON.parse(l) as Record<string, unknown>);
        cb();
      },
    });
    const options = resolveDaemonOptions({ idleTimeoutMs: 1_000 }, { watch: [join(dir, 'sessions')], socket: join(dir, 's.sock'), state: join(dir, 'state'), budgetTokens: 200_000 });
    const daemon = new Daemon(options, { logger: pino({ level: 'debug' }, sink) });
    daemons.push(daemon);
    await daemon.start();
    // The harvests in flight, read from the daemon's own tracking (internal; shutdown waits on it),
    // sampled on every event-loop iteration until all four are done.
    const inFlight = (): number => (daemon as unknown as { harvests: Set<unknown> }).harvests.size;
    const harvested = () => lines.filter((l) => l['msg'] === 'idle session harvested').map((l) => l['sessionId']);
    let most = 0;
    while (harvested().length < 4) {
      most = Math.max(most, inFlight());
      await new Promise((r) => setImmediate(r));
    }
    expect([...harvested()].sort()).toEqual(names);
    // All four went idle in the same round (written together) and were harvested one at a time.
    expect(most).toBe(1);
  });
});
