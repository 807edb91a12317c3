import { afterEach, describe, expect, it } from 'vitest';
import { mkdtempSync, rmSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { pino } from 'pino';
import { SessionManager } from '../../src/daemon/sessions.js';
import { Archive, HeadroomLog, PlanLog, openDb, type Db } from '../../src/store/index.js';
import { createTokenCounter } from '../../src/model/tokens.js';
import { createSummarizer } from '../../src/compact/index.js';
import { normalizeOpenAIMessages } from '../../src/ingest/index.js';
import type { MemoryBudget } from '../../src/daemon/lifecycle.js';
import { expectCollected } from './helpers.js';

const dirs: string[] = [];
const dbs: Db[] = [];
afterEach(() => {
  for (const db of dbs.splice(0)) if (db.open) db.close();
  for (const d of dirs.splice(0)) rmSync(d, { recursive: true, force: true });
});

function manager(memory?: MemoryBudget): SessionManager {
  const dir = mkdtempSync(join(tmpdir(), 'contextd-feed-'));
  dirs.push(dir);
  const db = openDb(join(dir, 'contextd.db'));
  dbs.push(db);
  const logger = pino({ level: 'silent' });
  return new SessionManager(
    { budgetTokens: 50_000, reserveRatio: 0.15, softWatermark: 0.6, hysteresis: 0.1, minPlanIntervalMs: 0, ...(memory ? { memory } : {}) },
    { logger, tokenCounter: createTokenCounter(), summarizer: createSummarizer({ kind: 'extractive' }, { logger }), headroomLog: new HeadroomLog(db), archive: new Archive(db), plans: new PlanLog(db), hasSubscribers: () => false },
  );
}

const chat = (n: number) => [
  { role: 'system', content: 'be brief' },
  ...Array.from({ length: n }, (_, i) => ({ role: i % 2 === 0 ? 'user' : 'assistant', content: `turn ${i}: ${'word '.repeat(20)}` })),
];

describe('session.sync: a session fed with the list the agent sends', () => {
  it('normalizes one message per entry with content-hash ids, keeping empty entries', () => {
    const msgs = normalizeOpenAIMessages([
      { role: 'user', content: 'hi' },
      { role: 'assistant', content: '' },
      { role: 'user', content: 'hi' },
      { role: 'assistant', content: 'x [contextd recall h_1]', isSummary: true },
    ]);
    expect(msgs).toHaveLength(4);
    expect(msgs[1]).toMatchObject({ role: 'assistant', text: '' });
    expect(msgs[2]?.id).toBe(`${msgs[0]?.id}#1`);
    expect(msgs[3]?.isSummary).toBe(true);
    expect(() => normalizeOpenAIMessages([{ role: 'user', content: 'a' }, { role: 'session_meta' }])).toThrow(/messages\.1\.role/);
    // content nested too deeply to walk names the message, not a stack overflow
    let deep: unknown = 'x';
    for (let i = 0; i < 200_000; i++) deep = [deep];
    expect(() => normalizeOpenAIMessages([{ role: 'user', content: 'a' }, { role: 'user', content: deep as string }])).toThrow(/^messages\.1: nested too deeply to read$/);
  });

  it('appends a longer list, truncates a changed tail, rebuilds on anything else', () => {
    const m = manager();
    const first = m.feed('h1', normalizeOpenAIMessages(chat(4)), 32_000);
    expect(first.rebuilt).toBe(true);
    expect(first.session.model.messages()).toHaveLength(5);
    expect(first.session.model.headroom().total).toBe(32_000);

    const longer = m.feed('h1', normalizeOpenAIMessages(chat(8)), 32_000);
    expect(longer.rebuilt).toBe(false);
    expect(longer.session.model.messages().map((x) => x.text)).toEqual(chat(8).map((x) => x.content));

    // The last two entries replaced by one ephemeral message: truncated after the prefix.
    const tail = [...chat(6), { role: 'user', content: 'ephemeral prefill' }];
    const changed = m.feed('h1', normalizeOpenAIMessages(tail), 32_000);
    expect(changed.rebuilt).toBe(false);
    expect(changed.session.model.messages().map((x) => x.text)).toEqual(tail.map((x) => x.content));

    const other = m.feed('h1', normalizeOpenAIMessages([{ role: 'user', content: 'a different conversation' }]), 32_000);
    expect(other.rebuilt).toBe(true);
    expect(other.session.model.messages()).toHaveLength(1);
    expect(m.feed('h1', normalizeOpenAIMessages([{ role: 'user', content: 'a different conversation' }]), 64_000).rebuilt).toBe(true);
  });

  it('plans index the fed list, and a tailed transcript of the same id is not mixed in', async () => {
    const m = manager();
    const list = [
      { role: 'system', content: 'be brief' },
      { role: 'user', content: 'read the logs; never delete them' },
      ...Array.from({ length: 12 }, (_, i) => [
        { role: 'assistant', content: '', tool_calls: [{ id: `c${i}`, type: 'function', function: { name: 'cat', arguments: `{"f":"log${i}"}` } }] },
        { role: 'tool', tool_call_id: `c${i}`, content: `log ${i} `.repeat(300) },
      ]).flat(),
      { role: 'user', content: 'what failed?' },
    ];
    const { session } = m.feed('h2', normalizeOpenAIMessages(list), 12_000);
    m.ingest('/x/h2.jsonl', 'h2', 'openai-chat', [{ type: 'message', message: { id: 'L0', role: 'user', text: 'from the tailer' } }]);
    expect(session.model.messages()).toHaveLength(list.length);
    const plan = await m.compactNow('h2', undefined, false);
    expect(plan.edits.length).toBeGreaterThan(0);
    for (const e of plan.edits) {
      const replaced = list.slice(e.messageRange.start, e.messageRange.end + 1);
      expect(replaced.length).toBeGreaterThan(0);
      expect(replaced.some((x) => x.role === 'system')).toBe(false);
    }
    m.acknowledge(plan.planId, true, undefined, undefined);
    expect(session.model.headroom().tokens).toBeLessThan(12_000 * 0.85);
    await m.drain();
  });

  it('a fed session released for another keeps the edits its agent declined when the next list begins with the one it was released with', async () => {
    // Room for one fed session; the window large enough that nothing is planned on its own.
    const m = manager({ maxSessionTokens: 0, releaseAfterMs: 60_000, idleReleaseMs: 0, maxFedSessions: 1 });
    const list = [
      { role: 'system', content: 'be brief' },
      ...Array.from({ length: 8 }, (_, i) => [
        { role: 'assistant', content: '', tool_calls: [{ id: `c${i}`, type: 'function', function: { name: 'cat', arguments: `{"f":"log${i}"}` } }] },
        { role: 'tool', tool_call_id: `c${i}`, content: `log ${i} `.repeat(300) },
      ]).flat(),
      { role: 'user', content: 'what failed?' },
    ];
    const { session: a } = m.feed('a', normalizeOpenAIMessages(list), 200_000);
    const plan = await m.compactNow('a', 0.999, false);
    expect(plan.edits.length).toBeGreaterThan(0);
    m.acknowledge(plan.planId, false, undefined, 'the agent keeps its logs');
    const state = { zone: 'ok' as const, headroom: a.model.headroom().headroom };
    const declined = a.declined.held(a.model, state, 0.15, Date.now())?.sectionIds;
    expect(declined?.size).toBeGreaterThan(0);

    // Another session takes the one place: a is released (no client subscribed to it), and its
    // model is garbage once released (the declined edits' record no longer holds it).
    const released = new WeakRef(a.model);
    m.feed('b', normalizeOpenAIMessages([{ role: 'user', content: 'another agent' }]), 200_000);
    expect(a.released).toBeDefined();
    expect(a.history.snapshot('a').messages).toHaveLength(0);
    await expectCollected(released);

    // a's agent sends its list again, one message longer: rebuilt, the declined edits still held.
    const again = m.feed('a', normalizeOpenAIMessages([...list, { role: 'assistant', content: 'log 3 failed' }]), 200_000);
    expect(again.rebuilt).toBe(true);
    expect(a.released).toBeUndefined();
    expect(a.model.messages()).toHaveLength(list.length + 1);
    expect(a.declined.held(a.model, state, 0.15, Date.now())?.sectionIds).toEqual(declined);
    await m.drain();
  });
});
