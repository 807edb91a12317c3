/**
 * A re-plan after one appended line does work on O(1) sections, whatever the session's size:
 * counted (never timed) as per-message / per-section values computed, messages read into the
 * term references, summaries written and section message lists rebuilt.
 */
import { describe, expect, it } from 'vitest';
import { generateSession } from '../../src/bench/retention.js';
import { createTokenCounter } from '../../src/model/tokens.js';
import { SessionModel } from '../../src/model/index.js';
import { applyPlan, planCompaction, SummaryCache } from '../../src/compact/index.js';
import { countedSummarizer } from './helpers.js';
import { memoComputations } from '../../src/compact/memo.js';
import { referenceMessagesRead } from '../../src/compact/keyterms.js';
import { TranscriptDecoder } from '../../src/ingest/decoder.js';
import { demoTranscript, demoTranscriptJsonl } from '../../src/demo/transcript.js';
import { appendSource, roundAppend } from '../../src/bench/latency.js';

const counter = createTokenCounter();

interface Work {
  readonly computed: number;
  readonly messagesRead: number;
  readonly summaries: number;
}


/** The work of re-plans after single appended lines (an assistant line, then a call and its result). */
async function replanWork(turns: number): Promise<{ sessionTokens: number; work: Work[] }> {
  const g = generateSession(4242, turns);
  const model = new SessionModel({ sessionId: g.sessionId, tokenCounter: counter, budgetTokens: 200_000 });
  model.applyAll(g.events);
  const { summarizer, counted } = countedSummarizer();
  const cache = new SummaryCache();
  const plan = (): Promise<unknown> => planCompaction(model, { mode: 'manual', targetTokens: Math.floor(model.tokens() * 0.5), tokenCounter: counter, cache, summarizer, now: () => 1_700_000_000_000 });
  await plan();
  const appended = [
    [{ id: 'more-1', role: 'assistant' as const, text: 'Running the pool tests again with the new timeout.' }],
    [
      { id: 'more-2', role: 'assistant' as const, text: '', toolCalls: [{ id: 'call-more', name: 'terminal', arguments: '{"command":"npm test -- pool"}' }] },
      { id: 'more-3', role: 'tool' as const, text: 'PASS test/pool.test.ts\n  pool drains on timeout (12 ms)\nTests: 1 passed', toolCallId: 'call-more', toolName: 'terminal' },
    ],
  ];
  const work: Work[] = [];
  for (const messages of appended) {
    for (const message of messages) model.apply({ type: 'message', message });
    const before = { computed: memoComputations(), read: referenceMessagesRead(), summaries: counted() };
    await plan();
    work.push({ computed: memoComputations() - before.computed, messagesRead: referenceMessagesRead() - before.read, summaries: counted() - before.summaries });
  }
  return { sessionTokens: model.tokens(), work };
}

describe('re-plan work', () => {
  it('after one appended line touches the new messages and a few sections, not the session', async () => {
    const small = await replanWork(40);
    const large = await replanWork(137);
    expect(large.sessionTokens).toBeGreaterThan(3 * small.sessionTokens);
    for (const { work } of [small, large]) {
      // the appended messages only
      expect(work.map((w) => w.messagesRead)).toEqual([1, 2]);
      for (const w of work) {
        // a few derived values (terms, lines, verdicts of the new messages and the sections
        // they join) — not one per section (hundreds)
        expect(w.computed).toBeGreaterThan(0);
        expect(w.computed).toBeLessThanOrEqual(12);
        expect(w.summaries).toBeLessThanOrEqual(6);
      }
    }
    // the same work at 3× the size
    expect(large.work.map((w) => w.computed)).toEqual(small.work.map((w) => w.computed));
  }, 120_000);
});

