import { afterEach, describe, expect, it, vi } from 'vitest';
import Database from 'better-sqlite3';
import { mkdtempSync, renameSync, rmSync, statSync, writeFileSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { Writable } from 'node:stream';
import * as http from 'node:http';
import type { AddressInfo } from 'node:net';
import { pino } from 'pino';
import { SessionManager, type ArchiveFilter } from '../../src/daemon/sessions.js';
import { Archive, HeadroomLog, PlanLog, openDb, type Db } from '../../src/store/index.js';
import { createTokenCounter, type TokenCounter } from '../../src/model/tokens.js';
import { applyPlan, createSummarizer, type Plan, type Summarizer } from '../../src/compact/index.js';
import { createOpenAIChatAdapter, normalizeOpenAIMessages } from '../../src/ingest/adapters/openai-chat.js';
import { demoTranscript, demoTranscriptJsonl } from '../../src/demo/transcript.js';
import type { TranscriptEvent } from '../../src/model/messages.js';
import type { ReadIdentity } from '../../src/ingest/index.js';
import { redactMessages } from '../../src/harvest/index.js';
import { countedSummarizer } from '../compact/helpers.js';
import { expectCollected, failingCounter } from './helpers.js';
import { zoneOf, type MemoryBudget } from '../../src/daemon/lifecycle.js';

const dirs: string[] = [];
const dbs: Db[] = [];
const servers: http.Server[] = [];
const managers: SessionManager[] = [];
afterEach(async () => {
  // plans still in flight (a held summarizer) end before their database closes
  for (const m of managers.splice(0)) await m.drain();
  await Promise.all(servers.splice(0).map((x) => new Promise<void>((r) => { x.closeAllConnections(); x.close(() => r()); })));
  for (const db of dbs.splice(0)) if (db.open) db.close();
  for (const d of dirs.splice(0)) rmSync(d, { recursive: true, force: true });
});

function setup(opts: { tokenCounter?: TokenCounter; budgetTokens?: number; full?: boolean; redact?: boolean; archiveFilter?: ArchiveFilter; now?: () => number; idleTimeoutMs?: number; maxConcurrentPlans?: number; summarizer?: Summarizer; memory?: MemoryBudget; tailedFile?: (file: string) => ReadIdentity | undefined; archived?: () => void; hasSubscribers?: (sessionId: string) => boolean } = {}) {
  const dir = mkdtempSync(join(tmpdir(), 'contextd-sessions-'));
  dirs.push(dir);
  const db = openDb(join(dir, 'contextd.db'));
  dbs.push(db);
  const lines: Record<string, unknown>[] = [];
  const sink = new Writable({
    write(chunk: Buffer, _enc, cb) {
      for (const l of chunk.toString().split('\n').filter(Boolean)) lines.push(JSON.parse(l) as Record<string, unknown>);
      cb();
    },
  });
  const logger = pino({ level: 'debug' }, sink);
  const freed: number[] = [];
  const archive = new Archive(db);
  const plans = new PlanLog(db);
  if (opts.archived) {
    // the real archive, with `archived` run right after each write: what lands in the step before publishing
    const put = archive.putMany.bind(archive);
    const after = opts.archived;
    archive.putMany = (entries) => {
      put(entries);
      after();
    };
  }
  const manager = new SessionManager(
    // turnSliceMs 0: one turn per event-loop iteration, so tests assert order, never time.
    { budgetTokens: opts.budgetTokens ?? 20_000, reserveRatio: 0.15, softWatermark: 0.6, hysteresis: 0.1, minPlanIntervalMs: 0, turnSliceMs: 0, ...(opts.idleTimeoutMs !== undefined ? { idleTimeoutMs: opts.idleTimeoutMs } : {}), ...(opts.maxConcurrentPlans !== undefined ? { maxConcurrentPlans: opts.maxConcurrentPlans } : {}), ...(opts.memory ? { memory: opts.memory } : {}) },
    { logger, ...(opts.now ? { now: opts.now } : {}), tokenCounter: opts.tokenCounter ?? createTokenCounter(), summarizer: opts.summarizer ?? createSummarizer({ kind: 'extractive' }, { logger }), headroomLog: new HeadroomLog(db), archive, plans, memoryFreed: () => freed.push(1), ...(opts.archiveFilter ? { archiveFilter: opts.archiveFilter } : opts.redact ? { archiveFilter: redactMessages } : {}), ...(opts.tailedFile ? { tailedFile: opts.tailedFile } : {}), ...(opts.hasSubscribers ? { hasSubscribers: opts.hasSubscribers } : {}) },
  );
  managers.push(manager);
  if (opts.full) {
    // A real SQLITE_FULL from here on: the file may not grow past its current size.
    db.exec('CREATE TABLE IF NOT EXISTS filler (x BLOB)');
    db.pragma(`max_page_count = ${db.pragma('page_count', { simple: true }) as number}`);
    // Use up the free space left in the last pages, so the very next write fails.
    expect(() => {
      for (;;) db.prepare('INSERT INTO filler VALUES (zeroblob(512))').run();
    }).toThrow(/full/);
    expect(() => {
      for (;;) db.prepare(`INSERT INTO headroom_samples (session_id, at, tokens, total, reserve_ratio, headroom, sections, reason) VALUES ('x', 0, 0, 1, 0.15, 1, 0, 'filler')`).run();
    }).toThrow(/full/);
  }
  return { db, lines, manager, freed, plans };
}

function events(rounds: number): TranscriptEvent[] {
  const adapter = createOpenAIChatAdapter();
  return demoTranscript({ rounds }).flatMap((l, i) => adapter.parseLine(JSON.parse(JSON.stringify(l)) as Record<string, unknown>, i * 1000));
}

function nextPlan(manager: SessionManager): Promise<Plan> {
  return new Promise((resolve) => manager.once('plan', (_s, plan) => resolve(plan)));
}

/** One more tool call and its result for session `k`-th change, with ids no other event uses. */
function extra(k: number): TranscriptEvent[] {
  const adapter = createOpenAIChatAdapter();
  const pair = demoTranscript({ rounds: 2, variant: 'q' }).filter((l) => l.role === 'tool' || l.tool_calls).slice(0, 2);
  return pair.flatMap((l, j) => {
    const line = { ...l, tool_call_id: l.tool_call_id ? `${l.tool_call_id}_x${k}` : undefined, tool_calls: l.tool_calls?.map((t) => ({ ...t, id: `${t.id}_x${k}` })) };
    return adapter.parseLine(JSON.parse(JSON.stringify(line)) as Record<string, unknown>, 10_000_000 + k * 10 + j);
  });
}

describe('SessionManager', () => {
  it('plans sessions in turn: a session that keeps changing waits behind the others, and I/O runs between plans', async () => {
    // One plan slot: plans wait in line for it, in the order they came due.
    const { manager } = setup({ maxConcurrentPlans: 1 });
    const order: string[] = [];
    let aChanges = 0;
    const done = new Promise<void>((resolve) => {
      manager.on('plan', (s) => {
        order.push(s.sessionId);
        // 'a' is busy: its transcript grows again while its plan is being published.
        if (s.sessionId === 'a' && aChanges < 4) manager.ingest('/t/a.jsonl', 'a', 'openai-chat', extra(aChanges++));
        if (order.filter((x) => x !== 'io').length === 7) resolve();
      });
    });
    manager.ingest('/t/a.jsonl', 'a', 'openai-chat', events(10));
    manager.ingest('/t/b.jsonl', 'b', 'openai-chat', events(10));
    manager.ingest('/t/c.jsonl', 'c', 'openai-chat', events(10));
    // Queued before the first turn: a plan yields to the event loop between its steps, so this
    // runs before even the first plan is finished.
    setImmediate(() => order.push('io'));
    await done;
    // 'a' came due again while 'b' and 'c' waited for the slot: it waits behind them.
    expect(order).toEqual(['io', 'a', 'b', 'c', 'a', 'a', 'a', 'a']);
    expect(aChanges).toBe(4);
  });

  it('plans past the soft watermark, archives before publishing, and follows an ack', async () => {
    const { manager, db } = setup();
    const planned = nextPlan(manager);
    const s = manager.ingest('/t/a.jsonl', 'a', 'openai-chat', events(10));
    const plan = await planned;
    expect(plan.edits.length).toBeGreaterThan(0);
    const archive = new Archive(db);
    for (const e of plan.edits) expect(archive.get(e.handle)?.messages.length).toBeGreaterThan(0);
    expect(new PlanLog(db).get(plan.planId)?.status).toBe('proposed');
    const before = s.model.tokens();
    const { headroom } = manager.acknowledge(plan.planId, true, undefined, undefined);
    expect(s.model.tokens()).toBeLessThan(before);
    expect(headroom).toBe(s.model.headroom().headroom);
    expect(new PlanLog(db).get(plan.planId)?.status).toBe('applied');
    expect(() => manager.acknowledge(plan.planId, true, undefined, undefined)).toThrow(/plan "p_\w+" is applied/);
  });

  it('writes an edit proposed again to the archive once: its row names the plan that proposed it first, then the plan whose edit the agent applied', async () => {
    const { manager, db } = setup();
    // every write to an archive row, counted by SQLite itself (temp triggers on this connection)
    db.exec(`CREATE TEMP TABLE archive_writes (handle TEXT, kind TEXT);
      CREATE TEMP TRIGGER count_archive_inserts AFTER INSERT ON archive BEGIN INSERT INTO archive_writes VALUES (new.handle, 'insert'); END;
      CREATE TEMP TRIGGER count_archive_updates AFTER UPDATE ON archive BEGIN INSERT INTO archive_writes VALUES (new.handle, 'update'); END;`);
    const writes = (kind: string): string[] => (db.prepare('SELECT handle FROM archive_writes WHERE kind = ?').pluck().all(kind) as string[]).sort();
    const planned = nextPlan(manager);
    manager.ingest('/t/a.jsonl', 'a', 'openai-chat', events(10));
    const first = await planned;
    manager.acknowledge(first.planId, false, undefined, 'not now');
    // asked for again (a manual plan proposes what was declined): the same sections, the same handles
    const again = await manager.compactNow('a', undefined, false);
    const firstHandles = new Set(first.edits.map((e) => e.handle));
    const shared = again.edits.filter((e) => firstHandles.has(e.handle));
    expect(shared.length).toBeGreaterThan(0);
    const handles = [...new Set([...first.edits, ...again.edits].map((e) => e.handle))].sort();
    expect(writes('insert')).toEqual(handles);
    expect(writes('update')).toEqual([]);
    const archive = new Archive(db);
    for (const e of shared) expect(archive.get(e.handle)).toMatchObject({ planId: first.planId, messages: expect.arrayContaining([expect.anything()]) as unknown });
    manager.acknowledge(again.planId, true, undefined, undefined);
    expect(writes('update')).toEqual(again.edits.map((e) => e.handle).sort());
    for (const e of again.edits) expect(archive.get(e.handle)).toMatchObject({ planId: again.planId, editId: e.editId, reason: e.reason, createdAt: again.createdAt });
  });

  it('keeps ingesting when the disk is full, and publishes no plan whose originals could not be archived', async () => {
    const { manager, lines } = setup({ full: true });
    let published = 0;
    manager.on('plan', () => published++);
    const s = manager.ingest('/t/b.jsonl', 'b', 'openai-chat', events(10));
    // Plans run from a queue after a turn of the event loop: wait for the failed one.
    await vi.waitFor(() => expect(lines.some((l) => l['msg'] === 'planning failed; will retry when the session changes')).toBe(true), { timeout: 10_000 });
    await manager.drain();
    expect(s.model.tokens()).toBeGreaterThan(10_000);
    expect(lines.some((l) => l['msg'] === 'headroom sample not stored; continuing' && l['code'] === 'STORE_FULL')).toBe(true);
    expect(lines.some((l) => l['msg'] === 'planning failed; will retry when the session changes' && l['code'] === 'STORE_FULL')).toBe(true);
    expect(published).toBe(0);
  });

  it('logs the numbers behind each headroom line, and a reset rebuilds; forgetting a session asks for a collection', () => {
    const { manager, lines, freed } = setup();
    manager.ingest('/t/c.jsonl', 'c', 'openai-chat', events(1));
    const h = lines.find((l) => l['msg'] === 'headroom');
    expect(h).toMatchObject({ sessionId: 'c', total: 20_000, reason: 'start', file: '/t/c.jsonl' });
    expect(typeof h?.['tokens']).toBe('number');
    manager.resetSession('/t/c.jsonl', 'c', 'truncated');
    expect(manager.get('c')?.model.tokens()).toBe(0);
    expect(freed).toHaveLength(0);
    manager.removeSession('c');
    expect(manager.get('c')).toBeUndefined();
    expect(freed).toHaveLength(1);
  });

  it('a budget change on reload expires open plans; a reload that changes nothing keeps them', async () => {
    const { manager, db } = setup();
    const planned = nextPlan(manager);
    manager.ingest('/t/d.jsonl', 'd', 'openai-chat', events(10));
    const plan = await planned;
    const same = { budgetTokens: 20_000, reserveRatio: 0.15, softWatermark: 0.6, hysteresis: 0.1, minPlanIntervalMs: 0, turnSliceMs: 0 };
    manager.reconfigure(same);
    expect(manager.openPlanCount('d')).toBe(1);
    manager.reconfigure({ ...same, budgetTokens: 30_000 });
    expect(manager.openPlanCount('d')).toBe(0);
    expect(() => manager.acknowledge(plan.planId, true, undefined, undefined)).toThrow(/expired/);
    expect(new PlanLog(db).get(plan.planId)?.status).toBe('expired');
    await manager.drain();
  });

  it('expires open plans when the agent rewrites its own context', async () => {
    const { manager } = setup();
    const planned = nextPlan(manager);
    manager.ingest('/t/e.jsonl', 'e', 'openai-chat', events(10));
    const plan = await planned;
    manager.ingest('/t/e.jsonl', 'e', 'openai-chat', [{ type: 'reset', reason: 'compacted' }]);
    expect(() => manager.acknowledge(plan.planId, true, undefined, undefined)).toThrow(/expired/);
    await manager.drain();
  });

  it('archives originals with secrets redacted by the template-store rules, and says what was redacted', async () => {
    const { manager, db } = setup({ redact: true });
    // A made-up key in the AWS access-key shape (planted in every tool output).
    const key = 'AKIA' + 'Z7QW3ERT5YU8IOPL';
    const planted = events(10).map((e) =>
      e.type === 'message' && e.message.role === 'tool' ? { ...e, message: { ...e.message, text: `${e.message.text}\naws_access_key_id = ${key}` } } : e,
    );
    const planned = nextPlan(manager);
    manager.ingest('/t/k.jsonl', 'k', 'openai-chat', planted);
    const plan = await planned;
    const rows = db.prepare('SELECT messages, redactions FROM archive').all() as { messages: string; redactions: string }[];
    expect(rows.length).toBeGreaterThan(0);
    expect(rows.some((r) => JSON.parse(r.redactions).length > 0)).toBe(true);
    for (const r of rows) expect(r.messages).not.toContain(key);
    const withFindings = plan.edits.map((e) => new Archive(db).get(e.handle)).find((a) => (a?.redactions ?? []).length > 0);
    expect(withFindings?.redactions?.[0]).toMatchObject({ rule: expect.any(String), count: expect.any(Number) });
    expect(JSON.stringify(withFindings?.messages)).toContain('[REDACTED:');
    await manager.drain();
  });

  it('keeps no copy of a tailed session beside its model (harvest reads the transcript); a session fed over the socket keeps what the agent sent', async () => {
    const { manager } = setup();
    const tailed = manager.ingest('/t/a.jsonl', 'a', 'openai-chat', events(10), 1);
    for (let k = 0; k < 20; k++) manager.ingest('/t/a.jsonl', 'a', 'openai-chat', extra(k), 2 + k);
    expect(tailed.model.messages().length).toBeGreaterThan(20);
    expect(tailed.harvestsFromTranscript).toBe(true);
    expect(tailed.history.snapshot('a').messages).toHaveLength(0);
    expect(tailed.harvestEndOffset()).toBe(21);
    const messages = events(4).flatMap((e) => (e.type === 'message' ? [e.message] : []));
    const { session: fed } = manager.feed('f', messages, undefined);
    expect(fed.harvestsFromTranscript).toBe(false);
    expect(fed.history.snapshot('f').messages).toEqual(messages);
    await manager.drain();
  });
});

describe('SessionManager release and rebuild', () => {
  it('rebuilds a released session only from the file the tailer read: one replaced before the tailer noticed is FILE_REPLACED, not read as the old session', async () => {
    const dir = mkdtempSync(join(tmpdir(), 'contextd-rebuild-'));
    dirs.push(dir);
    const file = join(dir, 'a.jsonl');
    const text = demoTranscriptJsonl({ rounds: 2 });
    writeFileSync(file, text);
    // What the tailer reports: the inode it read the transcript from.
    const tailed = statSync(file).ino;
    let t = 1_000_000;
    const { manager } = setup({ now: () => t, memory: { maxSessionTokens: 0, releaseAfterMs: 0, idleReleaseMs: 1 }, tailedFile: (f) => (f === file ? { ino: tailed } : undefined) });
    const s = manager.ingest(file, 'a', 'openai-chat', events(2), Buffer.byteLength(text));
    const tokens = s.model.tokens();
    expect(tokens).toBeGreaterThan(0);

    // The same file: released, then rebuilt to the same model.
    t += 10;
    expect(manager.releaseIdle()).toBe(1);
    expect(s.released).toBeDefined();
    await manager.requireLoaded('a');
    expect(s.released).toBeUndefined();
    expect(s.model.tokens()).toBe(tokens);

    // Another file put in its place (rename over it: a new inode) before the tailer's reset.
    t += 10;
    expect(manager.releaseIdle()).toBe(1);
    writeFileSync(join(dir, 'b.tmp'), demoTranscriptJsonl({ rounds: 6, variant: 'z' }));
    renameSync(join(dir, 'b.tmp'), file);
    expect(statSync(file).ino).not.toBe(tailed);
    await expect(manager.requireLoaded('a')).rejects.toMatchObject({ code: 'FILE_REPLACED' });
    // Still released: nothing of the other file became this session's model.
    expect(s.released).toBeDefined();
    expect(s.model.tokens()).toBe(0);
  });
});

/**
 * A transcript on disk cut into parts at line boundaries (`cuts`: line indexes), each part's lines
 * parsed at their byte offsets as the tailer's decoder reads them.
 */
function parts(dir: string, name: string, rounds: number, cuts: readonly number[], variant?: string) {
  const file = join(dir, `${name}.jsonl`);
  const text = demoTranscriptJsonl({ rounds, ...(variant ? { variant } : {}) });
  writeFileSync(file, text);
  const lines = text.split('\n').filter(Boolean);
  const adapter = createOpenAIChatAdapter();
  const offsets = lines.map((_, i) => Buffer.byteLength(lines.slice(0, i).map((l) => `${l}\n`).join('')));
  const bounds = [0, ...cuts, lines.length];
  return {
    file,
    count: bounds.length - 1,
    /** Part `k`: its events and the offset just past its last line. */
    part: (k: number) => {
      const [from, to] = [bounds[k] as number, bounds[k + 1] as number];
      return { events: lines.slice(from, to).flatMap((l, i) => adapter.parseLine(JSON.parse(l) as Record<string, unknown>, offsets[from + i] as number)), toOffset: to < lines.length ? (offsets[to] as number) : Buffer.byteLength(text) };
    },
  };
}

/**
 * A transcript on disk split in two halves (the first applied, the second read and queued), each
 * line parsed at its byte offset as the tailer's decoder reads it (message ids derive from it).
 */
function halves(dir: string, name: string, rounds: number, variant?: string) {
  const lineCount = demoTranscriptJsonl({ rounds, ...(variant ? { variant } : {}) }).split('\n').filter(Boolean).length;
  const p = parts(dir, name, rounds, [Math.floor(lineCount / 2)], variant);
  const first = () => p.part(0).events;
  const second = () => p.part(1).events;
  return { file: p.file, all: () => [...first(), ...second()], first, second, appliedBytes: p.part(0).toOffset, total: p.part(1).toOffset };
}

describe('SessionManager release with lines read but not applied', () => {
  it('releases a session whose lines wait in the queue (they are dropped), and rebuilds it from the transcript to the model that applying them would give', async () => {
    const dir = mkdtempSync(join(tmpdir(), 'contextd-release-queued-'));
    dirs.push(dir);
    const { file, all, first, second, appliedBytes, total } = halves(dir, 'a', 4);

    // Reference: every line applied.
    const ref = setup().manager.ingest(file, 'a', 'openai-chat', all(), total);

    let t = 1_000_000;
    const { manager } = setup({ now: () => t, memory: { maxSessionTokens: 0, releaseAfterMs: 0, idleReleaseMs: 1 } });
    manager.steadyState();
    const s = manager.ingest(file, 'a', 'openai-chat', first(), appliedBytes);
    // The second half is read but waits for its turn (the pump runs in a later iteration).
    manager.enqueue(file, 'a', 'openai-chat', second(), total, total - appliedBytes);
    expect(manager.backlog().queuedBytes).toBe(total - appliedBytes);
    const appliedTokens = s.model.tokens();
    expect(appliedTokens).toBeLessThan(ref.model.tokens());

    t += 10;
    expect(manager.releaseIdle()).toBe(1);
    expect(s.released?.offset).toBe(total);
    // The queue was dropped with the model: nothing of it is held.
    expect(manager.backlog()).toMatchObject({ queuedBytes: 0, queuedSessions: 0, sessionsInMemory: 0 });

    await manager.requireLoaded('a');
    expect(s.released).toBeUndefined();
    expect(s.tailOffset).toBe(total);
    expect(s.model.tokens()).toBe(ref.model.tokens());
    expect(s.model.headroom().sections).toBe(ref.model.headroom().sections);
    expect(s.model.messages().map((m) => m.id)).toEqual(ref.model.messages().map((m) => m.id));
  });
});

describe('SessionManager release of a session with lines just read', () => {
  it('a released model is garbage: the record of the edits its agent declined no longer holds it', async () => {
    const dir = mkdtempSync(join(tmpdir(), 'contextd-release-frees-'));
    dirs.push(dir);
    const a = halves(dir, 'a', 4);
    let t = 1_000_000;
    const { manager } = setup({ now: () => t, memory: { maxSessionTokens: 0, releaseAfterMs: 0, idleReleaseMs: 60_000 } });
    manager.steadyState();
    const s = manager.ingest(a.file, 'a', 'openai-chat', a.all(), a.total);
    // An automatic plan asks the record what is held (bound to the model it was asked about).
    s.declined.held(s.model, { zone: 'ok', headroom: s.model.headroom().headroom }, 0.15, t);
    const model = new WeakRef(s.model);
    t += 61_000;
    expect(manager.releaseIdle()).toBe(1);
    await expectCollected(model);
    await manager.drain();
  });

  it('a model dropped because lines could not be applied to it is garbage too, though its agent declined edits of it', async () => {
    const dir = mkdtempSync(join(tmpdir(), 'contextd-failed-frees-'));
    dirs.push(dir);
    const a = halves(dir, 'a', 4);
    // Injected fault: the tokenizer throws once `down` (as tiktoken's load does under EMFILE).
    let down = false;
    const tokenCounter = failingCounter(() => down);
    const { manager } = setup({ tokenCounter });
    manager.steadyState();
    const s = manager.ingest(a.file, 'a', 'openai-chat', a.first(), a.appliedBytes);
    s.declined.held(s.model, { zone: 'ok', headroom: s.model.headroom().headroom }, 0.15, Date.now());
    const model = new WeakRef(s.model);
    down = true;
    manager.enqueue(a.file, 'a', 'openai-chat', a.second(), a.total, a.total - a.appliedBytes);
    for (let i = 0; i < 50 && s.failure === undefined; i++) await new Promise((r) => setImmediate(r));
    expect(s.failure?.code).toBe('INGEST_FAILED');
    expect(s.released).toBeDefined();
    await expectCollected(model);
    await manager.drain();
  });

  it('a session whose lines were just read is not released as idle, and its appended lines reach its model without another append or request', async () => {
    const dir = mkdtempSync(join(tmpdir(), 'contextd-release-idle-queued-'));
    dirs.push(dir);
    const a = halves(dir, 'a', 4);
    let t = 1_000_000;
    const { manager } = setup({ now: () => t, memory: { maxSessionTokens: 0, releaseAfterMs: 0, idleReleaseMs: 60_000 } });
    manager.steadyState();
    const s = manager.ingest(a.file, 'a', 'openai-chat', a.first(), a.appliedBytes);
    const before = s.headroom().tokens;
    // The session was quiet for a minute; now the agent appends and the tailer reads it (queued: its turn comes later).
    t += 61_000;
    manager.enqueue(a.file, 'a', 'openai-chat', a.second(), a.total, a.total - a.appliedBytes);
    // The periodic idle sweep runs before the pump's turn: lines read a moment ago are not "idle".
    expect(manager.releaseIdle(), 'released a session whose lines had just been read').toBe(0);
    await vi.waitFor(() => expect(s.headroom().tokens).toBeGreaterThan(before));
    expect(s.released).toBeUndefined();
  });

  it('a session released by the memory budget with lines queued is rebuilt with them once the budget allows, without another append or request', async () => {
    const dir = mkdtempSync(join(tmpdir(), 'contextd-release-budget-queued-'));
    dirs.push(dir);
    const a = halves(dir, 'a', 4);
    const b = halves(dir, 'b', 4, 'b');
    // Reference sizes: every line applied.
    const refA = setup().manager.ingest(a.file, 'a', 'openai-chat', a.all(), a.total).model.tokens();
    const refB = setup().manager.ingest(b.file, 'b', 'openai-chat', b.all(), b.total).model.tokens();
    let t = 1_000_000;
    // Room for either session, not for both.
    const { manager } = setup({ now: () => t, memory: { maxSessionTokens: Math.max(refA, refB) + 10, releaseAfterMs: 0, idleReleaseMs: 60_000 } });
    manager.steadyState();
    const sa = manager.ingest(a.file, 'a', 'openai-chat', a.first(), a.appliedBytes);
    t += 10;
    // a's second half is read and waits for its turn; then b grows past the budget: a (least recently active) goes, its queue with it.
    manager.enqueue(a.file, 'a', 'openai-chat', a.second(), a.total, a.total - a.appliedBytes);
    t += 10;
    const sb = manager.ingest(b.file, 'b', 'openai-chat', b.all(), b.total);
    expect(sa.released?.offset).toBe(a.total);
    expect(sb.released).toBeUndefined();
    // b goes quiet and the idle sweep releases it: now a fits, and is rebuilt with the lines its release dropped.
    t += 61_000;
    expect(manager.releaseIdle()).toBe(1);
    expect(sb.released).toBeDefined();
    await vi.waitFor(() => expect(sa.released).toBeUndefined());
    expect(sa.model.tokens()).toBe(refA);
    expect(sa.tailOffset).toBe(a.total);
  });
});

describe('SessionManager first scan under the memory budget', () => {
  it('counts no queued bytes against the budget during the first scan: a large queue releases no session that is then rebuilt', async () => {
    const dir = mkdtempSync(join(tmpdir(), 'contextd-first-scan-budget-'));
    dirs.push(dir);
    const adapter = createOpenAIChatAdapter();
    const N = 6;
    // Transcripts heavy in bytes the model does not keep (metadata an agent writes beside each message): a large queue, small models.
    const files = Array.from({ length: N }, (_, i) => {
      const file = join(dir, `s${i}.jsonl`);
      const lines = demoTranscript({ rounds: 2, variant: `v${i}` }).map((l) => `${JSON.stringify({ ...l, meta: 'x'.repeat(8_000) })}\n`);
      writeFileSync(file, lines.join(''));
      const offsets = lines.map((_, k) => Buffer.byteLength(lines.slice(0, k).join('')));
      const batch = (from: number, to: number) => ({
        events: lines.slice(from, to).flatMap((l, k) => adapter.parseLine(JSON.parse(l) as Record<string, unknown>, offsets[from + k] as number)),
        toOffset: Buffer.byteLength(lines.slice(0, to).join('')),
        bytes: Buffer.byteLength(lines.slice(from, to).join('')),
      });
      return { id: `s${i}`, file, n: lines.length, batch };
    });
    // Reference: every model, in full, fits the budget with room to spare.
    const ref = setup().manager;
    for (const f of files) ref.ingest(f.file, f.id, 'openai-chat', f.batch(0, f.n).events, f.batch(0, f.n).toOffset);
    const modelsTokens = ref.heldTokens();
    const queuedTokens = files.reduce((n, f) => n + f.batch(0, f.n).bytes / 4, 0);
    expect(queuedTokens).toBeGreaterThan(4 * modelsTokens);

    const { manager, lines } = setup({ memory: { maxSessionTokens: Math.ceil(modelsTokens * 1.5), releaseAfterMs: 0, idleReleaseMs: 0 } });
    // The first scan (no steadyState yet) reads each transcript in three reads, as the tailer does a long file.
    const cut = (f: (typeof files)[number]) => [0, 2, f.n - 1, f.n];
    for (let r = 0; r < 3; r++) {
      for (const f of files) {
        const [from, to] = [cut(f)[r] as number, cut(f)[r + 1] as number];
        const b = f.batch(from, to);
        manager.enqueue(f.file, f.id, 'openai-chat', b.events, b.toOffset, b.bytes);
      }
      await manager.settled();
    }
    await manager.drain();
    const released = lines.filter((l) => String(l.msg).startsWith('session released from memory')).length;
    const rebuilt = lines.filter((l) => l.msg === 'released session rebuilt from its transcript').length;
    expect({ released, rebuilt }).toEqual({ released: 0, rebuilt: 0 });
    expect(manager.heldTokens()).toBe(modelsTokens);
  });
});

describe('SessionManager run queue (transcript batches and plans in turns)', () => {
  /** Split events into `n` batches of about the same length. */
  const batches = (evs: readonly TranscriptEvent[], n: number): TranscriptEvent[][] => {
    const size = Math.ceil(evs.length / n);
    return Array.from({ length: Math.ceil(evs.length / size) }, (_, i) => evs.slice(i * size, (i + 1) * size));
  };

  it('answers a request between turns: asked while 50 sessions have plans queued, before the queue drains', async () => {
    const { manager } = setup();
    const planned: string[] = [];
    manager.on('plan', (s) => planned.push(s.sessionId));
    const ids = Array.from({ length: 50 }, (_, i) => `s${String(i).padStart(2, '0')}`);
    for (const id of ids) manager.enqueue(`/t/${id}.jsonl`, id, 'openai-chat', events(10), 1000, 1000);
    // Every session exists at once (subscribe by path works); its model catches up in its turn.
    expect(manager.all().map((s) => s.sessionId)).toEqual(ids);
    expect(manager.get('s49')?.model.tokens()).toBe(0);
    // What daemon.status reads, asked from the event loop as a socket request would be.
    const seen = await new Promise<{ plans: number; sessions: number }>((resolve) => setImmediate(() => resolve({ plans: planned.length, sessions: manager.all().length })));
    expect(seen.sessions).toBe(50);
    expect(seen.plans).toBeLessThan(50);
    await vi.waitFor(() => expect(planned).toHaveLength(50), { timeout: 60_000 });
    // Round-robin: plans in the order the sessions' lines arrived.
    expect(planned).toEqual(ids);
  });

  it('a busy session never delays another: its backlog is applied over several turns, its plans coalesced', async () => {
    // One plan slot, so the plan that starts first is the one published first.
    const { manager } = setup({ maxConcurrentPlans: 1 });
    const planned: { id: string; tokens: number }[] = [];
    manager.on('plan', (s, plan) => planned.push({ id: s.sessionId, tokens: plan.tokensBefore }));
    const a = batches(events(10), 20);
    for (const [i, b] of a.entries()) manager.enqueue('/t/a.jsonl', 'a', 'openai-chat', b, (i + 1) * 100, 100);
    manager.enqueue('/t/b.jsonl', 'b', 'openai-chat', events(10), 1000, 1000);
    await vi.waitFor(() => expect(planned.map((p) => p.id)).toContain('a'), { timeout: 60_000 });
    // 'b' arrived behind 20 batches of 'a' and was planned first.
    expect(planned[0]?.id).toBe('b');
    await manager.settled();
    await manager.drain();
    const ofA = planned.filter((p) => p.id === 'a');
    // A plan waits one turn for the backlog at most (so plans go on under load), never one per batch.
    expect(ofA.length).toBeLessThanOrEqual(Math.ceil(a.length / 2));
    // The last plan of 'a' saw everything its 20 batches held (the same as one batch would give).
    const reference = setup().manager.ingest('/t/a.jsonl', 'a', 'openai-chat', events(10));
    expect(ofA.at(-1)?.tokens).toBe(reference.model.tokens());
    expect(manager.get('a')?.tailOffset).toBe(a.length * 100);
  });

  it('a request that reads the model sees every batch read; a rewrite or removal drops what waited', async () => {
    const { manager } = setup();
    const s = manager.enqueue('/t/c.jsonl', 'c', 'openai-chat', events(2), 500, 500);
    expect(s.model.tokens()).toBe(0);
    await manager.requireLoaded('c');
    expect(s.model.tokens()).toBeGreaterThan(0);
    manager.enqueue('/t/c.jsonl', 'c', 'openai-chat', extra(1), 600, 100);
    // A harvest reads the transcript as far as it was read, the lines still waiting included.
    expect(s.tailOffset).toBe(500);
    expect(s.harvestEndOffset()).toBe(600);
    manager.resetSession('/t/c.jsonl', 'c', 'truncated');
    expect(s.harvestEndOffset()).toBe(0);
    await manager.settled();
    expect(manager.get('c')?.model.tokens()).toBe(0);
    manager.enqueue('/t/d.jsonl', 'd', 'openai-chat', events(2), 500, 500);
    manager.removeSession('d');
    await manager.settled();
    expect(manager.get('d')).toBeUndefined();
  });

  it('a session with read lines still waiting for its turn is behind, not idle: never harvested as idle', async () => {
    let clock = 1_000_000;
    const { manager } = setup({ now: () => clock, idleTimeoutMs: 1_000 });
    manager.ingest('/t/f.jsonl', 'f', 'openai-chat', events(1));
    clock += 5_000;
    manager.enqueue('/t/f.jsonl', 'f', 'openai-chat', extra(1), 2_000, 100);
    expect(manager.idleSessions()).toEqual([]);
    await manager.settled();
    clock += 5_000;
    expect(manager.idleSessions().map((s) => s.sessionId)).toEqual(['f']);
  });

  it('backpressure: room() waits while more than the high-water mark of bytes is queued, settled() until all is applied', async () => {
    const { manager } = setup();
    expect(manager.room()).toBeUndefined();
    manager.enqueue('/t/e.jsonl', 'e', 'openai-chat', events(2), 500, 40 * 1024 * 1024);
    const room = manager.room();
    expect(room).toBeInstanceOf(Promise);
    let free = false;
    void room?.then(() => (free = true));
    await Promise.resolve();
    expect(free).toBe(false);
    await manager.settled();
    await room;
    expect(free).toBe(true);
    expect(manager.get('e')?.model.tokens()).toBeGreaterThan(0);
  });
});

/**
 * A real local OpenAI-compatible summarizer endpoint whose first request is held until
 * `release()` (an LLM taking its time); every other request is answered at once.
 */
async function slowLlm(): Promise<{ summarizer: Summarizer; requests: () => number; held: () => boolean; release: () => void }> {
  let count = 0;
  let held: http.ServerResponse | undefined;
  const answer = (res: http.ServerResponse): void => {
    res.writeHead(200, { 'content-type': 'application/json' }).end(JSON.stringify({ choices: [{ index: 0, message: { role: 'assistant', content: 'Checked the pool settings; tests pass.' } }] }));
  };
  const server = http.createServer((req, res) => {
    req.resume();
    req.on('end', () => {
      if (count++ === 0) held = res;
      else answer(res);
    });
  });
  servers.push(server);
  await new Promise<void>((r) => server.listen(0, '127.0.0.1', () => r()));
  const baseUrl = `http://127.0.0.1:${(server.address() as AddressInfo).port}/v1`;
  return {
    summarizer: createSummarizer({ kind: 'openai', baseUrl, model: 'slow', timeoutMs: 120_000, maxTokens: 300 }),
    requests: () => count,
    held: () => held !== undefined && !held.writableEnded,
    release: () => {
      if (held) answer(held);
    },
  };
}

/**
 * A real local OpenAI-compatible summarizer endpoint that holds every request until
 * `answerOne()`; `open()` counts the requests neither answered nor given up by the client.
 */
async function heldLlm() {
  const waiting: http.ServerResponse[] = [];
  const open = new Set<http.ServerResponse>();
  const server = http.createServer((req, res) => {
    open.add(res);
    res.on('close', () => open.delete(res));
    req.resume();
    req.on('end', () => waiting.push(res));
  });
  servers.push(server);
  await new Promise<void>((r) => server.listen(0, '127.0.0.1', () => r()));
  const baseUrl = `http://127.0.0.1:${(server.address() as AddressInfo).port}/v1`;
  return {
    summarizer: createSummarizer({ kind: 'openai', baseUrl, model: 'held', timeoutMs: 120_000, maxTokens: 300 }),
    open: () => open.size,
    waiting: () => waiting.length,
    answerOne: () => {
      waiting.shift()?.writeHead(200, { 'content-type': 'application/json' }).end(JSON.stringify({ choices: [{ index: 0, message: { role: 'assistant', content: 'Read the pool settings.' } }] }));
    },
  };
}

describe('SessionManager plans beside the turns (a slow summarizer holds nobody up)', () => {
  it('while one session waits for its LLM summary, another is ingested and planned, its own lines are applied, and it re-plans once after', async () => {
    const llm = await slowLlm();
    const { manager } = setup({ summarizer: llm.summarizer });
    const plans: { id: string; tokens: number }[] = [];
    manager.on('plan', (s, plan) => plans.push({ id: s.sessionId, tokens: plan.tokensBefore }));
    const a = manager.enqueue('/t/a.jsonl', 'a', 'openai-chat', events(10), 1000, 1000);
    await vi.waitFor(() => expect(llm.held()).toBe(true), { timeout: 60_000 });
    expect(a.life.planning).toBe(true);
    const tokensAtPlan = a.model.tokens();

    // b arrives and is planned while a's summary is still awaited.
    const b = manager.enqueue('/t/b.jsonl', 'b', 'openai-chat', events(10), 1000, 1000);
    await vi.waitFor(() => expect(plans.map((p) => p.id)).toEqual(['b']), { timeout: 60_000 });
    expect(b.model.tokens()).toBeGreaterThan(0);
    // a's own new lines are applied too (nothing waits at the read gate), its plan still out.
    manager.enqueue('/t/a.jsonl', 'a', 'openai-chat', extra(1), 1100, 100);
    manager.enqueue('/t/a.jsonl', 'a', 'openai-chat', extra(2), 1200, 100);
    await manager.settled();
    expect(manager.room()).toBeUndefined();
    expect(a.model.tokens()).toBeGreaterThan(tokensAtPlan);
    expect(a.tailOffset).toBe(1200);
    expect(llm.held()).toBe(true);
    expect(plans.map((p) => p.id)).toEqual(['b']);

    llm.release();
    // a's plan (of the model it started from), then one more for the lines that came meanwhile.
    await vi.waitFor(() => expect(plans.filter((p) => p.id === 'a')).toHaveLength(2), { timeout: 60_000 });
    expect(plans.filter((p) => p.id === 'a').map((p) => p.tokens)).toEqual([tokensAtPlan, a.model.tokens()]);
  });

  it('a plan whose sections the agent rewound away while it was made is dropped, not published', async () => {
    const llm = await slowLlm();
    const { manager, lines } = setup({ summarizer: llm.summarizer });
    const plans: string[] = [];
    manager.on('plan', (s) => plans.push(s.sessionId));
    const evs = events(10);
    const a = manager.enqueue('/t/a.jsonl', 'a', 'openai-chat', evs, 1000, 1000);
    await vi.waitFor(() => expect(llm.held()).toBe(true), { timeout: 60_000 });
    // The agent rewinds to its first message while the summary is awaited.
    const first = evs.find((e) => e.type === 'message');
    if (first?.type !== 'message') throw new Error('no message in the transcript');
    manager.enqueue('/t/a.jsonl', 'a', 'openai-chat', [{ type: 'truncate', keepThroughId: first.message.id, reason: 'rewind' }], 1100, 100);
    await manager.settled();
    expect(a.model.messages()).toHaveLength(1);
    llm.release();
    await vi.waitFor(() => expect(lines.some((l) => l['msg'] === 'plan dropped: sections it replaces left the context while it was made')).toBe(true), { timeout: 60_000 });
    expect(plans).toEqual([]);
    expect(a.life.planning).toBe(false);
  });

  it('a socket-fed session whose ephemeral tail the agent replaces while a slow summary is awaited still gets its plan, naming only sections that stand', async () => {
    const llm = await slowLlm();
    const { manager, db, lines } = setup({ summarizer: llm.summarizer });
    const archive = new Archive(db);
    const plans: Plan[] = [];
    // What the agent sees of the first plan, read as it is pushed: the lines fed while it was made
    // make one more plan when it ends, and that one supersedes it, so it is checked and applied
    // at once, as an agent that applies each push would.
    let seen: { live: string[]; edits: { stand: boolean; inRange: string[]; now: string[]; archived: string[] | undefined }[]; ackHeadroom: number } | undefined;
    manager.on('plan', (s, plan) => {
      plans.push(plan);
      if (plans.length !== 1) return;
      const live = s.model.messages().map((m) => m.id);
      const edits = plan.edits.map((e) => {
        const now = e.replaces.flatMap((id) => s.model.messagesOf(id).map((m) => m.id));
        return {
          stand: e.replaces.every((id) => s.model.messagesOf(id).length > 0),
          inRange: live.slice(e.messageRange.start, e.messageRange.end + 1),
          now,
          archived: archive.get(e.handle)?.messages.map((m) => m.id),
        };
      });
      seen = { live, edits, ackHeadroom: manager.acknowledge(plan.planId, true, undefined, undefined).headroom };
    });
    const base = JSON.parse(JSON.stringify(demoTranscript({ rounds: 10 }))) as Record<string, unknown>[];
    // Each request the agent sends ends in an ephemeral message the next one replaces: a truncate, then an append.
    const feed = (n: number) => manager.feed('h', normalizeOpenAIMessages([...base, { role: 'user', content: `ephemeral prefill ${n}` }]), 20_000);
    const { session: s } = feed(1);
    const version = s.model.version;
    await vi.waitFor(() => expect(llm.held()).toBe(true), { timeout: 60_000 });
    const epoch = s.model.epoch;
    for (let n = 2; n <= 4; n++) expect(feed(n).rebuilt).toBe(false);
    await manager.settled();
    expect(s.model.epoch).toBeGreaterThan(epoch);
    llm.release();
    await vi.waitFor(() => expect(seen).toBeDefined(), { timeout: 60_000 });
    const plan = plans[0] as Plan;
    // the plan the summarizer was slow for, not a re-plan after it was dropped
    expect(plan.modelVersion).toBe(version);
    expect(lines.filter((l) => String(l['msg']).startsWith('plan dropped'))).toEqual([]);
    expect(plan.edits.length).toBeGreaterThan(0);
    for (const e of seen?.edits ?? []) {
      expect(e.stand).toBe(true);
      // its message range is where those sections stand in the list the agent sent last
      expect(e.inRange).toEqual(e.now);
      expect(e.archived).toEqual(e.now);
    }
    expect(seen?.edits).toHaveLength(plan.edits.length);
    // and the agent could apply it
    expect(seen?.ackHeadroom).toBeGreaterThan(plan.headroomBefore);
  });

  it('bounds the plans in flight: with one slot, a due plan waits for it while its lines are applied', async () => {
    const llm = await slowLlm();
    const { manager } = setup({ summarizer: llm.summarizer, maxConcurrentPlans: 1 });
    const plans: string[] = [];
    manager.on('plan', (s) => plans.push(s.sessionId));
    manager.enqueue('/t/a.jsonl', 'a', 'openai-chat', events(10), 1000, 1000);
    await vi.waitFor(() => expect(llm.held()).toBe(true), { timeout: 60_000 });
    const b = manager.enqueue('/t/b.jsonl', 'b', 'openai-chat', events(10), 1000, 1000);
    const c = manager.enqueue('/t/c.jsonl', 'c', 'openai-chat', events(10), 1000, 1000);
    await manager.settled();
    // Their lines are in; their plans are due but wait for the slot a holds (no request of theirs went out).
    expect(b.model.tokens()).toBeGreaterThan(0);
    expect(c.model.tokens()).toBeGreaterThan(0);
    await new Promise((r) => setImmediate(r));
    expect(manager.all().filter((x) => x.life.planning).map((x) => x.sessionId)).toEqual(['a']);
    const sent = llm.requests();
    llm.release();
    await vi.waitFor(() => expect(plans).toEqual(['a', 'b', 'c']), { timeout: 60_000 });
    expect(llm.requests()).toBeGreaterThan(sent);
  });

  it('a plan queued mid-backlog is put off until the backlog is applied, never made on a partly applied model', async () => {
    const all = events(10);
    // The batch whose lines take the session past the soft watermark (its plan comes due there).
    const ref = setup().manager;
    const parts = Array.from({ length: 40 }, (_, i) => all.slice(Math.floor((i * all.length) / 40), Math.floor(((i + 1) * all.length) / 40))).filter((p) => p.length > 0);
    let due = -1;
    for (const [i, p] of parts.entries()) {
      const r = ref.ingest('/t/r.jsonl', 'r', 'openai-chat', p);
      if (zoneOf(r.model.headroom(), ref.watermarks()) !== 'ok') {
        due = i;
        break;
      }
    }
    expect(due).toBeGreaterThan(2);
    // The backlog ends one batch after that: one turn's deferral covers the rest.
    const backlog = parts.slice(0, due + 2);
    const full = setup().manager.ingest('/t/f.jsonl', 'f', 'openai-chat', backlog.flat()).model.tokens();

    const { manager } = setup();
    const plans: number[] = [];
    manager.on('plan', (_s, plan) => plans.push(plan.tokensBefore));
    // turnSliceMs 0: one batch per turn, so the plan comes due with one batch still queued.
    for (const [i, b] of backlog.entries()) manager.enqueue('/t/x.jsonl', 'x', 'openai-chat', b, (i + 1) * 100, 100);
    await manager.settled();
    await vi.waitFor(() => expect(plans.length).toBeGreaterThan(0), { timeout: 60_000 });
    expect(plans[0]).toBe(full);
  });
});

/** The extractive summarizer, with `hook` run (synchronously) in its `at`-th call; `sizes` are the messages per call. */
function hookedSummarizer(at: number, hook: () => void): { summarizer: Summarizer; sizes: number[] } {
  const inner = createSummarizer({ kind: 'extractive' }, { logger: pino({ level: 'silent' }) });
  const sizes: number[] = [];
  return {
    sizes,
    summarizer: {
      name: inner.name,
      summarize: (input, signal) => {
        sizes.push(input.messages.length);
        if (sizes.length === at) hook();
        return inner.summarize(input, signal);
      },
    },
  };
}

/** The extractive summarizer whose first call waits until `open()` (or until shutdown aborts it). */
function gatedSummarizer(): { summarizer: Summarizer; waiting: () => boolean; open: () => void } {
  const inner = createSummarizer({ kind: 'extractive' }, { logger: pino({ level: 'silent' }) });
  let calls = 0;
  let release: (() => void) | undefined;
  let opened = false;
  return {
    summarizer: {
      name: inner.name,
      summarize: async (input, signal) => {
        if (calls++ === 0) {
          await new Promise<void>((resolve, reject) => {
            release = resolve;
            signal?.addEventListener('abort', () => reject(signal.reason as Error), { once: true });
          });
        }
        return inner.summarize(input, signal);
      },
    },
    waiting: () => release !== undefined && !opened,
    open: () => {
      opened = true;
      release?.();
    },
  };
}

/** A truncate event back to the first message of `evs`. */
function rewindTo(evs: readonly TranscriptEvent[]): TranscriptEvent {
  const first = evs.find((e) => e.type === 'message');
  if (first?.type !== 'message') throw new Error('no message in the transcript');
  return { type: 'truncate', keepThroughId: first.message.id, reason: 'rewind' };
}

/**
 * Plan session 'a' with a rewind to its first message wired in by `arm` (into a summarizer or
 * archive filter); resolves once the plan was dropped with the log line `dropped`.
 */
async function planRewound(arm: (rewind: () => void) => Parameters<typeof setup>[0], dropped: string) {
  const evs = events(10);
  const target: { manager?: SessionManager } = {};
  const ctx = setup(arm(() => void target.manager?.ingest('/t/a.jsonl', 'a', 'openai-chat', [rewindTo(evs)])));
  target.manager = ctx.manager;
  const plans: Plan[] = [];
  ctx.manager.on('plan', (_s, plan) => plans.push(plan));
  const a = ctx.manager.ingest('/t/a.jsonl', 'a', 'openai-chat', evs);
  await vi.waitFor(() => expect(ctx.lines.some((l) => l['msg'] === dropped)).toBe(true), { timeout: 60_000 });
  await vi.waitFor(() => expect(a.life.planning).toBe(false));
  return { ...ctx, a, plans };
}

describe('SessionManager plans while the session changes under them', () => {
  it('a rewind while the plan summarizes drops it at its next step: no edit naming gone sections, nothing archived under an empty handle', async () => {
    let sizes: number[] = [];
    // The rewind lands while the first edit is summarized, after the sections were read.
    const { a, plans, db, lines } = await planRewound((rewind) => {
      const hooked = hookedSummarizer(1, rewind);
      sizes = hooked.sizes;
      return { summarizer: hooked.summarizer };
    }, 'plan dropped: sections it replaces left the context while it was made');
    expect(a.model.messages()).toHaveLength(1);
    // No summary of nothing: the edits after the rewind were never summarized.
    expect(sizes.length).toBeGreaterThan(0);
    expect(sizes.filter((n) => n === 0)).toEqual([]);
    expect(plans).toEqual([]);
    expect(new Archive(db).count('a')).toBe(0);
    expect(lines.filter((l) => l['msg'] === 'planning failed; will retry when the session changes')).toEqual([]);
  });

  it('a rewind while the originals are archived drops the plan and stores none of them', async () => {
    let filtered = 0;
    // The archive filter runs once per edit, with a pause before each: the rewind lands after the first.
    const { plans, db } = await planRewound(
      (rewind) => ({
        archiveFilter: (messages) => {
          if (++filtered === 1) rewind();
          return Promise.resolve({ messages: [...messages], findings: [] });
        },
      }),
      'plan dropped: sections it replaces left the context or changed while its originals were archived',
    );
    expect(filtered).toBeGreaterThan(1); // it went on to the edits after the rewind
    expect(plans).toEqual([]);
    expect(new Archive(db).count('a')).toBe(0);
  });

  it('a rewind in the step between archiving and publishing drops the plan: checked right before it is published', async () => {
    const { plans, db } = await planRewound((rewind) => ({ archived: rewind }), 'plan dropped: sections it replaces left the context or changed while it was archived');
    expect(plans).toEqual([]);
    // the originals it archived stay recallable: nothing is lost
    expect(new Archive(db).count('a')).toBeGreaterThan(0);
  });

  it('a plan given up while its summaries are awaited aborts its other summarizer calls: none is left open', async () => {
    const llm = await heldLlm();
    const { manager, lines } = setup({ summarizer: llm.summarizer });
    const evs = events(10);
    const a = manager.ingest('/t/a.jsonl', 'a', 'openai-chat', evs);
    // the plan's summaries are asked for four at once (the planner's concurrency)
    await vi.waitFor(() => expect(llm.waiting()).toBe(4), { timeout: 60_000 });
    manager.ingest('/t/a.jsonl', 'a', 'openai-chat', [rewindTo(evs)]);
    // one answer: its worker takes the next edit, whose sections are gone, and the plan is given up
    llm.answerOne();
    await vi.waitFor(() => expect(lines.some((l) => l['msg'] === 'plan dropped: sections it replaces left the context while it was made')).toBe(true), { timeout: 60_000 });
    await vi.waitFor(() => expect(a.life.planning).toBe(false));
    await vi.waitFor(() => expect(llm.open()).toBe(0), { timeout: 5_000 });
    expect(lines.filter((l) => l['msg'] === 'summarizer endpoint failed; used the extractive summary')).toEqual([]);
  });

  it('archives exactly what each edit summarized, even when lines are appended while the plan is made', async () => {
    const evs = events(10);
    let append = (): void => undefined;
    const { manager, db } = setup({ summarizer: hookedSummarizer(2, () => append()).summarizer });
    append = () => void manager.ingest('/t/a.jsonl', 'a', 'openai-chat', extra(1));
    const planned = nextPlan(manager);
    manager.ingest('/t/a.jsonl', 'a', 'openai-chat', evs);
    const plan = await planned;
    const archive = new Archive(db);
    for (const e of plan.edits) {
      const archived = archive.get(e.handle)?.messages ?? [];
      expect(archived.length).toBeGreaterThan(0);
      // what the summary quotes: the handle is the hash of exactly these messages
      expect(archived.map((m) => m.id)).toEqual(e.replaces.flatMap((id) => manager.get('a')?.model.messagesOf(id).map((m) => m.id) ?? []));
    }
  });

  it('session.compact waits for the plan in flight: one plan at a time, the newer one stays proposed', async () => {
    const gate = gatedSummarizer();
    const { manager, db } = setup({ summarizer: gate.summarizer });
    const plans: Plan[] = [];
    manager.on('plan', (_s, plan) => plans.push(plan));
    const a = manager.ingest('/t/a.jsonl', 'a', 'openai-chat', events(10));
    await vi.waitFor(() => expect(gate.waiting()).toBe(true), { timeout: 60_000 });
    const manual = manager.compactNow('a', 0.7, false);
    // The manual plan waits: nothing is published while the pump's plan is held.
    for (let i = 0; i < 20; i++) await new Promise((r) => setImmediate(r));
    expect(plans).toEqual([]);
    gate.open();
    const made = await manual;
    expect(plans.map((p) => p.planId)).toHaveLength(2);
    expect(plans[1]?.planId).toBe(made.planId);
    const log = new PlanLog(db);
    expect(log.get(made.planId)?.status).toBe('proposed');
    expect(log.get(plans[0]?.planId ?? '')?.status).toBe('expired');
    expect(a.life.openPlanCount).toBe(1);
    expect(a.life.planning).toBe(false);
  });

  it('a plan of a session closed while it was made is not published, not even to a session opened anew under its id', async () => {
    const gate = gatedSummarizer();
    const { manager } = setup({ summarizer: gate.summarizer });
    const plans: string[] = [];
    manager.on('plan', (s) => plans.push(s.sessionId));
    const old = manager.ingest('/t/a.jsonl', 'a', 'openai-chat', events(10));
    await vi.waitFor(() => expect(gate.waiting()).toBe(true), { timeout: 60_000 });
    manager.removeSession('a');
    const fresh = manager.ingest('/t/a.jsonl', 'a', 'openai-chat', events(2));
    gate.open();
    await vi.waitFor(() => expect(old.life.planning).toBe(false), { timeout: 60_000 });
    for (let i = 0; i < 20; i++) await new Promise((r) => setImmediate(r));
    expect(plans).toEqual([]);
    expect(fresh.life.openPlanCount).toBe(0);
    expect(old.life.openPlanCount).toBe(0);
  });
});

describe('SessionManager read backpressure once running', () => {
  it('holds the reads of a session while its lines wait for their turn, and while its model is over budget with its plan being made; they go on once applied and planned', async () => {
    const gate = gatedSummarizer();
    const { manager } = setup({ summarizer: gate.summarizer });
    // Before: only the global high-water mark holds reads (the first scan).
    manager.enqueue('/t/b.jsonl', 'b', 'openai-chat', events(2), 1000, 1000);
    expect(manager.room('/t/b.jsonl')).toBeUndefined();
    await manager.settled();

    manager.steadyState();
    manager.enqueue('/t/b.jsonl', 'b', 'openai-chat', extra(1), 2000, 1000);
    const waitB = manager.room('/t/b.jsonl');
    expect(waitB).toBeInstanceOf(Promise);
    // Another transcript reads on: nothing of it waits, and the total is under the mark.
    expect(manager.room('/t/other.jsonl')).toBeUndefined();
    await waitB;
    expect(manager.backlog().queuedBytes).toBe(0);
    expect(manager.get('b')?.tailOffset).toBe(2000);

    // Over its budget, its plan being made (the summarizer holds it): reads wait for the plan.
    const a = manager.ingest('/t/a.jsonl', 'a', 'openai-chat', events(60), 60_000);
    expect(a.model.headroom().headroom).toBeLessThanOrEqual(0);
    await vi.waitFor(() => expect(gate.waiting()).toBe(true), { timeout: 60_000 });
    const waitA = manager.room('/t/a.jsonl');
    expect(waitA).toBeInstanceOf(Promise);
    let goesOn = false;
    void waitA?.then(() => (goesOn = true));
    for (let i = 0; i < 20; i++) await new Promise((r) => setImmediate(r));
    expect(goesOn).toBe(false);
    expect(manager.room('/t/b.jsonl')).toBeUndefined();
    gate.open();
    await waitA;
    expect(a.life.planning).toBe(false);
    expect(manager.room('/t/a.jsonl')).toBeUndefined();
  });
});

describe('SessionManager shutdown', () => {
  it('drain() does not wait for a summarizer that has not answered: the plan is abandoned at once', async () => {
    const llm = await slowLlm();
    const { manager, lines } = setup({ summarizer: llm.summarizer });
    const plans: string[] = [];
    manager.on('plan', (s) => plans.push(s.sessionId));
    const a = manager.enqueue('/t/a.jsonl', 'a', 'openai-chat', events(10), 1000, 1000);
    await vi.waitFor(() => expect(llm.held()).toBe(true), { timeout: 60_000 });
    await manager.drain();
    // The LLM never answered (its request is still held), and nothing was published.
    expect(llm.held()).toBe(true);
    expect(a.life.planning).toBe(false);
    expect(plans).toEqual([]);
    expect(lines.filter((l) => l['msg'] === 'plan abandoned: contextd is shutting down').map((l) => l['sessionId'])).toEqual(['a']);
    expect(lines.filter((l) => l['msg'] === 'planning failed; will retry when the session changes')).toEqual([]);
  });

  it('drain() drops lines read but not applied, and frees a read waiting at the gate', async () => {
    const { manager } = setup();
    const ids = Array.from({ length: 20 }, (_, i) => `q${i}`);
    for (const id of ids) manager.enqueue(`/t/${id}.jsonl`, id, 'openai-chat', events(10), 1000, 1024 * 1024);
    // 20 MiB waiting: a tailer asking for room would wait.
    const room = manager.room();
    expect(room).toBeInstanceOf(Promise);
    await manager.drain();
    await room;
    expect(manager.room()).toBeUndefined();
    // The backlog was dropped, not applied on the way out.
    expect(ids.filter((id) => (manager.get(id)?.model.tokens() ?? 0) > 0)).toEqual([]);
    // Nothing is taken after the drain.
    manager.enqueue('/t/q0.jsonl', 'q0', 'openai-chat', extra(1), 1100, 100);
    await manager.settled();
    expect(manager.get('q0')?.model.tokens()).toBe(0);
  });
});

/** What a model is, for "the same model": its sections (ids, scores, …), messages and headroom. */
function modelOf(s: { model: { sections(): unknown; messages(): unknown; headroom(): unknown; tokens(): number } }) {
  return { sections: s.model.sections(), messages: s.model.messages(), headroom: s.model.headroom(), tokens: s.model.tokens() };
}

/**
 * Release the one idle session, rebuild `id` on request, and check the rebuilt model is `before`
 * with no error logged (the caller has moved its clock past the idle release).
 */
async function expectRebuiltAsBefore(manager: SessionManager, s: Parameters<typeof modelOf>[0], id: string, before: ReturnType<typeof modelOf>, lines: readonly Record<string, unknown>[]): Promise<void> {
  expect(manager.releaseIdle()).toBe(1);
  await manager.requireLoaded(id);
  expect(modelOf(s)).toEqual(before);
  expect(lines.filter((l) => (l.level as number) >= 50)).toEqual([]);
}

/**
 * A token counter that lets a test act in the middle of a rebuild (counting is what a rebuild
 * does between its yields): set `mid.act`, and the next count runs it once, then clears it.
 */
function midRebuildCounter(): { tokenCounter: TokenCounter; mid: { act: (() => void) | undefined } } {
  const counter = createTokenCounter();
  const mid: { act: (() => void) | undefined } = { act: undefined };
  const tokenCounter: TokenCounter = {
    encoding: counter.encoding,
    count: (text) => {
      const act = mid.act;
      mid.act = undefined;
      act?.();
      return counter.count(text);
    },
  };
  return { tokenCounter, mid };
}

/** A dry-run plan without what differs from one run to the next (its id and time). */
async function dryPlan(manager: SessionManager, sessionId: string) {
  const p = await manager.compactNow(sessionId, 0.9999, true);
  return { tokensBefore: p.tokensBefore, tokensAfter: p.tokensAfter, edits: p.edits.map((e) => ({ editId: e.editId, reason: e.reason, replaces: e.replaces, handle: e.handle, summary: e.summary, tokensBefore: e.tokensBefore, tokensAfter: e.tokensAfter })) };
}

describe('SessionManager release of a session with applied edits', () => {
  it('releases a session whose agent applied edits (all of a plan, then some of one) and rebuilds it from its transcript and the plan log to the model it was, between further appends and plans', async () => {
    const dir = mkdtempSync(join(tmpdir(), 'contextd-release-edited-'));
    dirs.push(dir);
    const p = parts(dir, 'a', 8, [30, 45, 60]);
    let t = 1_000_000;
    const { manager, lines } = setup({ now: () => t, memory: { maxSessionTokens: 0, releaseAfterMs: 0, idleReleaseMs: 1 } });
    const s = manager.ingest(p.file, 'a', 'openai-chat', p.part(0).events, p.part(0).toOffset);
    // The agent applies every edit of a plan, then more lines arrive.
    const full = await manager.compactNow('a', 0.9999, false);
    expect(full.edits.length).toBeGreaterThan(0);
    manager.acknowledge(full.planId, true, undefined, undefined);
    manager.ingest(p.file, 'a', 'openai-chat', p.part(1).events, p.part(1).toOffset);
    // Then only some edits of the next plan (the first and the last).
    const partial = await manager.compactNow('a', 0.9999, false);
    expect(partial.edits.length).toBeGreaterThan(2);
    const chosen = [partial.edits[0]?.editId as string, partial.edits.at(-1)?.editId as string];
    manager.acknowledge(partial.planId, true, chosen, 'kept the middle');
    manager.ingest(p.file, 'a', 'openai-chat', p.part(2).events, p.part(2).toOffset);
    const before = modelOf(s);
    expect(before.messages).toEqual(expect.arrayContaining([expect.objectContaining({ isSummary: true })]));
    const plan = await dryPlan(manager, 'a');

    // Idle: released (on HEAD it was pinned by its applied edits), then rebuilt on request.
    t += 10;
    expect(manager.releaseIdle()).toBe(1);
    expect(s.released).toBeDefined();
    expect(manager.heldTokens()).toBe(0);
    await manager.requireLoaded('a');
    expect(s.released).toBeUndefined();
    const rebuilt = () => lines.filter((l) => l.msg === 'released session rebuilt from its transcript').map((l) => l.plansReplayed);
    expect(rebuilt()).toEqual([2]);
    expect(modelOf(s)).toEqual(before);
    expect(await dryPlan(manager, 'a')).toEqual(plan);

    // The next append, plan and ack work on the rebuilt model, and a second release replays all three steps.
    manager.ingest(p.file, 'a', 'openai-chat', p.part(3).events, p.part(3).toOffset);
    const next = await manager.compactNow('a', 0.9999, false);
    expect(next.edits.length).toBeGreaterThan(0);
    expect(manager.acknowledge(next.planId, true, undefined, undefined).headroom).toBe(s.model.headroom().headroom);
    const again = modelOf(s);
    t += 10;
    expect(manager.releaseIdle()).toBe(1);
    await manager.requireLoaded('a');
    expect(rebuilt()).toEqual([2, 3]);
    expect(modelOf(s)).toEqual(again);
    expect(lines.filter((l) => (l.level as number) >= 50)).toEqual([]);
  });

  it('replays a rebuild of the model from its own messages (budget reconfigured) at its place among the edits', async () => {
    const dir = mkdtempSync(join(tmpdir(), 'contextd-release-rebased-'));
    dirs.push(dir);
    const p = parts(dir, 'a', 8, [30, 45]);
    let t = 1_000_000;
    const memory = { maxSessionTokens: 0, releaseAfterMs: 0, idleReleaseMs: 1 };
    const { manager, lines } = setup({ now: () => t, memory });
    const s = manager.ingest(p.file, 'a', 'openai-chat', p.part(0).events, p.part(0).toOffset);
    const plan = await manager.compactNow('a', 0.9999, false);
    manager.acknowledge(plan.planId, true, undefined, undefined);
    manager.ingest(p.file, 'a', 'openai-chat', p.part(1).events, p.part(1).toOffset);
    manager.reconfigure({ budgetTokens: 30_000, reserveRatio: 0.15, softWatermark: 0.6, hysteresis: 0.1, minPlanIntervalMs: 0, turnSliceMs: 0, memory });
    manager.ingest(p.file, 'a', 'openai-chat', p.part(2).events, p.part(2).toOffset);
    const before = modelOf(s);
    t += 10;
    await expectRebuiltAsBefore(manager, s, 'a', before, lines);
  });

  it('keeps in memory an edited session whose plan the plan log lost; one whose stored plan cannot be replayed is rebuilt from its transcript alone, as a new model, and says so', async () => {
    const dir = mkdtempSync(join(tmpdir(), 'contextd-release-unreplayable-'));
    dirs.push(dir);
    const a = parts(dir, 'a', 6, []);
    const b = parts(dir, 'b', 6, [], 'b');
    let t = 1_000_000;
    const { manager, lines, db } = setup({ now: () => t, memory: { maxSessionTokens: 0, releaseAfterMs: 0, idleReleaseMs: 1 } });
    const edited = async (q: typeof a, id: string) => {
      const s = manager.ingest(q.file, id, 'openai-chat', q.part(0).events, q.part(0).toOffset);
      const plan = await manager.compactNow(id, 0.9999, false);
      manager.acknowledge(plan.planId, true, undefined, undefined);
      return { s, plan };
    };
    const errors = () => lines.filter((l) => (l.level as number) >= 50).map((l) => l.msg);

    // a's plan row is gone before the release: a is kept in memory, its edits with it (said once).
    const ea = await edited(a, 'a');
    const kept = modelOf(ea.s);
    db.prepare('DELETE FROM plans WHERE plan_id = ?').run(ea.plan.planId);
    t += 10;
    expect(manager.releaseIdle()).toBe(0);
    t += 10;
    expect(manager.releaseIdle()).toBe(0);
    expect(ea.s.released).toBeUndefined();
    expect(modelOf(ea.s)).toEqual(kept);
    expect(errors()).toEqual(['session kept in memory for good: its applied edits cannot be replayed from the plan log, and a rebuild from its transcript would lose them']);
    manager.removeSession('a');

    // b's plan row is damaged after its release: rebuilt from the transcript alone (the edits are lost, and the log says so).
    const eb = await edited(b, 'b');
    const generation = eb.s.life.generation;
    t += 10;
    expect(manager.releaseIdle()).toBe(1);
    db.prepare(`UPDATE plan_bodies SET plan = '{"planId":"x","edits":[]}' WHERE plan_id = ?`).run(eb.plan.planId);
    await manager.requireLoaded('b');
    const plain = setup().manager.ingest(b.file, 'b', 'openai-chat', b.part(0).events, b.part(0).toOffset);
    expect(eb.s.model.messages()).toEqual(plain.model.messages());
    expect(eb.s.life.generation).toBe(generation + 1);
    expect(errors().at(-1)).toBe('released session rebuilt from its transcript WITHOUT the edits the agent applied: they could not be replayed from the plan log');
    // Now a model of its transcript alone: released and rebuilt again, it is that model, with no error.
    const n = errors().length;
    t += 10;
    expect(manager.releaseIdle()).toBe(1);
    await manager.requireLoaded('b');
    expect(eb.s.model.messages()).toEqual(plain.model.messages());
    expect(errors()).toHaveLength(n);
  });

  it('the memory budget releases an edited session that keeps reading (nothing pins it), and every rebuild has its edits: the models held stay within the budget', async () => {
    const dir = mkdtempSync(join(tmpdir(), 'contextd-budget-edited-'));
    dirs.push(dir);
    const a = parts(dir, 'a', 12, [30, 40, 50, 60, 70]);
    const b = parts(dir, 'b', 12, [], 'b');
    // Room for either session whole, not for both.
    // A window so large that no plan is made by itself: only the agent's, so nothing else pins a session.
    const budgetTokens = 10_000_000;
    const whole = (q: typeof a, id: string) => {
      const m = setup({ budgetTokens }).manager;
      for (let k = 0; k < q.count; k++) m.ingest(q.file, id, 'openai-chat', q.part(k).events, q.part(k).toOffset);
      return m.heldTokens();
    };
    const budget = Math.max(whole(a, 'a'), whole(b, 'b')) + 10;
    // Reference: never released (no budget), the same edits applied at the same places.
    const ref = setup({ budgetTokens }).manager;
    const ra = ref.ingest(a.file, 'a', 'openai-chat', a.part(0).events, a.part(0).toOffset);
    let t = 1_000_000;
    const { manager, lines } = setup({ budgetTokens, now: () => t, memory: { maxSessionTokens: budget, releaseAfterMs: 0, idleReleaseMs: 0 } });
    const sa = manager.ingest(a.file, 'a', 'openai-chat', a.part(0).events, a.part(0).toOffset);
    const plan = await manager.compactNow('a', 0.9999, false);
    manager.acknowledge(plan.planId, true, undefined, undefined);
    applyPlan(ra.model, plan);
    expect(modelOf(sa)).toEqual(modelOf(ra));
    t += 10;
    const sb = manager.ingest(b.file, 'b', 'openai-chat', b.part(0).events, b.part(0).toOffset);
    expect(sa.released, 'the edited session was kept in memory over the budget').toBeDefined();
    expect(sb.released).toBeUndefined();
    expect(manager.heldTokens()).toBeLessThanOrEqual(budget);
    // a reads on (its agent unsubscribed and went on working): each append rebuilds it with its edit, and b goes.
    for (let k = 1; k < a.count; k++) {
      t += 10;
      manager.ingest(a.file, 'a', 'openai-chat', a.part(k).events, a.part(k).toOffset);
      ref.ingest(a.file, 'a', 'openai-chat', a.part(k).events, a.part(k).toOffset);
      await manager.requireLoaded('a');
      expect(modelOf(sa)).toEqual(modelOf(ra));
      expect(sa.model.messages().filter((m) => m.isSummary).length).toBe(plan.edits.length);
      expect(manager.heldTokens()).toBeLessThanOrEqual(budget);
      t += 10;
      await manager.requireLoaded('b');
      expect(sa.released).toBeDefined();
      expect(manager.heldTokens()).toBeLessThanOrEqual(budget);
    }
    expect(lines.filter((l) => l.msg === 'released session rebuilt from its transcript').length).toBeGreaterThan(a.count);
    expect(lines.filter((l) => (l.level as number) >= 50)).toEqual([]);
  });
});

describe('SessionManager release of a session with applied edits: what the review found', () => {
  it('keeps the edits the agent declined in a partial apply held after a release and rebuild (the rebuilt model has the same section ids)', async () => {
    const dir = mkdtempSync(join(tmpdir(), 'contextd-release-declined-'));
    dirs.push(dir);
    const p = parts(dir, 'a', 8, []);
    let t = 1_000_000;
    // A window so large that the zone stays 'ok': the hold lasts its cooldown.
    const { manager } = setup({ budgetTokens: 10_000_000, now: () => t, memory: { maxSessionTokens: 0, releaseAfterMs: 0, idleReleaseMs: 1 } });
    const s = manager.ingest(p.file, 'a', 'openai-chat', p.part(0).events, p.part(0).toOffset);
    const plan = await manager.compactNow('a', 0.9999, false);
    expect(plan.edits.length).toBeGreaterThan(2);
    const chosen = [plan.edits[0]?.editId as string];
    manager.acknowledge(plan.planId, true, chosen, 'kept the rest');
    const state = () => ({ zone: zoneOf(s.model.headroom(), { reserveRatio: 0.15, softWatermark: 0.6 }), headroom: s.model.headroom().headroom });
    // What an automatic plan leaves alone (sessions.ts planFrom asks exactly this).
    const held = () => [...(s.declined.held(s.model, state(), 0.15, t)?.sectionIds ?? [])].sort();
    const before = held();
    expect(before.length).toBeGreaterThan(0);
    t += 10;
    expect(manager.releaseIdle()).toBe(1);
    await manager.requireLoaded('a');
    expect(s.released).toBeUndefined();
    expect(held()).toEqual(before);
  });

  it('says so when an ack leaves the model unreplayable (its plan row missing when acked): the session is kept in memory, not silently', async () => {
    const dir = mkdtempSync(join(tmpdir(), 'contextd-release-unlogged-'));
    dirs.push(dir);
    const p = parts(dir, 'a', 6, []);
    let t = 1_000_000;
    const { manager, lines, db } = setup({ now: () => t, memory: { maxSessionTokens: 0, releaseAfterMs: 0, idleReleaseMs: 1 } });
    const s = manager.ingest(p.file, 'a', 'openai-chat', p.part(0).events, p.part(0).toOffset);
    const plan = await manager.compactNow('a', 0.9999, false);
    // The row was not stored (or was lost) before the ack: the edits can never be replayed.
    db.prepare('DELETE FROM plans WHERE plan_id = ?').run(plan.planId);
    manager.acknowledge(plan.planId, true, undefined, undefined);
    t += 10;
    expect(manager.releaseIdle()).toBe(0);
    t += 10;
    expect(manager.releaseIdle()).toBe(0);
    expect(s.released).toBeUndefined();
    // Said once, at the ack (the budget never offers such a session for release again).
    const said = lines.filter((l) => (l.level as number) >= 40 && String(l.msg).startsWith('session kept in memory'));
    expect(said.map((l) => l.msg)).toEqual(['session kept in memory from now on: the edits just applied could not be recorded for a rebuild']);
    expect(said[0]?.why).toBe(`plan ${plan.planId} is not in the plan log`);
  });

  it('a budget reconfigured (SIGHUP) while an edited session is being rebuilt takes effect on the rebuilt model', async () => {
    const dir = mkdtempSync(join(tmpdir(), 'contextd-release-sighup-'));
    dirs.push(dir);
    const p = parts(dir, 'a', 8, [30]);
    let t = 1_000_000;
    const memory = { maxSessionTokens: 0, releaseAfterMs: 0, idleReleaseMs: 1 };
    const loop = (budgetTokens: number) => ({ budgetTokens, reserveRatio: 0.15, softWatermark: 0.6, hysteresis: 0.1, minPlanIntervalMs: 0, turnSliceMs: 0, memory });
    const { tokenCounter, mid } = midRebuildCounter();
    const { manager } = setup({ tokenCounter, now: () => t, memory });
    const s = manager.ingest(p.file, 'a', 'openai-chat', p.part(0).events, p.part(0).toOffset);
    const plan = await manager.compactNow('a', 0.9999, false);
    manager.acknowledge(plan.planId, true, undefined, undefined);
    manager.ingest(p.file, 'a', 'openai-chat', p.part(1).events, p.part(1).toOffset);
    expect(s.model.headroom().total).toBe(20_000);
    t += 10;
    expect(manager.releaseIdle()).toBe(1);
    mid.act = () => manager.reconfigure(loop(30_000));
    await manager.requireLoaded('a');
    expect(mid.act, 'the budget was reconfigured during the rebuild').toBeUndefined();
    expect(s.model.headroom().total).toBe(30_000);
  });

  it('a budget reconfigured (SIGHUP) while a new session\'s first lines wait in the queue leaves it releasable', async () => {
    const dir = mkdtempSync(join(tmpdir(), 'contextd-release-sighup-queued-'));
    dirs.push(dir);
    const p = parts(dir, 'a', 6, []);
    let t = 1_000_000;
    const memory = { maxSessionTokens: 0, releaseAfterMs: 0, idleReleaseMs: 1 };
    const { manager, lines } = setup({ now: () => t, memory, budgetTokens: 10_000_000 });
    // Read, not applied yet: the model is empty and has no offset.
    const s = manager.enqueue(p.file, 'a', 'openai-chat', p.part(0).events, p.part(0).toOffset, p.part(0).toOffset);
    expect(s.tailOffset).toBeUndefined();
    manager.reconfigure({ budgetTokens: 9_000_000, reserveRatio: 0.15, softWatermark: 0.6, hysteresis: 0.1, minPlanIntervalMs: 0, turnSliceMs: 0, memory });
    await manager.settled();
    const before = modelOf(s);
    expect(before.tokens).toBeGreaterThan(0);
    expect(s.replay.unreplayable).toBeUndefined();
    t += 10;
    await expectRebuiltAsBefore(manager, s, 'a', before, lines);
  });

  it('shutdown while an edited session is being rebuilt: the rebuild stops, and nothing is written to the closed database', async () => {
    const dir = mkdtempSync(join(tmpdir(), 'contextd-release-shutdown-'));
    dirs.push(dir);
    const p = parts(dir, 'a', 8, [30, 45]);
    let t = 1_000_000;
    const { tokenCounter, mid } = midRebuildCounter();
    const { manager, lines, db } = setup({ tokenCounter, now: () => t, memory: { maxSessionTokens: 0, releaseAfterMs: 0, idleReleaseMs: 1 } });
    const s = manager.ingest(p.file, 'a', 'openai-chat', p.part(0).events, p.part(0).toOffset);
    const plan = await manager.compactNow('a', 0.9999, false);
    manager.acknowledge(plan.planId, true, undefined, undefined);
    manager.ingest(p.file, 'a', 'openai-chat', p.part(1).events, p.part(1).toOffset);
    t += 10;
    expect(manager.releaseIdle()).toBe(1);
    let drained: Promise<void> | undefined;
    mid.act = () => {
      drained = manager.drain();
      db.close();
    };
    // An append arrives for the released session: it waits for the rebuild, which the shutdown interrupts.
    manager.ingest(p.file, 'a', 'openai-chat', p.part(2).events, p.part(2).toOffset);
    await expect(manager.restore(s)).resolves.toBe(s);
    await drained;
    expect(lines.filter((l) => (l.level as number) >= 50).map((l) => l.msg)).toEqual([]);
  });

  it('a released tailed session then fed over the socket (session.sync) keeps the fed model: no rebuild from its transcript replaces it', async () => {
    const dir = mkdtempSync(join(tmpdir(), 'contextd-release-fed-'));
    dirs.push(dir);
    const p = parts(dir, 'a', 6, []);
    let t = 1_000_000;
    const { manager } = setup({ budgetTokens: 10_000_000, now: () => t, memory: { maxSessionTokens: 0, releaseAfterMs: 0, idleReleaseMs: 1 } });
    const s = manager.ingest(p.file, 'a', 'openai-chat', p.part(0).events, p.part(0).toOffset);
    t += 10;
    expect(manager.releaseIdle()).toBe(1);
    const messages = normalizeOpenAIMessages([{ role: 'user', content: 'the context the agent holds now' }]);
    manager.feed('a', messages, 20_000);
    const fed = s.model.messages();
    expect(fed).toHaveLength(1);
    // A request that reads the model (session.headroom, session.sections) restores it first.
    await manager.requireLoaded('a');
    expect(s.model.messages()).toEqual(fed);
    expect(s.released).toBeUndefined();
  });

  it('the memory budget releases another session when the one it picked turns out unreplayable (its plan row lost after the ack)', async () => {
    const dir = mkdtempSync(join(tmpdir(), 'contextd-release-refused-'));
    dirs.push(dir);
    const a = parts(dir, 'a', 8, []);
    const b = parts(dir, 'b', 8, [], 'b');
    const c = parts(dir, 'c', 2, [], 'c');
    let t = 1_000_000;
    const loop = (maxSessionTokens: number) => ({ budgetTokens: 10_000_000, reserveRatio: 0.15, softWatermark: 0.6, hysteresis: 0.1, minPlanIntervalMs: 0, turnSliceMs: 0, memory: { maxSessionTokens, releaseAfterMs: 0, idleReleaseMs: 0 } });
    const { manager, db } = setup({ budgetTokens: 10_000_000, now: () => t, memory: loop(0).memory });
    const sa = manager.ingest(a.file, 'a', 'openai-chat', a.part(0).events, a.part(0).toOffset);
    const plan = await manager.compactNow('a', 0.9999, false);
    manager.acknowledge(plan.planId, true, [plan.edits[0]?.editId as string], undefined);
    db.prepare('DELETE FROM plans WHERE plan_id = ?').run(plan.planId);
    t += 10;
    const sb = manager.ingest(b.file, 'b', 'openai-chat', b.part(0).events, b.part(0).toOffset);
    // Room for what a and b hold now; c is smaller than either.
    const budget = manager.heldTokens();
    const smallest = Math.min(sa.model.tokens(), sb.model.tokens());
    manager.reconfigure(loop(budget));
    t += 10;
    const sc = manager.ingest(c.file, 'c', 'openai-chat', c.part(0).events, c.part(0).toOffset);
    expect(sc.model.tokens()).toBeLessThan(smallest);
    // a (the oldest) would have been enough, but its edits cannot be replayed: it stays, and b goes instead.
    expect(sa.released).toBeUndefined();
    expect(sb.released).toBeDefined();
    expect(manager.heldTokens()).toBeLessThanOrEqual(budget);
  });
});

describe('SessionManager rebuild while the plan log cannot be read', () => {
  it('a transient error reading the plan log keeps the session released with its edits to replay: the request gets STORE_FAILED, an append waits, and the next request once it reads again rebuilds the model with its edits', async () => {
    const dir = mkdtempSync(join(tmpdir(), 'contextd-release-busy-'));
    dirs.push(dir);
    const p = parts(dir, 'a', 8, [30]);
    let t = 1_000_000;
    const { manager, lines, plans } = setup({ now: () => t, memory: { maxSessionTokens: 0, releaseAfterMs: 0, idleReleaseMs: 1 } });
    const s = manager.ingest(p.file, 'a', 'openai-chat', p.part(0).events, p.part(0).toOffset);
    const plan = await manager.compactNow('a', 0.9999, false);
    manager.acknowledge(plan.planId, true, undefined, undefined);
    const edited = modelOf(s);
    // What the model is once the append waiting below is applied to it (the reference, with the edits).
    const ref = setup({ now: () => t });
    const r = ref.manager.ingest(p.file, 'a', 'openai-chat', p.part(0).events, p.part(0).toOffset);
    applyPlan(r.model, plan, plan.edits.map((e) => e.editId));
    ref.manager.ingest(p.file, 'a', 'openai-chat', p.part(1).events, p.part(1).toOffset);
    t += 10;
    expect(manager.releaseIdle()).toBe(1);

    // The database is busy (another process holds it): every read of the plan log fails for now.
    let busy = true;
    for (const m of ['get', 'appliedAt'] as const) {
      const real = plans[m].bind(plans);
      plans[m] = ((id: string) => {
        if (busy) throw new Database.SqliteError('database is locked', 'SQLITE_BUSY');
        return real(id);
      }) as never;
    }
    await expect(manager.requireLoaded('a')).rejects.toMatchObject({ code: 'STORE_FAILED' });
    expect(s.released).toBeDefined();
    expect(s.replay.steps).toHaveLength(1);
    // An append meanwhile waits for the rebuild; it is not applied to a model without the edits.
    manager.ingest(p.file, 'a', 'openai-chat', p.part(1).events, p.part(1).toOffset);
    await new Promise((done) => setImmediate(done));
    expect(s.released).toBeDefined();
    await expect(manager.requireLoaded('a')).rejects.toMatchObject({ code: 'STORE_FAILED' });
    const said = lines.filter((l) => typeof l.msg === 'string' && l.msg.startsWith('released session not rebuilt now: the plan log cannot be read'));
    expect(said).toHaveLength(1);
    expect(lines.some((l) => l.msg === 'released session rebuilt from its transcript WITHOUT the edits the agent applied: they could not be replayed from the plan log')).toBe(false);

    // Readable again: the append that waits brings the rebuild back by itself (retried after a backoff), with the edits.
    busy = false;
    for (let i = 0; i < 100 && s.released; i++) await new Promise((done) => setTimeout(done, 50));
    expect(s.released).toBeUndefined();
    expect(modelOf(s)).toEqual(modelOf(r));
    expect(modelOf(s)).not.toEqual(edited);
    expect(lines.filter((l) => l.msg === 'released session rebuilt from its transcript').map((l) => l.plansReplayed)).toEqual([1]);
  });
});

describe('SessionManager planning after a rebuild', () => {
  it('the advisory plan a release expired is made again from the rebuilt model, without waiting for an append', async () => {
    const dir = mkdtempSync(join(tmpdir(), 'contextd-release-advisory-'));
    dirs.push(dir);
    const p = parts(dir, 'a', 10, []);
    let t = 1_000_000;
    const { manager, db } = setup({ now: () => t, hasSubscribers: () => false, memory: { maxSessionTokens: 0, releaseAfterMs: 0, idleReleaseMs: 1 } });
    const made: Plan[] = [];
    manager.on('plan', (_s, plan) => made.push(plan));
    const s = manager.ingest(p.file, 'a', 'openai-chat', p.part(0).events, p.part(0).toOffset);
    for (let i = 0; i < 100 && made.length === 0; i++) await new Promise((done) => setTimeout(done, 20));
    expect(made).toHaveLength(1);
    const first = made[0] as Plan;
    // Past the advisory throttle: nothing but the release holds a new plan back.
    t += 24 * 3600_000;
    expect(manager.releaseIdle()).toBe(1);
    expect(new PlanLog(db).get(first.planId)?.status).toBe('expired');
    await manager.requireLoaded('a');
    expect(s.released).toBeUndefined();
    for (let i = 0; i < 100 && made.length === 1; i++) await new Promise((done) => setTimeout(done, 20));
    expect(made).toHaveLength(2);
    expect(s.life.openPlanCount).toBe(1);
  });
});

describe('SessionManager subscribe to a released session', () => {
  it('a release between the subscribe\'s rebuild and its subscribed() does not leave the empty placeholder model answered: it is rebuilt again, and no 0-token headroom sample is stored', async () => {
    const dir = mkdtempSync(join(tmpdir(), 'contextd-release-subscribe-'));
    dirs.push(dir);
    const p = parts(dir, 'a', 2, []);
    let t = 1_000_000;
    const { manager, db } = setup({ now: () => t, memory: { maxSessionTokens: 0, releaseAfterMs: 0, idleReleaseMs: 1 } });
    const s = manager.ingest(p.file, 'a', 'openai-chat', p.part(0).events, p.part(0).toOffset);
    const before = modelOf(s);
    expect(s.model.headroom().headroom).toBeLessThan(0.99);
    t += 10;
    expect(manager.releaseIdle()).toBe(1);
    // session.subscribe rebuilds it, replies, and calls subscribed() on the next tick; the budget released it in between.
    await manager.restore(s);
    t += 10;
    expect(manager.releaseIdle()).toBe(1);
    await manager.subscribed(s);
    expect(s.released).toBeUndefined();
    expect(modelOf(s)).toEqual(before);
    expect(new HeadroomLog(db).list('a').map((x) => x.tokens)).not.toContain(0);
  });
});

describe('SessionManager release while the plan log cannot be read', () => {
  it('a transient error reading the plan log before a release keeps the session for now, not for good: it is released once the plan log reads again', async () => {
    const dir = mkdtempSync(join(tmpdir(), 'contextd-release-busy-check-'));
    dirs.push(dir);
    const p = parts(dir, 'a', 8, []);
    let t = 1_000_000;
    const { manager, lines, plans } = setup({ now: () => t, memory: { maxSessionTokens: 0, releaseAfterMs: 0, idleReleaseMs: 1 } });
    const s = manager.ingest(p.file, 'a', 'openai-chat', p.part(0).events, p.part(0).toOffset);
    const plan = await manager.compactNow('a', 0.9999, false);
    manager.acknowledge(plan.planId, true, undefined, undefined);
    let busy = true;
    const real = plans.appliedAt.bind(plans);
    plans.appliedAt = (id) => {
      if (busy) throw new Database.SqliteError('database is locked', 'SQLITE_BUSY');
      return real(id);
    };
    t += 10;
    expect(manager.releaseIdle()).toBe(0);
    t += 10;
    expect(manager.releaseIdle()).toBe(0);
    expect(s.replay.unreplayable).toBeUndefined();
    expect(lines.filter((l) => l.msg === 'session not released now: the plan log cannot be read to check its applied edits; tried again at the next release')).toHaveLength(1);
    busy = false;
    t += 10;
    expect(manager.releaseIdle()).toBe(1);
    const before = s.released?.headroom;
    await manager.requireLoaded('a');
    expect(s.model.headroom().countedTokens).toBe(before?.countedTokens);
  });
});

describe('SessionManager summary cache', () => {
  it('dry-run plans do not age the summary cache: a real plan after several of them reuses the summaries made before them', async () => {
    const dir = mkdtempSync(join(tmpdir(), 'contextd-dryrun-cache-'));
    dirs.push(dir);
    const p = parts(dir, 'a', 10, []);
    const { summarizer, counted } = countedSummarizer();
    const { manager } = setup({ summarizer, budgetTokens: 100_000, memory: { maxSessionTokens: 0, releaseAfterMs: 0, idleReleaseMs: 0 } });
    manager.ingest(p.file, 'a', 'openai-chat', p.part(0).events, p.part(0).toOffset);
    const first = await manager.compactNow('a', 0.9999, true);
    expect(first.edits.length).toBeGreaterThan(0);
    const made = counted();
    expect(made).toBeGreaterThan(0);
    // Dry runs a client asks for with a target the session already meets: no edit, no summary used.
    const met = (await manager.requireLoaded('a')).model.headroom().headroom / 2;
    expect(met).toBeGreaterThan(0);
    for (let i = 0; i < 5; i++) expect((await manager.compactNow('a', met, true)).edits).toEqual([]);
    const real = await manager.compactNow('a', 0.9999, false);
    expect(real.edits.map((e) => e.summary)).toEqual(first.edits.map((e) => e.summary));
    expect(counted(), 'the real plan summarized again what the first dry run had summarized').toBe(made);
  });
});
