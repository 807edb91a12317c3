/**
 * Every re-plan is the plan made from scratch: a session model grown line by line and planned
 * after each read (with every cache the planner keeps between plans: key terms, term sets,
 * the summary cache swept after each plan) gives the plan of a model built afresh from the same
 * transcript lines, with the same earlier plans applied, and planned with an empty cache.
 */
import { describe, expect, it } from 'vitest';
import { createTokenCounter } from '../../src/model/tokens.js';
import { SessionModel } from '../../src/model/index.js';
import { applyPlan, createExtractiveSummarizer, planCompaction, SummaryCache, type Plan } from '../../src/compact/index.js';
import { TranscriptDecoder } from '../../src/ingest/decoder.js';
import { demoTranscriptJsonl } from '../../src/demo/transcript.js';
import { generateSession } from '../../src/bench/retention.js';
import type { TranscriptEvent } from '../../src/model/messages.js';

const counter = createTokenCounter();
const summarizer = createExtractiveSummarizer();

function plan(model: SessionModel, cache: SummaryCache): Promise<Plan> {
  return planCompaction(model, { mode: 'reserve', tokenCounter: counter, cache, summarizer, now: () => 1_700_000_000_000 });
}

describe('re-plan against a plan from scratch', () => {
  it('grown in uneven reads, with plans applied: each plan equals the one of a model built afresh', async () => {
    const lines = demoTranscriptJsonl({ rounds: 30 }).trim().split('\n');
    const steps = [1, 3, 1, 1, 7, 2, 1, 40, 1, 1, 5, 1, 2];
    const grown = new SessionModel({ sessionId: 'scratch', tokenCounter: counter, budgetTokens: 14_000 });
    const decoder = new TranscriptDecoder();
    const cache = new SummaryCache();
    /** Lines read before each applied plan, and that plan. */
    const applied: { at: number; plan: Plan }[] = [];
    let at = 0;
    let compared = 0;
    for (let k = 0; at < lines.length; k++) {
      const n = steps[k % steps.length] as number;
      grown.applyAll(decoder.push(Buffer.from(lines.slice(at, at + n).join('\n') + '\n')));
      at = Math.min(lines.length, at + n);
      const a = await plan(grown, cache);
      cache.endPlan();
      // from scratch: fresh message objects, the same plans applied after the same lines
      const fresh = new SessionModel({ sessionId: 'scratch', tokenCounter: counter, budgetTokens: 14_000 });
      const d = new TranscriptDecoder();
      let read = 0;
      for (const x of applied) {
        fresh.applyAll(d.push(Buffer.from(lines.slice(read, x.at).join('\n') + (x.at > read ? '\n' : ''))));
        read = x.at;
        applyPlan(fresh, x.plan);
      }
      fresh.applyAll(d.push(Buffer.from(lines.slice(read, at).join('\n') + (at > read ? '\n' : ''))));
      expect(fresh.messages().map((m) => m.id)).toEqual(grown.messages().map((m) => m.id));
      const b = await plan(fresh, new SummaryCache());
      expect(a.edits).toEqual(b.edits);
      compared++;
      if (a.edits.length > 0 && k % 3 !== 2) {
        applyPlan(grown, a);
        applied.push({ at, plan: a });
      }
    }
    expect(compared).toBeGreaterThan(20);
    expect(applied.length).toBeGreaterThan(3);
  }, 240_000);

  it('a generated session whose later turns name earlier facts, rewound now and then, planned after each read and applied now and then', async () => {
    const g = generateSession(77, 60);
    // rewinds: a truncate back a few messages now and then (the agent's /undo), replayed by both
    const events: TranscriptEvent[] = [];
    g.events.forEach((e, i) => {
      events.push(e);
      const back = g.events[i - 4];
      if (i > 0 && i % 45 === 0 && back?.type === 'message') events.push({ type: 'truncate', keepThroughId: back.message.id, reason: 'rewind' });
    });
    const steps = [1, 2, 1, 1, 5, 1, 36, 1, 3];
    const budget = 9_000;
    const grown = new SessionModel({ sessionId: g.sessionId, tokenCounter: counter, budgetTokens: budget });
    const cache = new SummaryCache();
    const applied: { at: number; plan: Plan }[] = [];
    let at = 0;
    let compared = 0;
    for (let k = 0; at < events.length; k++) {
      const n = steps[k % steps.length] as number;
      grown.applyAll(events.slice(at, at + n));
      at = Math.min(events.length, at + n);
      const a = await plan(grown, cache);
      cache.endPlan();
      // fresh event objects (no memo of the grown model's messages is shared)
      const fresh = new SessionModel({ sessionId: g.sessionId, tokenCounter: counter, budgetTokens: budget });
      let read = 0;
      for (const x of applied) {
        fresh.applyAll(structuredClone(events.slice(read, x.at)));
        read = x.at;
        applyPlan(fresh, x.plan);
      }
      fresh.applyAll(structuredClone(events.slice(read, at)));
      const b = await plan(fresh, new SummaryCache());
      expect(a.edits).toEqual(b.edits);
      compared++;
      if (a.edits.length > 0 && k % 4 === 3) {
        applyPlan(grown, a);
        applied.push({ at, plan: a });
      }
    }
    expect(compared).toBeGreaterThan(20);
    expect(applied.length).toBeGreaterThan(2);
  }, 240_000);
});