describe('re-plan summaries', () => {
  it('a call repeated later (its older outputs now point at the newest) re-summarizes only new edits, and the plan is the one made from scratch', async () => {
    // The bench latency session: a demo transcript past the soft watermark, then one of its
    // tool calls (with its large result) appended again and again.
    const decoder = new TranscriptDecoder();
    const model = new SessionModel({ sessionId: 'replan-summaries', tokenCounter: counter, budgetTokens: 32_000 });
    model.applyAll(decoder.push(Buffer.from(demoTranscriptJsonl({ rounds: 11 }))));
    const extra = demoTranscript({ rounds: 3, variant: 'z' }).filter((l) => l.role === 'tool' || l.tool_calls);
    const { summarizer, counted } = countedSummarizer();
    const cache = new SummaryCache();
    const plan = (c: SummaryCache) => planCompaction(model, { mode: 'soft', tokenCounter: counter, cache: c, summarizer, now: () => 1_700_000_000_000 });
    await plan(cache);
    const perReplan: number[] = [];
    for (let k = 0; k < 6; k++) {
      const pair = extra.slice((k % 3) * 2, (k % 3) * 2 + 2);
      const lines = pair.map((l) => JSON.stringify({ ...l, tool_call_id: l.tool_call_id ? `${l.tool_call_id}_${k}` : undefined, tool_calls: l.tool_calls?.map((t) => ({ ...t, id: `${t.id}_${k}` })) }));
      model.applyAll(decoder.push(Buffer.from(lines.join('\n') + '\n')));
      let before = counted();
      const replanned = await plan(cache);
      perReplan.push(counted() - before);
      before = counted();
      const scratch = await plan(new SummaryCache());
      const summaries = counted() - before;
      expect(replanned.edits).toEqual(scratch.edits);
      // from scratch every edit is summarized (some twice: a longer summary from the slack)
      expect(summaries).toBeGreaterThanOrEqual(scratch.edits.length);
      expect(scratch.edits.length).toBeGreaterThanOrEqual(6);
    }
    // the appended call's own edit and the few whose grouping changed, not every edit again
    for (const n of perReplan) expect(n).toBeLessThanOrEqual(4);
  }, 120_000);
});

describe('summary cache under edits', () => {
  it('dropping the summaries the last plans did not use keeps the cache small and costs no summary again: plans are those of a cache never swept', async () => {
    // A session growing 10 lines at a time, a plan after each read applied as the daemon's agent does.
    const lines = demoTranscriptJsonl({ rounds: 40 }).trim().split('\n');
    const decoder = new TranscriptDecoder();
    const model = new SessionModel({ sessionId: 'swept-cache', tokenCounter: counter, budgetTokens: 20_000 });
    const swept = { cache: new SummaryCache(), ...countedSummarizer() };
    const kept = { cache: new SummaryCache(), ...countedSummarizer() };
    const plan = (c: typeof swept) => planCompaction(model, { mode: 'reserve', tokenCounter: counter, cache: c.cache, summarizer: c.summarizer, now: () => 1_700_000_000_000 });
    let applied = 0;
    for (let at = 0; at < lines.length; at += 10) {
      model.applyAll(decoder.push(Buffer.from(lines.slice(at, at + 10).join('\n') + '\n')));
      const a = await plan(swept);
      swept.cache.endPlan();
      const b = await plan(kept);
      expect(a.edits).toEqual(b.edits);
      if (a.edits.length === 0) continue;
      applyPlan(model, a);
      applied++;
    }
    expect(applied).toBeGreaterThan(20);
    expect(swept.counted()).toBe(kept.counted());
    // measured: 137 entries against 351 (the cache never swept holds every summary written
    // since, 23 plans applied); 72 when a summary unused for 4 plans was dropped
    expect(swept.cache.size).toBeLessThan(kept.cache.size / 2);
  }, 120_000);

  it('a summary unused for a few plans while the agent declines them is not written again when its edit comes back', async () => {
    // As in `bench latency`: a session past its watermark grows one tool call and its result at
    // a time, and every plan is declined. Which edits a plan picks moves with what it must save,
    // so an edit can sit out several plans (5-7 measured) and come back: swept too early, its
    // summary was written again (with an LLM summarizer, a paid call each time).
    const extra = appendSource();
    const lines = demoTranscriptJsonl({ rounds: 11 }).trim().split('\n');
    const decoder = new TranscriptDecoder();
    const model = new SessionModel({ sessionId: 'declined', tokenCounter: counter, budgetTokens: 32_000 });
    model.applyAll(decoder.push(Buffer.from(lines.join('\n') + '\n')));
    const swept = { cache: new SummaryCache(), ...countedSummarizer() };
    const kept = { cache: new SummaryCache(), ...countedSummarizer() };
    const plan = (c: typeof swept) => planCompaction(model, { mode: 'reserve', tokenCounter: counter, cache: c.cache, summarizer: c.summarizer, now: () => 1_700_000_000_000 });
    for (let k = 0; k < 40; k++) {
      model.applyAll(decoder.push(Buffer.from(roundAppend(extra, k, 'declined s0'))));
      const a = await plan(swept);
      swept.cache.endPlan();
      const b = await plan(kept);
      expect(a.edits).toEqual(b.edits);
    }
    expect(swept.counted()).toBe(kept.counted());
  }, 120_000);
});
