import { afterEach, describe, expect, it } from 'vitest';
import { mkdtempSync, rmSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { pino } from 'pino';
import { SessionManager } from '../../src/daemon/sessions.js';
import { keptStepSink } from '../../src/daemon/replay-log.js';
import { Archive, HeadroomLog, ModelSteps, PlanLog, openDb, type Db, type ModelStep } from '../../src/store/index.js';
import { createTokenCounter } from '../../src/model/tokens.js';
import { createSummarizer } from '../../src/compact/index.js';
import { createOpenAIChatAdapter } from '../../src/ingest/adapters/openai-chat.js';
import { demoTranscript } from '../../src/demo/transcript.js';
import type { TranscriptEvent } from '../../src/model/messages.js';

// Review of b1de320 + ebcde12: defects found, each shown by a failing test.

const dirs: string[] = [];
const dbs: Db[] = [];
afterEach(() => {
  for (const db of dbs.splice(0)) if (db.open) db.close();
  for (const d of dirs.splice(0)) rmSync(d, { recursive: true, force: true });
});

function freshDb(): Db {
  const dir = mkdtempSync(join(tmpdir(), 'contextd-review-'));
  dirs.push(dir);
  const db = openDb(join(dir, 'contextd.db'));
  dbs.push(db);
  return db;
}

function events(rounds: number): TranscriptEvent[] {
  const adapter = createOpenAIChatAdapter();
  return demoTranscript({ rounds }).flatMap((l, i) => adapter.parseLine(JSON.parse(JSON.stringify(l)) as Record<string, unknown>, i * 1000));
}

const silent = pino({ level: 'silent' });

describe('kept model steps (review)', () => {
  it('survive a shutdown during the first scan that drops a session’s queued lines before any was applied', async () => {
    const db = freshDb();
    const modelSteps = new ModelSteps(db);
    const kept: ModelStep[] = [{ kind: 'edits', planId: 'p1', offset: 4000 }];
    modelSteps.append('a', 0, kept[0] as ModelStep);
    const manager = new SessionManager(
      { budgetTokens: 20_000, reserveRatio: 0.15, softWatermark: 0.6, hysteresis: 0.1, minPlanIntervalMs: 0, turnSliceMs: 0 },
      { logger: silent, tokenCounter: createTokenCounter(), summarizer: createSummarizer({ kind: 'extractive' }, { logger: silent }), headroomLog: new HeadroomLog(db), archive: new Archive(db), plans: new PlanLog(db), modelSteps },
    );
    // First scan after a restart: the transcript's first batch is queued (its turn not come yet)...
    manager.enqueue('/t/a.jsonl', 'a', 'openai-chat', events(3), 1000, 1000);
    // ...when SIGTERM arrives: Daemon.stop drops the queued lines, and Daemon.start goes on to settled/steadyState.
    manager.stopIngest();
    await manager.settled();
    manager.steadyState();
    await manager.replayedAtStart();
    // Nothing says the transcript was cut: the next start must still replay the agent's edits.
    expect(modelSteps.load('a')).toEqual({ steps: kept });
  });

  it('never splice an old list with a new one when the first step of the new list could not be written', () => {
    const db = freshDb();
    const store = new ModelSteps(db);
    // an old list of three steps kept for the session
    for (let i = 0; i < 3; i++) store.append('a', i, { kind: 'edits', planId: `old${i}`, offset: 100 * (i + 1) });
    // the disk is full for a moment: the new list's first write (clear + append) and the marker both fail
    let failing = true;
    const flaky = new Proxy(store, {
      get(target, prop, receiver) {
        const v = Reflect.get(target, prop, receiver) as unknown;
        if (typeof v !== 'function') return v;
        return (...args: unknown[]) => {
          if (failing && (prop === 'clear' || prop === 'append' || prop === 'markUnreplayable')) throw new Error('SQLITE_FULL: database or disk is full');
          return (v as (...a: unknown[]) => unknown).apply(target, args);
        };
      },
    });
    const sink = keptStepSink(flaky, 'a', silent);
    sink.append(0, { kind: 'rebase', offset: 50 });
    failing = false;
    sink.append(1, { kind: 'edits', planId: 'new1', offset: 60 });
    // What is read back must be refused (or be the new list), never old0 + new1 + old2.
    const loaded = store.load('a');
    expect(loaded !== undefined && 'steps' in loaded ? loaded.steps.map((s) => (s.kind === 'edits' ? s.planId : 'rebase')) : 'refused').toBe('refused');
  });
});
