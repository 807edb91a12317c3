/**
 * The daemon's warm snapshot writes are coalesced: a burst of harvests is written by one
 * rewrite within warmSnapshotDelayMs, and a pending change is always written at shutdown.
 * Real daemon, real SQLite store, real snapshot file.
 */
import { readFileSync, statSync, writeFileSync } from 'node:fs';
import { join } from 'node:path';
import { describe, expect, it } from 'vitest';
import { WARM_SNAPSHOT_FILE } from '../../src/warm/snapshot-format.js';
import { generateTranscript } from '../fixtures/transcripts.js';
import { e2eScope, runCli, subscribeWhenSeen, type SpawnedDaemon } from './spawn.js';

const scope = e2eScope();
const N = 5;

function snapshotTemplates(state: string): { names: string[]; mode: number } {
  const path = join(state, WARM_SNAPSHOT_FILE);
  // The header line lists every template (details follow it, one line each).
  const doc = JSON.parse(readFileSync(path, 'utf8').split('\n', 1)[0] ?? '') as { templates: { name: string }[] };
  return { names: doc.templates.map((t) => t.name).sort(), mode: statSync(path).mode & 0o777 };
}

const writes = (d: SpawnedDaemon) => d.logs.filter((l) => l.msg === 'warm snapshot written').length;

/** N distinct sessions in `watch`, each harvested by session.end at once; resolves with how many made a template. */
async function harvestBurst(watch: string, socket: string): Promise<number> {
  const files = Array.from({ length: N }, (_, i) => {
    const t = generateTranscript('openai-chat', { seed: 40 + i, repo: `acme/svc${i}`, task: `Fix the failing cache test in src/cache/lru${i}.ts (repo acme/svc${i}): eviction drops the newest key.` });
    const file = join(watch, `burst-${i}.jsonl`);
    writeFileSync(file, t.jsonl);
    return file;
  });
  const c = await scope.client(socket);
  try {
    const ids = await Promise.all(files.map((f) => subscribeWhenSeen(c, f)));
    const ended = await Promise.all(ids.map((id) => c.endSession(id, 'success')));
    return ended.reduce((n, e) => n + e.harvested, 0);
  } finally {
    await c.close();
  }
}

async function startDaemon(name: string, warmSnapshotDelayMs: number): Promise<{ daemon: SpawnedDaemon; watch: string; socket: string; state: string }> {
  const { dir, watch } = scope.tempDir(name);
  const config = join(dir, 'config.json');
  writeFileSync(config, JSON.stringify({ warmSnapshotDelayMs }));
  const state = join(dir, 'state');
  const socket = join(dir, 's.sock');
  const daemon = await scope.daemon(['--config', config, '--watch', watch, '--socket', socket, '--state', state, '--budget', '200000']);
  return { daemon, watch, socket, state };
}

describe('warm snapshot writes', () => {
  it('a burst of harvests is not written on their path; shutdown writes it once, current and owner-only', async () => {
    const { daemon, watch, socket, state } = await startDaemon('snap-burst', 600_000);
    // the start-up snapshot of the empty store
    expect(writes(daemon)).toBe(1);
    const harvested = await harvestBurst(watch, socket);
    expect(harvested).toBe(N);
    expect(writes(daemon)).toBe(1);
    expect(snapshotTemplates(state).names).toEqual([]);
    daemon.proc.kill('SIGTERM');
    expect((await daemon.exited).code).toBe(0);
    expect(writes(daemon)).toBe(2);
    const together = daemon.logs.filter((l) => l.msg === 'warm snapshot changes written together');
    expect(together.map((l) => l['changes'])).toEqual([N]);
    const list = JSON.parse((await runCli(['warm', 'list', '--state', state, '--json'])).stdout) as { templates: { name: string }[] };
    const snap = snapshotTemplates(state);
    expect(snap.names.length).toBeGreaterThan(0);
    expect(snap.names).toEqual(list.templates.map((t) => t.name).sort());
    expect(snap.mode).toBe(0o600);
  });

  it('a running daemon writes the burst within the delay, every change in it', async () => {
    const { daemon, watch, socket, state } = await startDaemon('snap-delay', 300);
    expect(await harvestBurst(watch, socket)).toBe(N);
    // every harvest's change is written by some coalesced write while the daemon runs
    const sum = () => daemon.logs.filter((l) => l.msg === 'warm snapshot changes written together').reduce((n, l) => n + Number(l['changes']), 0);
    await daemon.waitForLog(() => sum() === N, 20_000, 'all changes written');
    expect(writes(daemon) - 1).toBeLessThanOrEqual(N);
    const list = JSON.parse((await runCli(['warm', 'list', '--state', state, '--json'])).stdout) as { templates: { name: string }[] };
    expect(snapshotTemplates(state).names).toEqual(list.templates.map((t) => t.name).sort());
    daemon.proc.kill('SIGTERM');
    expect((await daemon.exited).code).toBe(0);
  });
});
