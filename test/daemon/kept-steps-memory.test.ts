import { afterEach, describe, expect, it } from 'vitest';
import { mkdtempSync, rmSync, statSync, writeFileSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { pino } from 'pino';
import { KEPT_STEP_REBUILDS_AT_ONCE, SessionManager } from '../../src/daemon/sessions.js';
import { Archive, HeadroomLog, ModelSteps, PlanLog, openDb, type Db } from '../../src/store/index.js';
import { createTokenCounter } from '../../src/model/tokens.js';
import { createSummarizer } from '../../src/compact/index.js';
import { createOpenAIChatAdapter } from '../../src/ingest/adapters/openai-chat.js';
import { demoTranscript, demoTranscriptJsonl } from '../../src/demo/transcript.js';
import type { TranscriptEvent } from '../../src/model/messages.js';

// Memory at a restart when many sessions were opened with kept model steps: a session manager
// as the daemon makes it, over real SQLite and transcript files, fed the tailer's batches.

const silent = pino({ level: 'silent' });
const dirs: string[] = [];
const dbs: Db[] = [];
afterEach(() => {
  for (const db of dbs.splice(0)) if (db.open) db.close();
  for (const d of dirs.splice(0)) rmSync(d, { recursive: true, force: true });
});

function events(rounds: number, variant: string): TranscriptEvent[] {
  const adapter = createOpenAIChatAdapter();
  return demoTranscript({ rounds, variant }).flatMap((l, i) => adapter.parseLine(JSON.parse(JSON.stringify(l)) as Record<string, unknown>, i * 1000));
}

/** `n` sessions, each with a step kept at the end of its transcript; a memory budget that holds about one model. */
function fixture(n: number): { manager: SessionManager; files: { id: string; file: string; size: number; variant: string }[] } {
  const dir = mkdtempSync(join(tmpdir(), 'contextd-kept-mem-'));
  dirs.push(dir);
  const db = openDb(join(dir, 'contextd.db'));
  dbs.push(db);
  const modelSteps = new ModelSteps(db);
  const files = Array.from({ length: n }, (_, i) => {
    const id = `k${i}`;
    const variant = String.fromCharCode(97 + i);
    const file = join(dir, `${id}.jsonl`);
    writeFileSync(file, demoTranscriptJsonl({ rounds: 20, variant }));
    const size = statSync(file).size;
    modelSteps.append(id, 0, { kind: 'edits', planId: `p${i}`, offset: size });
    return { id, file, size, variant };
  });
  const manager = new SessionManager(
    { budgetTokens: 200_000, reserveRatio: 0.15, softWatermark: 0.6, hysteresis: 0.1, minPlanIntervalMs: 0, turnSliceMs: 0, memory: { maxSessionTokens: 5_000, releaseAfterMs: 60_000, idleReleaseMs: 300_000 } },
    { logger: silent, tokenCounter: createTokenCounter(), summarizer: createSummarizer({ kind: 'extractive' }, { logger: silent }), headroomLog: new HeadroomLog(db), archive: new Archive(db), plans: new PlanLog(db), modelSteps, hasSubscribers: () => false },
  );
  return { manager, files };
}

describe('sessions opened with kept model steps at a restart', () => {
  it('do not hold the decoded lines they wait with (the rebuild reads them from the transcript again)', async () => {
    const { manager, files } = fixture(3);
    for (const f of files) manager.enqueue(f.file, f.id, 'openai-chat', events(20, f.variant), f.size - 1, f.size - 1);
    await manager.settled();
    for (const f of files) {
      const s = manager.get(f.id);
      expect(s?.replayFrom).toBe(f.size);
      // every event pending here is dropped unread by replayKeptSteps: it only costs memory
      expect(s?.pending.reduce((n, p) => n + p.events.length, 0)).toBe(0);
    }
    manager.stopIngest();
  });

  it('are rebuilt a few at a time, not all at once, and the memory budget applies between them', async () => {
    const { manager, files } = fixture(6);
    let most = 0;
    let held = 0;
    let looking = true;
    const look = (): void => {
      most = Math.max(most, manager.all().filter((s) => s.restoring !== undefined).length);
      held = Math.max(held, manager.all().filter((s) => !s.released).length);
      if (looking) setImmediate(look);
    };
    look();
    for (const f of files) manager.enqueue(f.file, f.id, 'openai-chat', events(20, f.variant), f.size, f.size);
    await manager.settled();
    manager.steadyState();
    await manager.replayedAtStart();
    looking = false;
    expect(most).toBeGreaterThan(0);
    expect(most).toBeLessThanOrEqual(KEPT_STEP_REBUILDS_AT_ONCE);
    // models in memory stay within the budget (about one model) plus the rebuilds under way
    expect(held).toBeLessThanOrEqual(KEPT_STEP_REBUILDS_AT_ONCE);
    manager.stopIngest();
  });
});
