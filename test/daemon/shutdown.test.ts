import { afterEach, describe, expect, it } from 'vitest';
import { mkdirSync, mkdtempSync, rmSync, writeFileSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { pino } from 'pino';
import { Daemon } from '../../src/daemon/daemon.js';
import { resolveDaemonOptions } from '../../src/daemon/config.js';
import type { SessionManager } from '../../src/daemon/sessions.js';
import { demoTranscriptJsonl } from '../../src/demo/transcript.js';

const dirs: string[] = [];
const daemons: Daemon[] = [];
afterEach(async () => {
  for (const d of daemons.splice(0)) await d.stop();
  for (const d of dirs.splice(0)) rmSync(d, { recursive: true, force: true });
});

describe('daemon shutdown with a backlog', () => {
  it('stop() during a first scan larger than the read gate drops the lines not applied yet instead of applying them, and returns', async () => {
    const dir = mkdtempSync(join(tmpdir(), 'contextd-shutdown-'));
    dirs.push(dir);
    mkdirSync(join(dir, 'sessions'));
    // ~14 MiB of transcripts: more than the 8 MiB of read lines the tailer lets wait.
    for (let i = 0; i < 8; i++) writeFileSync(join(dir, 'sessions', `big-${i}.jsonl`), demoTranscriptJsonl({ rounds: 200, variant: String.fromCharCode(97 + i) }));
    const options = resolveDaemonOptions({}, { watch: [join(dir, 'sessions')], socket: join(dir, 's.sock'), state: join(dir, 'state'), budgetTokens: 1_000_000 });
    const daemon = new Daemon(options, { logger: pino({ level: 'silent' }) });
    daemons.push(daemon);
    const started = daemon.start();
    // The session manager is internal; the test reads it to see the gate and what was applied.
    const manager = (): SessionManager | undefined => (daemon as unknown as { sessions?: SessionManager }).sessions;
    for (let i = 0; i < 2_000 && !(manager()?.room() instanceof Promise); i++) await new Promise((r) => setTimeout(r, 5));
    // The tailer waits at the gate: read lines pile up faster than the models apply them.
    expect(manager()?.room()).toBeInstanceOf(Promise);
    await daemon.stop();
    await started;
    expect(daemon.state).toBe('stopped');
    const sessions = manager()?.all() ?? [];
    expect(sessions.length).toBeGreaterThan(0);
    // Lines read but not applied were dropped (before, shutdown applied the whole backlog first).
    expect(sessions.some((s) => (s.tailOffset ?? 0) < (s.queuedOffset ?? 0))).toBe(true);
    expect(manager()?.room()).toBeUndefined();
  });
});
