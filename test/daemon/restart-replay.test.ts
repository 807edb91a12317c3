import { afterEach, describe, expect, it } from 'vitest';
import { appendFileSync, mkdtempSync, readFileSync, rmSync, statSync, utimesSync, writeFileSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { Writable } from 'node:stream';
import { pino, type Logger } from 'pino';
import { Daemon } from '../../src/daemon/daemon.js';
import type { DaemonStatus } from '../../src/daemon/api.js';
import { demoTranscript, demoTranscriptJsonl } from '../../src/demo/transcript.js';
import { ContextdClient } from '../../src/ipc/client.js';
import { Archive, HeadroomLog, ModelSteps, PlanLog, openDb, type Db, type ModelStep } from '../../src/store/index.js';
import { SessionManager } from '../../src/daemon/sessions.js';
import { createTokenCounter } from '../../src/model/tokens.js';
import { createSummarizer } from '../../src/compact/index.js';
import { createOpenAIChatAdapter } from '../../src/ingest/adapters/openai-chat.js';
import type { TranscriptEvent } from '../../src/model/messages.js';
import { stateDbPath } from '../../src/store/paths.js';
import { inState, sessionsDir, startDaemon, until } from './helpers.js';

// A restart of the daemon (stop, start on the same state and transcripts) with real parts:
// the daemon in this process, its socket, SQLite state and chokidar watching the folder.

const dirs: string[] = [];
const daemons: Daemon[] = [];
const clients: ContextdClient[] = [];
const dbs: Db[] = [];
afterEach(async () => {
  for (const c of clients.splice(0)) await c.close();
  for (const d of daemons.splice(0)) await d.stop();
  for (const db of dbs.splice(0)) if (db.open) db.close();
  for (const d of dirs.splice(0)) rmSync(d, { recursive: true, force: true });
});

interface Started {
  readonly c: ContextdClient;
  readonly daemon: Daemon;
  /** What the daemon logged (pino JSON lines). */
  readonly logs: Record<string, unknown>[];
}

async function start(dir: string): Promise<Started> {
  const logs: Record<string, unknown>[] = [];
  const sink = new Writable({
    write(chunk: Buffer, _enc, done) {
      for (const line of chunk.toString().split('\n')) if (line) logs.push(JSON.parse(line) as Record<string, unknown>);
      done();
    },
  });
  const started = await startDaemon(dir, pino({ level: 'info' }, sink));
  daemons.push(started.daemon);
  clients.push(started.c);
  return { c: started.c, daemon: started.daemon, logs };
}

async function stop(s: Started): Promise<void> {
  await s.c.close();
  clients.splice(clients.indexOf(s.c), 1);
  await s.daemon.stop();
  daemons.splice(daemons.indexOf(s.daemon), 1);
}

async function sessionRow(c: ContextdClient, name: string): Promise<DaemonStatus['sessions'][number]> {
  return until(`session ${name}`, async () => ((await c.status()) as unknown as DaemonStatus).sessions.find((r) => r.file.endsWith(`/${name}.jsonl`)));
}

const appended = (n: number): string =>
  `${JSON.stringify({ role: 'user', content: `Round ${n}: also round the tax line to 2 decimals and say which tests cover it.` })}\n` +
  `${JSON.stringify({ role: 'assistant', content: `Done for round ${n}: the tax line is rounded; tests/tax.test.ts covers it.` })}\n`;

/** A session (in a new folder) the agent edited twice: part of one plan, then (after an append) all of another. */
async function editedSession(prefix: string): Promise<{ s: Started; id: string; file: string; dir: string }> {
  const dir = sessionsDir(prefix, { edited: demoTranscriptJsonl({ rounds: 9, variant: 'r' }) });
  dirs.push(dir);
  const file = join(dir, 'sessions', 'edited.jsonl');
  const s = await start(dir);
  const id = (await sessionRow(s.c, 'edited')).sessionId;
  const first = await s.c.compact(id, { targetHeadroom: 0.9999 });
  expect(first.edits.length).toBeGreaterThan(2);
  await s.c.ack({ planId: first.planId, applied: true, editIds: first.edits.slice(1).map((e) => e.editId) });
  const before = (await s.c.headroom(id)).tokens;
  appendFileSync(file, appended(0));
  await until('the append read', async () => ((await s.c.headroom(id)).tokens > before ? true : undefined));
  const second = await s.c.compact(id, { targetHeadroom: 0.9999 });
  expect(second.edits.length).toBeGreaterThan(0);
  await s.c.ack({ planId: second.planId, applied: true });
  return { s, id, file, dir };
}

/** Sections as ids, tokens and whether compacted: what an edit replayed must give back. */
const shape = (xs: readonly { id: string; tokens: number; compacted?: boolean }[]): unknown[] => xs.map((x) => [x.id, x.tokens, x.compacted === true]);

function freshDb(): Db {
  const dir = mkdtempSync(join(tmpdir(), 'contextd-restart-db-'));
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

/** The step kept for each session of the session-manager tests: a plan applied at offset 4000 (one the plan log does not hold). */
const KEPT: ModelStep = { kind: 'edits', planId: 'p1', offset: 4000 };

/**
 * A session manager as the daemon makes it, over a fresh state in which `KEPT` is kept for
 * session `id`, and that session's transcript `id.jsonl` (longer than KEPT's offset); no
 * daemon, no tailer: the tests hand it the tailer's batches.
 */
function keptStepFixture(id: string, logger: Logger = silent): { manager: SessionManager; modelSteps: ModelSteps; file: string } {
  const db = freshDb();
  const modelSteps = new ModelSteps(db);
  const file = join(dirs.at(-1) as string, `${id}.jsonl`);
  writeFileSync(file, demoTranscriptJsonl({ rounds: 3 }));
  expect(statSync(file).size).toBeGreaterThan(KEPT.offset);
  modelSteps.append(id, 0, KEPT);
  const manager = new SessionManager(
    { budgetTokens: 20_000, reserveRatio: 0.15, softWatermark: 0.6, hysteresis: 0.1, minPlanIntervalMs: 0, turnSliceMs: 0 },
    { logger, tokenCounter: createTokenCounter(), summarizer: createSummarizer({ kind: 'extractive' }, { logger: silent }), headroomLog: new HeadroomLog(db), archive: new Archive(db), plans: new PlanLog(db), modelSteps },
  );
  return { manager, modelSteps, file };
}

describe('a restarted daemon and the edits agents applied', () => {
  it('rebuilds a session with the edits its agent applied: the same sections, headroom and next plan, and later acks are kept for the next restart', async () => {
    const { s, id, file, dir } = await editedSession('contextd-restart-');
    const sections = await s.c.sections(id);
    const headroom = await s.c.headroom(id);
    const next = await s.c.compact(id, { targetHeadroom: 0.9999, dryRun: true });
    expect(sections.filter((x) => x.compacted).length).toBeGreaterThan(2);
    await stop(s);

    const again = await start(dir);
    // ready (start resolved) means the model is rebuilt: no wait
    const row = ((await again.c.status()) as unknown as DaemonStatus).sessions.find((r) => r.sessionId === id);
    expect(row?.inMemory).toBe(true);
    expect(await again.c.sections(id)).toEqual(sections);
    expect(await again.c.headroom(id)).toEqual(headroom);
    expect((await again.c.compact(id, { targetHeadroom: 0.9999, dryRun: true })).edits).toEqual(next.edits);
    expect(again.logs.some((l) => l['msg'] === 'session rebuilt from its transcript and the model steps kept for it' && l['plansReplayed'] === 2)).toBe(true);

    // An edit applied after the restart is kept too, after the two replayed ones.
    appendFileSync(file, appended(1));
    await until('the append read', async () => ((await again.c.headroom(id)).tokens > headroom.tokens ? true : undefined));
    const third = await again.c.compact(id, { targetHeadroom: 0.9999 });
    await again.c.ack({ planId: third.planId, applied: true });
    const sections3 = await again.c.sections(id);
    const headroom3 = await again.c.headroom(id);
    await stop(again);

    const third3 = await start(dir);
    expect(await third3.c.sections(id)).toEqual(sections3);
    expect(await third3.c.headroom(id)).toEqual(headroom3);
    expect(third3.logs.some((l) => l['plansReplayed'] === 3)).toBe(true);
  }, 90_000);

  it('rebuilds every edited session at a restart, a few at a time, each with its own edits', async () => {
    const names = ['m0', 'm1', 'm2', 'm3', 'm4'];
    const dir = sessionsDir('contextd-restart-many-', Object.fromEntries(names.map((n, i) => [n, demoTranscriptJsonl({ rounds: 6 + i, variant: String.fromCharCode(104 + i) })])));
    dirs.push(dir);
    const s = await start(dir);
    const before = new Map<string, unknown>();
    for (const n of names) {
      const id = (await sessionRow(s.c, n)).sessionId;
      const plan = await s.c.compact(id, { targetHeadroom: 0.9999 });
      await s.c.ack({ planId: plan.planId, applied: true });
      before.set(id, shape(await s.c.sections(id)));
    }
    await stop(s);
    const again = await start(dir);
    for (const [id, sections] of before) expect(shape(await again.c.sections(id))).toEqual(sections);
    expect(again.logs.filter((l) => l['msg'] === 'session rebuilt from its transcript and the model steps kept for it' && l['plansReplayed'] === 1)).toHaveLength(names.length);
  }, 90_000);

  it('builds a session from its transcript alone when its transcript was cut before its last step while the daemon was stopped, says so, and drops the steps', async () => {
    const { s, id, file, dir } = await editedSession('contextd-restart-cut-');
    const edited = await s.c.headroom(id);
    await stop(s);
    const lines = readFileSync(file, 'utf8').split('\n');
    writeFileSync(file, lines.slice(0, lines.length - 8).join('\n') + '\n'); // the append and more: before the second step

    const cut = await start(dir);
    expect((await cut.c.sections(id)).some((x) => x.compacted)).toBe(false);
    // the sections the edits replaced are counted again: over-stated, never under-stated
    expect((await cut.c.headroom(id)).tokens).toBeGreaterThan(edited.tokens);
    const dropped = cut.logs.find((l) => l['msg'] === 'kept model steps dropped: the session is built from its transcript alone, without the edits the agent applied');
    expect(dropped?.['why']).toMatch(/^the transcript \(\d+ bytes\) ends before the offset of its last step \(\d+\)$/);
    await stop(cut);
    expect(inState(dir, (db) => new ModelSteps(db).load(id))).toBeUndefined();
  }, 90_000);

  it('does not replace sections by summaries of other text when the transcript was rewritten while the daemon was stopped', async () => {
    const { s, id, file, dir } = await editedSession('contextd-restart-rewritten-');
    await stop(s);
    // longer than before, other lines before the steps' offsets: the plans' section ids exist, holding other text
    writeFileSync(file, demoTranscriptJsonl({ rounds: 12, variant: 'q' }));
    const other = await start(dir);
    expect((await other.c.sections(id)).some((x) => x.compacted)).toBe(false);
    const failed = other.logs.find((l) => l['msg'] === 'session opened with kept model steps rebuilt from its transcript WITHOUT the edits the agent applied: they could not be replayed from the plan log');
    expect(failed?.['why']).toMatch(/an edit did not apply again: .*replaced \d+ tokens of messages/);
  }, 90_000);

  it('replays the kept steps of a session that was not live at the restart once its agent resumes it', async () => {
    const { s, id, file, dir } = await editedSession('contextd-restart-resumed-');
    const before = shape(await s.c.sections(id));
    await stop(s);
    // untouched for two hours: the first scan leaves it unread (not live)
    const old = new Date(Date.now() - 2 * 3600_000);
    utimesSync(file, old, old);
    const later = await start(dir);
    expect(((await later.c.status()) as unknown as DaemonStatus).sessions.some((r) => r.sessionId === id)).toBe(false);
    // the agent resumes it: the transcript is read from its start, the kept steps replayed, the new lines applied after them
    appendFileSync(file, appended(2));
    await sessionRow(later.c, 'edited');
    const after = shape(await later.c.sections(id));
    expect(after.slice(0, before.length)).toEqual(before);
    expect(after.length).toBeGreaterThan(before.length);
    expect(later.logs.some((l) => l['msg'] === 'session rebuilt from its transcript and the model steps kept for it' && l['plansReplayed'] === 2)).toBe(true);
  }, 90_000);

  it('forgets the kept steps of a session whose transcript is removed', async () => {
    const { s, id, file, dir } = await editedSession('contextd-restart-removed-');
    const db = openDb(stateDbPath(join(dir, 'state')));
    try {
      expect(new ModelSteps(db).load(id)).toEqual({ steps: [expect.objectContaining({ kind: 'edits' }), expect.objectContaining({ kind: 'edits' })] });
      rmSync(file);
      await until('the session closed', async () => (((await s.c.status()) as unknown as DaemonStatus).sessions.length === 0 ? true : undefined));
      expect(new ModelSteps(db).load(id)).toBeUndefined();
    } finally {
      db.close();
    }
  }, 60_000);

  it('keeps the steps of a session when a shutdown during the first scan drops its queued lines before any was applied', async () => {
    const { manager, modelSteps, file } = keptStepFixture('a');
    // First scan after a restart: the transcript's first batch is queued (its turn not come yet)...
    manager.enqueue(file, 'a', 'openai-chat', events(3), 1000, 1000);
    // ...when SIGTERM arrives: Daemon.stop drops the queued lines, and Daemon.start goes on to settled/steadyState.
    manager.stopIngest();
    await manager.settled();
    manager.steadyState();
    await manager.replayedAtStart();
    // Nothing says the transcript was cut: the next start must still replay the agent's edits.
    expect(modelSteps.load('a')).toEqual({ steps: [KEPT] });
  });

  it('rebuilds a session opened with kept steps once the daemon runs from what was read when its transcript is rewritten shorter than the last step as it opens', async () => {
    const logs: Record<string, unknown>[] = [];
    const logger = pino({ level: 'info' }, new Writable({ write: (c: Buffer, _e, done) => (logs.push(JSON.parse(c.toString()) as Record<string, unknown>), done()) }));
    const { manager, modelSteps, file } = keptStepFixture('b', logger);
    manager.steadyState();
    // the file is long enough as it is opened, but its lines stop at 1000: it is rewritten shorter in place
    manager.enqueue(file, 'b', 'openai-chat', events(1), 1000, 1000);
    const whole = readFileSync(file);
    await new Promise((r) => setTimeout(r, 100));
    writeFileSync(file, whole.subarray(0, whole.indexOf('\n', 900) + 1));
    const s = await manager.requireLoaded('b'); // waits for the stall (REPLAY_STALL_MS twice), then the rebuild
    expect(s.released).toBeUndefined();
    expect(s.model.messages().length).toBeGreaterThan(0);
    expect(logs.some((l) => l['msg'] === 'session opened with kept model steps rebuilt from its transcript WITHOUT the edits the agent applied: they could not be replayed from the plan log')).toBe(true);
    expect(modelSteps.load('b')).toBeUndefined();
    manager.stopIngest();
  }, 30_000);

  it('keeps waiting for the kept steps\' offset while the transcript is long enough and its lines are only slow to come', async () => {
    const { manager, modelSteps, file } = keptStepFixture('c');
    manager.steadyState();
    const s = manager.enqueue(file, 'c', 'openai-chat', events(1), 1000, 1000);
    // held back (backpressure, a slow disk) for more than two looks: not taken for a short transcript
    await new Promise((r) => setTimeout(r, 11_000));
    expect(s.replayFrom).toBe(KEPT.offset);
    expect(modelSteps.load('c')).toEqual({ steps: [KEPT] });
    manager.stopIngest();
  }, 30_000);

  it('keeps the steps, and lets a request waiting for them go on, when the daemon stops once running before a line was applied', async () => {
    const { manager, modelSteps, file } = keptStepFixture('d');
    manager.steadyState();
    const s = manager.enqueue(file, 'd', 'openai-chat', events(3), 1000, 1000);
    const waiting = manager.requireLoaded('d').then(
      () => 'answered',
      () => 'refused',
    );
    manager.stopIngest(); // Daemon.stop: the queued lines are dropped
    expect(s.replayFrom).toBeUndefined(); // nothing waits for the stall watch any more
    expect(['answered', 'refused']).toContain(await waiting);
    expect(modelSteps.load('d')).toEqual({ steps: [KEPT] }); // the lines dropped do not make the transcript short
    // a read that goes on as the daemon stops opens no wait either
    modelSteps.append('e', 0, KEPT);
    const late = manager.enqueue(file, 'e', 'openai-chat', events(3), 1000, 1000);
    expect(late.replayFrom).toBeUndefined();
    expect(modelSteps.load('e')).toEqual({ steps: [KEPT] });
  }, 30_000);
});
