/**
 * Pins what the model and the planner compute for generated sessions — every section's
 * factors and tokens, and every edit of a plan (cold, after an appended line, after an applied
 * edit and a truncate) — so a change of representation (interned terms, packed fingerprints,
 * caches) that alters a score or a plan fails here. The snapshot was written before issue 14's
 * memory work; update it only for a deliberate change of scoring or planning.
 */
import { createHash } from 'node:crypto';
import { describe, expect, it } from 'vitest';
import { derivedDigestOf, SessionModel, type DerivedDataCache } from '../../src/model/index.js';
import { MapCache } from '../model/helpers.js';
import { createTokenCounter } from '../../src/model/tokens.js';
import { applyPlan, planCompaction, SummaryCache, type Plan } from '../../src/compact/index.js';
import { generateSession } from '../../src/bench/retention.js';
import { generatedTranscript } from '../../src/bench/transcripts.js';
import { TranscriptDecoder } from '../../src/ingest/decoder.js';
import type { TranscriptEvent } from '../../src/model/messages.js';

const counter = createTokenCounter();

function sectionLines(model: SessionModel): string[] {
  return model.sections().map((s) =>
    [s.id, s.kind, s.priority, s.tokens, s.anchor, s.pending ?? false, s.compacted ?? false, s.messageRange.start, s.messageRange.end, s.messageIds.join('+'), s.recency.turn, s.recency.ageTurns, s.relevance, s.density, s.score].join(' '),
  );
}

function planLines(plan: Plan): string[] {
  const sha = (t: string): string => createHash('sha256').update(t).digest('hex').slice(0, 16);
  return [
    `tokens ${plan.tokensBefore} -> ${plan.tokensAfter}; survival ${plan.survival.checked}/${plan.survival.reinjected}`,
    ...plan.edits.map((e) => `${e.replaces.join(',')} ${e.reason} ${e.messageRange.start}-${e.messageRange.end} ${e.tokensBefore}->${e.tokensAfter} ${e.summary.role} ${sha(e.summary.content.replaceAll(e.handle, 'H'))}`),
  ];
}

function digest(lines: readonly string[]): string {
  return `${lines.length} lines, sha256 ${createHash('sha256').update(lines.join('\n')).digest('hex')}`;
}

/**
 * The cold plan of `events` made from scratch, and the one a restarted daemon makes: a model of
 * fresh message objects whose derived data (term keys and line hashes among it) is read back
 * from rows an earlier plan stored.
 */
async function coldPlans(events: readonly TranscriptEvent[], sessionId: string, budgetTokens: number): Promise<{ scratch: string; restarted: string; rowsRead: number; digests: number }> {
  const build = (derivedCache?: DerivedDataCache): SessionModel => {
    const m = new SessionModel({ sessionId, tokenCounter: counter, budgetTokens, ...(derivedCache ? { derivedCache } : {}) });
    m.applyAll(structuredClone(events));
    return m;
  };
  const plan = async (m: SessionModel): Promise<string> => digest(planLines(await planCompaction(m, { mode: 'reserve', tokenCounter: counter, cache: new SummaryCache() })));
  const scratch = await plan(build());
  const rows = new MapCache();
  await plan(build(rows));
  const restarted = build(rows);
  const restartedPlan = await plan(restarted);
  return { scratch, restarted: restartedPlan, rowsRead: rows.found, digests: restarted.messages().filter((m) => derivedDigestOf(m) !== undefined).length };
}

describe('scores and plans are pinned', () => {
  it('a cold plan made from stored derived data (after a restart) is the plan made from scratch', async () => {
    const g = generateSession(4242, 137);
    const demo = new TranscriptDecoder().push(generatedTranscript(7, 30));
    for (const [events, id, budget] of [[g.events, g.sessionId, 200_000], [demo, 'demo', 60_000]] as const) {
      const { scratch, restarted, rowsRead, digests } = await coldPlans(events, id, budget);
      expect(restarted).toBe(scratch);
      expect(rowsRead).toBeGreaterThan(20);
      expect(digests).toBeGreaterThan(20);
    }
  });

  it('a generated 200k-token session: sections, a cold plan, a re-plan after one line, after an edit and a truncate', async () => {
    const g = generateSession(4242, 137);
    const model = new SessionModel({ sessionId: g.sessionId, tokenCounter: counter, budgetTokens: 200_000 });
    model.applyAll(g.events);
    const cache = new SummaryCache();
    const out: Record<string, string> = { tokens: String(model.tokens()), sections: digest(sectionLines(model)) };
    const cold = await planCompaction(model, { mode: 'reserve', tokenCounter: counter, cache });
    out['cold plan'] = digest(planLines(cold));
    expect(cold.edits.length).toBeGreaterThan(5);
    model.apply({ type: 'message', message: { id: 'appended-1', role: 'assistant', text: 'Running the pool tests again with the new timeout.' } });
    out['sections after one line'] = digest(sectionLines(model));
    out['re-plan'] = digest(planLines(await planCompaction(model, { mode: 'reserve', tokenCounter: counter, cache })));
    const plan = await planCompaction(model, { mode: 'reserve', tokenCounter: counter, cache });
    applyPlan(model, plan, plan.edits.slice(0, 3).map((e) => e.editId));
    out['sections after an edit'] = digest(sectionLines(model));
    const ids = model.messages().map((m) => m.id);
    model.apply({ type: 'truncate', keepThroughId: ids[Math.floor(ids.length * 0.8)] ?? null, reason: 'test rewind' });
    out['tokens after truncate'] = String(model.tokens());
    out['sections after truncate'] = digest(sectionLines(model));
    out['plan after truncate'] = digest(planLines(await planCompaction(model, { mode: 'reserve', tokenCounter: counter, cache })));
    expect(out).toMatchSnapshot();
  });

  it('a decoded demo transcript (tool outputs repeated across rounds): sections and a cold plan', async () => {
    const model = new SessionModel({ sessionId: 'demo', tokenCounter: counter, budgetTokens: 60_000 });
    model.applyAll(new TranscriptDecoder().push(generatedTranscript(7, 30)));
    const out: Record<string, string> = { tokens: String(model.tokens()), sections: digest(sectionLines(model)) };
    const plan = await planCompaction(model, { mode: 'reserve', tokenCounter: counter, cache: new SummaryCache() });
    expect(plan.edits.length).toBeGreaterThan(0);
    out['cold plan'] = digest(planLines(plan));
    expect(out).toMatchSnapshot();
  });
});
