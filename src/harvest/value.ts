/**
 * Harvest value of a finished session: a weighted sum of factors in [0, 1], scaled by the
 * outcome. The breakdown is stored with the template so a person can see why it was kept.
 */
import type { Outcome, ValueScore } from '../store/templates.js';

export const VALUE_WEIGHTS = { length: 0.15, toolCalls: 0.25, recovery: 0.2, novelty: 0.25, recency: 0.15 } as const;
export const OUTCOME_FACTOR: Readonly<Record<Outcome, number>> = { success: 1, unknown: 0.85, failure: 0.6 };

export interface ValueInput {
  /** Real user requests plus assistant messages (injected content excluded). */
  readonly conversationMessages: number;
  readonly successfulCalls: number;
  readonly confirmedRecoveries: number;
  /** Templates already stored for this repo. */
  readonly repoTemplates: number;
  /** Highest term-set similarity (Jaccard, 0–1) of this task to an existing template's task. */
  readonly taskSimilarity: number;
  /** Age of the session's last message at harvest time, ms (0 when unknown). */
  readonly ageMs: number;
  readonly outcome: Outcome;
}

const DAY_MS = 24 * 3600 * 1000;

function logScale(n: number, full: number): number {
  return Math.min(1, Math.log10(1 + Math.max(0, n)) / Math.log10(1 + full));
}

const round = (x: number): number => Math.round(x * 1000) / 1000;

/** Score a session; every factor and the weights are in the breakdown. */
export function scoreSession(v: ValueInput): ValueScore {
  const length = logScale(v.conversationMessages, 200);
  const toolCalls = logScale(v.successfulCalls, 60);
  const recovery = Math.min(1, v.confirmedRecoveries / 3);
  const repoNovelty = 1 / Math.sqrt(1 + v.repoTemplates);
  const taskNovelty = 1 - Math.min(1, Math.max(0, v.taskSimilarity));
  const novelty = 0.4 * repoNovelty + 0.6 * taskNovelty;
  const recency = Math.exp(-Math.max(0, v.ageMs) / (30 * DAY_MS));
  const base =
    VALUE_WEIGHTS.length * length +
    VALUE_WEIGHTS.toolCalls * toolCalls +
    VALUE_WEIGHTS.recovery * recovery +
    VALUE_WEIGHTS.novelty * novelty +
    VALUE_WEIGHTS.recency * recency;
  const outcome = OUTCOME_FACTOR[v.outcome];
  return {
    score: round(base * outcome),
    breakdown: {
      length: round(length),
      toolCalls: round(toolCalls),
      recovery: round(recovery),
      novelty: round(novelty),
      repoNovelty: round(repoNovelty),
      taskNovelty: round(taskNovelty),
      recency: round(recency),
      outcome,
    },
  };
}

/** Jaccard similarity of two term lists. */
export function jaccard(a: readonly string[], b: readonly string[]): number {
  if (a.length === 0 || b.length === 0) return 0;
  const sa = new Set(a);
  const sb = new Set(b);
  let inter = 0;
  for (const t of sa) if (sb.has(t)) inter++;
  return inter / (sa.size + sb.size - inter);
}
