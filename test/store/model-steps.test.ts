import { afterEach, describe, expect, it } from 'vitest';
import { mkdtempSync, rmSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { ModelSteps, openDb, type Db } from '../../src/store/index.js';
import { keptStepSink, ReplayLog, type StepSink } from '../../src/daemon/replay-log.js';
import { silentLogger } from '../../src/util/logger.js';

const dirs: string[] = [];
const dbs: Db[] = [];
afterEach(() => {
  for (const db of dbs.splice(0)) db.close();
  for (const d of dirs.splice(0)) rmSync(d, { recursive: true, force: true });
});

function open(): { db: Db; steps: ModelSteps } {
  const dir = mkdtempSync(join(tmpdir(), 'contextd-steps-'));
  dirs.push(dir);
  const db = openDb(join(dir, 'c.db'));
  dbs.push(db);
  return { db, steps: new ModelSteps(db) };
}

function sinkOf(store: ModelSteps, sessionId: string): StepSink {
  return keptStepSink(store, sessionId, silentLogger());
}

describe('model steps kept across restarts', () => {
  it('reads back the steps of each session in order, and none for a session without', () => {
    const { steps } = open();
    steps.append('a', 0, { kind: 'edits', planId: 'p1', offset: 100 });
    steps.append('b', 0, { kind: 'rebase', offset: 7 });
    steps.append('a', 1, { kind: 'rebase', offset: 100 });
    steps.append('a', 2, { kind: 'edits', planId: 'p2', offset: 250 });
    expect(steps.load('a')).toEqual({ steps: [{ kind: 'edits', planId: 'p1', offset: 100 }, { kind: 'rebase', offset: 100 }, { kind: 'edits', planId: 'p2', offset: 250 }] });
    expect(steps.load('b')).toEqual({ steps: [{ kind: 'rebase', offset: 7 }] });
    expect(steps.load('c')).toBeUndefined();
    steps.clear('a');
    expect(steps.load('a')).toBeUndefined();
    expect(steps.load('b')).toBeDefined();
  });

  it('says why when the steps cannot be replayed: marked so, a step missing, a row that is no step', () => {
    const { db, steps } = open();
    steps.append('a', 0, { kind: 'edits', planId: 'p1', offset: 100 });
    steps.markUnreplayable('a', 'edits of plan p2 were applied at an unknown transcript offset');
    steps.append('a', 1, { kind: 'edits', planId: 'p3', offset: 300 });
    expect(steps.load('a')).toEqual({ unreplayable: 'edits of plan p2 were applied at an unknown transcript offset' });
    // a write that failed leaves a gap
    steps.append('b', 0, { kind: 'edits', planId: 'p1', offset: 100 });
    steps.append('b', 2, { kind: 'edits', planId: 'p3', offset: 300 });
    expect(steps.load('b')).toEqual({ unreplayable: 'model step 1 of session b is missing' });
    // an edits row without its plan
    db.prepare(`INSERT INTO model_steps (session_id, seq, kind, plan_id, offset) VALUES ('c', 0, 'edits', NULL, 5)`).run();
    expect(steps.load('c')).toEqual({ unreplayable: 'model step 0 of session c is not a step' });
  });

  it('a replay log writes its steps through: a new list replaces the one kept, a restored one goes on after it', () => {
    const { steps } = open();
    const first = new ReplayLog(sinkOf(steps, 's'));
    first.applied('p1', 10);
    first.rebased(20);
    first.applied('p2', 30);
    expect(steps.load('s')).toEqual({ steps: first.steps });

    // the next run restores them and appends after them
    const kept = steps.load('s');
    const restored = new ReplayLog(sinkOf(steps, 's'), kept && 'steps' in kept ? kept.steps : []);
    restored.applied('p3', 40);
    expect(steps.load('s')).toEqual({ steps: [...first.steps, { kind: 'edits', planId: 'p3', offset: 40 }] });

    // a list begun again (the model rebuilt from its transcript alone) drops the old one's tail
    const fresh = new ReplayLog(sinkOf(steps, 's'));
    fresh.applied('p9', 5);
    expect(steps.load('s')).toEqual({ steps: [{ kind: 'edits', planId: 'p9', offset: 5 }] });

    // steps out of order, or at an unknown offset, cannot be replayed: kept so
    fresh.applied('p10', 1);
    expect(fresh.unreplayable).toMatch(/follows one at 5/);
    expect(steps.load('s')).toEqual({ unreplayable: fresh.unreplayable });
    fresh.clear();
    expect(steps.load('s')).toBeUndefined();
  });

  it('a step whose write fails marks the session unreplayable, and when that write fails too the gap says so', () => {
    const { db, steps } = open();
    const warned: string[] = [];
    const log = { ...silentLogger(), warn: (_o: unknown, msg: string) => warned.push(msg) } as unknown as Parameters<typeof keptStepSink>[2];
    // SQLite refuses the writes as it would on a full disk (SQLITE_FULL is what the store then throws)
    db.exec(`CREATE TRIGGER refuse AFTER INSERT ON model_steps WHEN NEW.seq = 1 BEGIN SELECT RAISE(ABORT, 'database or disk is full'); END`);
    const log1 = new ReplayLog(keptStepSink(steps, 'a', log));
    log1.applied('p1', 10);
    log1.applied('p2', 20); // refused
    log1.applied('p3', 30);
    expect(warned).toEqual(['model step not kept: after a restart this session is rebuilt from its transcript alone (or without its latest edits)']);
    expect(steps.load('a')).toEqual({ unreplayable: expect.stringMatching(/^a model step could not be kept: .*disk is full/) });

    db.exec(`DROP TRIGGER refuse; CREATE TRIGGER refuse AFTER INSERT ON model_steps WHEN NEW.seq IN (1, -1) BEGIN SELECT RAISE(ABORT, 'database or disk is full'); END`);
    const log2 = new ReplayLog(keptStepSink(steps, 'b', log));
    log2.applied('p1', 10);
    log2.applied('p2', 20); // refused, and so is the mark
    db.exec('DROP TRIGGER refuse');
    log2.applied('p3', 30); // not written (never after a gap): the mark is tried again, and is written now
    expect(steps.load('b')).toEqual({ unreplayable: expect.stringMatching(/^a model step could not be kept: .*disk is full/) });
  });

  it('never joins an old list and a new one when the first step of the new list could not be written', () => {
    const { db, steps } = open();
    for (let i = 0; i < 3; i++) steps.append('a', i, { kind: 'edits', planId: `old${i}`, offset: 100 * (i + 1) });
    // the disk is full for a moment: the new list's first write (clear + append) and the mark all fail
    db.exec(`CREATE TRIGGER refuse_insert BEFORE INSERT ON model_steps BEGIN SELECT RAISE(ABORT, 'database or disk is full'); END;
             CREATE TRIGGER refuse_delete BEFORE DELETE ON model_steps BEGIN SELECT RAISE(ABORT, 'database or disk is full'); END;`);
    const sink = keptStepSink(steps, 'a', silentLogger());
    sink.append(0, { kind: 'rebase', offset: 50 });
    db.exec('DROP TRIGGER refuse_insert; DROP TRIGGER refuse_delete');
    sink.append(1, { kind: 'edits', planId: 'new1', offset: 60 });
    // refused (or the new list alone), never old0 + new1 + old2
    expect(steps.load('a')).toEqual({ unreplayable: expect.stringMatching(/^a model step could not be kept: .*disk is full/) });
  });
});
