/**
 * The lazy scoring pass: turns the live section records into scored `Section`s.
 * Runs over all live sections without any tokenizer call (term stats and density features
 * were computed when the sections changed).
 */
import type { Priority, Recency, Section, SectionKind } from './types.js';
import type { Entry, SectionRec } from './fragments.js';
import { densityOf } from './density.js';
import { isAnchor, isPending, kindOf, priorityOf } from './priority.js';
import { recencyWeight } from './recency.js';
import { buildQuery, normalizeRelevance, type TermIndex, type TermVector } from './relevance.js';
import { scoreSection } from './score.js';

export interface ScoringContext {
  readonly sessionId: string;
  /** Live section records in context order. */
  readonly recs: readonly SectionRec[];
  /** Live entries in context order. */
  readonly entries: readonly Entry[];
  readonly index: TermIndex;
  /** Sections with a lower seq belong to a turn closed by a turn-end event (0: none). */
  readonly turnEndSeq: number;
  readonly halfLifeTurns: number;
  readonly halfLifeSeconds: number;
}

/** Summary ids contextd writes (`summary:<editId>`): a model replayed from messages() knows them again. */
export const SUMMARY_ID_PREFIX = 'summary:';

function isContextdSummary(rec: SectionRec): boolean {
  const first = rec.frags[0]?.entry.message;
  return rec.base === 'summary' && first?.isSummary === true && first.id.startsWith(SUMMARY_ID_PREFIX);
}

/** Each section's message range: the positions of its first and last entry in the live message list. */
export function messageRanges(entries: readonly Entry[]): Map<SectionRec, { start: number; end: number }> {
  const ranges = new Map<SectionRec, { start: number; end: number }>();
  entries.forEach((entry, i) => {
    for (const f of entry.frags) {
      if (!f.section) continue;
      const r = ranges.get(f.section);
      if (r) {
        if (i < r.start) r.start = i;
        if (i > r.end) r.end = i;
      } else ranges.set(f.section, { start: i, end: i });
    }
  });
  return ranges;
}

export function scoreAll(ctx: ScoringContext): Section[] {
  const { recs } = ctx;
  const ranges = messageRanges(ctx.entries);

  // Turns and timestamps.
  let turn = 0;
  let newest: number | undefined;
  const turns: number[] = [];
  const stamps: (number | undefined)[] = [];
  let goalIdx = -1;
  recs.forEach((rec, i) => {
    if (rec.base === 'instruction') {
      turn++;
      goalIdx = i;
    }
    turns.push(turn);
    let ts: number | undefined;
    for (const f of rec.frags) {
      const t = f.entry.message.timestamp;
      if (t !== undefined && (ts === undefined || t > ts)) ts = t;
    }
    stamps.push(ts);
    if (ts !== undefined && (newest === undefined || ts > newest)) newest = ts;
  });
  const currentTurn = turn;

  // Final answers: the last assistant text of every turn followed by an instruction, and of the
  // current turn when a turn-end event came after it. Positional, so it survives replacements.
  const finals = new Set<SectionRec>();
  let lastText: SectionRec | undefined;
  for (const rec of recs) {
    if (rec.base === 'instruction') {
      if (lastText) finals.add(lastText);
      lastText = undefined;
    } else if (rec.base === 'assistant-text') lastText = rec;
  }
  if (lastText && lastText.seq < ctx.turnEndSeq) finals.add(lastText);

  // Classification.
  const kinds = recs.map(kindOf);
  const pendings = recs.map(isPending);
  const maxNewer = recs.map((r) => r.maxNewer);
  const priorities = recs.map((rec, i) =>
    priorityOf({
      kind: kinds[i]!,
      pending: pendings[i]!,
      tokens: rec.tokens,
      ageTurns: currentTurn - turns[i]!,
      maxSimilarityToNewer: maxNewer[i]!,
      ack: rec.ack,
      decision: rec.decision,
      final: finals.has(rec),
      constraint: rec.constraint,
      isGoal: i === goalIdx,
    }),
  );
  const anchors = recs.map((rec, i) =>
    isAnchor({ kind: kinds[i]!, pending: pendings[i]!, tokens: rec.tokens, decision: rec.decision, constraint: rec.constraint, isGoal: i === goalIdx }),
  );

  // Relevance against the goal + anchors.
  const goal = goalIdx >= 0 ? recs[goalIdx]?.stats : undefined;
  const anchorStats: TermVector[] = [];
  recs.forEach((rec, i) => {
    if (anchors[i] && i !== goalIdx && kinds[i] !== 'tool-call') anchorStats.push(rec.stats);
  });
  const query = ctx.index.prepare(buildQuery(goal, anchorStats));
  const relevance = normalizeRelevance(recs.map((rec) => ctx.index.bm25(rec.stats, query)));

  // Built field by field (no conditional spreads): this runs for every section on every
  // re-plan, and the spreads allocated a throwaway object per optional field.
  const out: Section[] = new Array<Section>(recs.length);
  for (let i = 0; i < recs.length; i++) {
    const rec = recs[i] as SectionRec;
    const ts = stamps[i];
    const turnOf = turns[i] as number;
    const ageTurns = currentTurn - turnOf;
    const ageSeconds = ts !== undefined && newest !== undefined ? Math.max(0, (newest - ts) / 1000) : undefined;
    const weight = recencyWeight({ ageTurns, ageSeconds, halfLifeTurns: ctx.halfLifeTurns, halfLifeSeconds: ctx.halfLifeSeconds });
    const density = densityOf(maxNewer[i] as number, rec.features);
    const factors = scoreSection({ priority: priorities[i] as Priority, relevance: relevance[i] as number, recencyWeight: weight, density });
    const range = ranges.get(rec);
    // a timestamp implies a newest one, so an age in seconds
    const recency: Recency = ts !== undefined && ageSeconds !== undefined ? { turn: turnOf, ageTurns, timestamp: ts, ageSeconds, weight } : { turn: turnOf, ageTurns, weight };
    const section: Mutable<Section> = {
      id: rec.id,
      sessionId: ctx.sessionId,
      messageRange: range ? { start: range.start, end: range.end } : { start: -1, end: -1 },
      messageIds: (rec.messageIds ??= Object.freeze([...new Set(rec.frags.map((f) => f.entry.message.id))])),
      kind: kinds[i] as SectionKind,
      priority: priorities[i] as Priority,
      relevance: factors.relevance,
      recency,
      density,
      tokens: rec.tokens,
      anchor: anchors[i] as boolean,
      score: factors.score,
      factors,
    };
    if (rec.toolName !== undefined) section.toolName = rec.toolName;
    if (pendings[i]) section.pending = true;
    if (rec.summary || isContextdSummary(rec)) section.compacted = true;
    out[i] = Object.freeze(section);
  }
  return out;
}

type Mutable<T> = { -readonly [K in keyof T]: T[K] };
