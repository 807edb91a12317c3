/**
 * Section score (design §4): lower compacts first.
 *
 *   score = priorityWeight(priority) × relevance × recencyWeight × density
 */
import type { Priority, ScoreFactors } from './types.js';

/** Weight of each priority in the score. */
export const PRIORITY_WEIGHTS: Readonly<Record<Priority, number>> = Object.freeze({
  critical: 1,
  high: 0.75,
  medium: 0.5,
  low: 0.25,
});

export interface ScoreInput {
  readonly priority: Priority;
  readonly relevance: number;
  readonly recencyWeight: number;
  readonly density: number;
}

/** Pure: multiplies the four factors and returns them all with the product. */
export function scoreSection(input: ScoreInput): ScoreFactors {
  const priorityWeight = PRIORITY_WEIGHTS[input.priority];
  const score = priorityWeight * input.relevance * input.recencyWeight * input.density;
  return {
    priorityWeight,
    relevance: input.relevance,
    recencyWeight: input.recencyWeight,
    density: input.density,
    score,
  };
}
