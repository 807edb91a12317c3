import { afterEach, describe, expect, it } from 'vitest';
import { mkdirSync, mkdtempSync, rmSync, writeFileSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { Writable } from 'node:stream';
import { pino } from 'pino';
import { Daemon } from '../../src/daemon/daemon.js';
import { resolveDaemonOptions } from '../../src/daemon/config.js';
import { demoTranscriptJsonl } from '../../src/demo/transcript.js';
import type { SessionManager } from '../../src/daemon/sessions.js';
import type { TranscriptFormat } from '../../src/ingest/types.js';
import { createOpenAIChatAdapter } from '../../src/ingest/adapters/openai-chat.js';

const dirs: string[] = [];
const daemons: Daemon[] = [];
afterEach(async () => {
  for (const d of daemons.splice(0)) await d.stop();
  for (const d of dirs.splice(0)) rmSync(d, { recursive: true, force: true });
});

const names = ['a', 'b', 'c', 'd'];

/**
 * A daemon (not started) watching four demo transcripts that go idle after 1 s, its log lines
 * collected in `lines` (each also handed to `onLine` as it is written).
 */
function idleDaemon(onLine?: (line: Record<string, unknown>) => void): { daemon: Daemon; lines: Record<string, unknown>[] } {
  const dir = mkdtempSync(join(tmpdir(), 'contextd-idle-harvest-'));
  dirs.push(dir);
  mkdirSync(join(dir, 'sessions'));
  for (const n of names) writeFileSync(join(dir, 'sessions', `${n}.jsonl`), demoTranscriptJsonl({ rounds: 4, variant: n }));
  const lines: Record<string, unknown>[] = [];
  const sink = new Writable({
    write(chunk: Buffer, _enc, cb) {
      for (const l of chunk.toString().split('\n').filter(Boolean)) {
        const line = JSON.parse(l) as Record<string, unknown>;
        lines.push(line);
        onLine?.(line);
      }
      cb();
    },
  });
  const options = resolveDaemonOptions({ idleTimeoutMs: 1_000 }, { watch: [join(dir, 'sessions')], socket: join(dir, 's.sock'), state: join(dir, 'state'), budgetTokens: 200_000 });
  const daemon = new Daemon(options, { logger: pino({ level: 'debug' }, sink) });
  daemons.push(daemon);
  return { daemon, lines };
}

describe('idle harvest', () => {
  it('harvests sessions that went idle together one at a time (never two harvests in flight)', async () => {
    const { daemon, lines } = idleDaemon();
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

  it('a session that resumes while its idle round is under way is not harvested in that round, nor forgotten', async () => {
    let onHarvested: ((sessionId: string) => void) | undefined;
    const { daemon, lines } = idleDaemon((line) => {
      if (line['msg'] === 'idle session harvested') onHarvested?.(line['sessionId'] as string);
    });
    const sessions = (): SessionManager => (daemon as unknown as { sessions: SessionManager }).sessions;
    // The first harvest of the round done, every other session gets a new message before its
    // turn. Handed to the session manager directly (not appended for the tailer to find): what
    // is tested is the moment, between two harvests of one round, which a watched append cannot hit.
    const adapter = createOpenAIChatAdapter();
    const resumed: string[] = [];
    onHarvested = (first) => {
      onHarvested = undefined;
      queueMicrotask(() => {
        // the sessions of this round still to come: marked ended when it began
        for (const s of sessions().all()) {
          if (!s.ended || s.sessionId === first) continue;
          resumed.push(s.sessionId);
          sessions().ingest(s.file, s.sessionId, s.format as TranscriptFormat, adapter.parseLine({ role: 'user', content: `one more question for ${s.sessionId}` }, 1e9));
        }
      });
    };
    await daemon.start();
    const skipped = () => lines.filter((l) => l['msg'] === 'session active again before its idle harvest: not harvested in this round').map((l) => l['sessionId']);
    const harvested = () => lines.filter((l) => l['msg'] === 'idle session harvested').map((l) => l['sessionId']);
    const idleRoundOver = () => (daemon as unknown as { idleHarvests: Promise<void> | undefined }).idleHarvests === undefined;
    while (resumed.length === 0 || !idleRoundOver()) await new Promise((r) => setImmediate(r));
    // The four went idle together (written before the start): one harvested, then three resumed.
    expect(resumed).toHaveLength(3);
    expect(harvested()).toHaveLength(1);
    expect([...skipped()].sort()).toEqual([...resumed].sort());
    // The resumed ones are live, not ended, and were not forgotten.
    for (const n of resumed) expect(sessions().get(n)?.ended).toBe(false);
  });
});
