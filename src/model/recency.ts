/**
 * Recency weight (design §4): `exp(-age/halfLife)` in turns and in time.
 *
 * - turn weight `wT = exp(-ageTurns / halfLifeTurns)`, a turn starting at each real user
 *   instruction;
 * - time weight `wS = exp(-ageSeconds / halfLifeSeconds)`, age measured against the newest
 *   message of the session (not the wall clock, so replaying an old transcript is stable);
 * - combined weight = the MEAN of the two when both are known, else the turn weight alone.
 *
 * The mean (not the max) is deliberate: in a long single-instruction agentic run every section
 * has ageTurns = 0, so only time separates old from new; with the max, time would never count.
 */
export const DEFAULT_HALF_LIFE_TURNS = 8;
export const DEFAULT_HALF_LIFE_SECONDS = 1800;

export interface RecencyInput {
  readonly ageTurns: number;
  readonly ageSeconds?: number;
  readonly halfLifeTurns: number;
  readonly halfLifeSeconds: number;
}

export function recencyWeight(input: RecencyInput): number {
  const wT = Math.exp(-Math.max(0, input.ageTurns) / Math.max(input.halfLifeTurns, 1e-9));
  if (input.ageSeconds === undefined) return wT;
  const wS = Math.exp(-Math.max(0, input.ageSeconds) / Math.max(input.halfLifeSeconds, 1e-9));
  return (wT + wS) / 2;
}
