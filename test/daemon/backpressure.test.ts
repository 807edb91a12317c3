/**
 * Backpressure of the running daemon (spawned): a burst of appends larger than the bytes it lets
 * wait is read in full, with nothing lost, while plans are due and pushed.
 */
import { describe, expect, it } from 'vitest';
import { appendFileSync, writeFileSync } from 'node:fs';
import { join } from 'node:path';
import type { ContextdClient } from '../../src/ipc/client.js';
import type { DaemonStatus } from '../../src/daemon/api.js';
import { demoTranscriptJsonl } from '../../src/demo/transcript.js';
import { INGEST_HIGH_WATER_BYTES } from '../../src/daemon/sessions.js';
import { e2eScope, subscribeWhenSeen } from '../e2e/spawn.js';

const scope = e2eScope();

/** Six transcripts of ~1.7 MiB each: together more than INGEST_HIGH_WATER_BYTES. */
const FILES = 6;
const READ_CHUNK_BYTES = 1024 * 1024;

type Figures = Map<string, { tokens: number; sections: number; reportedTokens: number | null }>;

async function figures(c: ContextdClient): Promise<{ rows: Figures; load: DaemonStatus['load'] | undefined }> {
  const s = (await c.status()) as unknown as DaemonStatus;
  return { rows: new Map(s.sessions.map((r) => [r.file.replace(/^.*\//, ''), { tokens: r.tokens, sections: r.sections, reportedTokens: r.reportedTokens }])), load: s.load };
}

describe('daemon backpressure', () => {
  it('reads a burst larger than its backlog bound in full, with plans due, to the figures of a daemon that read the same files at start', { timeout: 300_000 }, async () => {
    const texts = Array.from({ length: FILES }, (_, i) => demoTranscriptJsonl({ rounds: 200, variant: String.fromCharCode(97 + i) }));
    expect(texts.reduce((n, t) => n + Buffer.byteLength(t), 0)).toBeGreaterThan(INGEST_HIGH_WATER_BYTES);
    const budget = ['--budget', '20000'];

    // Reference: the whole files read by the first scan.
    const ref = scope.tempDir('backpressure-ref');
    texts.forEach((t, i) => writeFileSync(join(ref.watch, `s${i}.jsonl`), t));
    await scope.daemon(['--watch', ref.watch, '--socket', ref.socket, '--state', ref.state, ...budget]);
    const expected = (await figures(await scope.client(ref.socket))).rows;
    expect(expected.size).toBe(FILES);

    // The same files, one line each at start, then the rest appended at once to all of them.
    const d = scope.tempDir('backpressure');
    const files = texts.map((_, i) => join(d.watch, `s${i}.jsonl`));
    const cut = texts.map((t) => t.indexOf('\n') + 1);
    texts.forEach((t, i) => writeFileSync(files[i] as string, t.slice(0, cut[i])));
    const daemon = await scope.daemon(['--watch', d.watch, '--socket', d.socket, '--state', d.state, ...budget]);
    // A subscriber that never answers: plans are due and pushed while the burst is read.
    const agent = await scope.client(d.socket, 'agent');
    let pushed = 0;
    agent.on('compaction.proposed', () => pushed++);
    for (const f of files) await subscribeWhenSeen(agent, f);
    const watcher = await scope.client(d.socket, 'status');
    texts.forEach((t, i) => appendFileSync(files[i] as string, t.slice(cut[i])));

    let last: Awaited<ReturnType<typeof figures>> | undefined;
    let queuedMax = 0;
    const caughtUp = (): boolean => last !== undefined && last.load?.queuedBytes === 0 && [...expected].every(([f, e]) => JSON.stringify(last?.rows.get(f)) === JSON.stringify(e));
    for (let i = 0; i < 2_400 && !caughtUp(); i++) {
      last = await figures(watcher);
      queuedMax = Math.max(queuedMax, last.load?.queuedBytes ?? 0);
      await new Promise((r) => setTimeout(r, 100));
    }
    // Nothing lost: every session holds what a read of the whole file gives.
    expect(last?.rows).toEqual(expected);
    expect(last?.load?.queuedBytes).toBe(0);
    // Never more waited than the bound: one read per session (held until applied), under the high-water mark.
    expect(queuedMax).toBeLessThanOrEqual(Math.min(INGEST_HIGH_WATER_BYTES + FILES * READ_CHUNK_BYTES, FILES * (READ_CHUNK_BYTES + 64 * 1024)));
    expect(pushed).toBeGreaterThan(0);
    expect(daemon.logs.filter((l) => Number(l.level) >= 50)).toEqual([]);
  });
});
