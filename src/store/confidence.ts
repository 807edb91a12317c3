/**
 * Confidence of a harvested item or knowledge: grows with the sessions that confirmed it and
 * decays with age. Pure arithmetic, imported alone by the hook's snapshot reader (knowledge.ts,
 * which re-exports it, also hashes, and loading node:crypto costs a hook start-up time).
 */

/** Default half-life of an item's confidence without new evidence. */
export const DEFAULT_HALF_LIFE_MS = 30 * 24 * 3600 * 1000;

/** Confidence from evidence: 1 session → 0.4, 2 → 0.64, 3 → 0.78, 5 → 0.92. */
export function confidenceFromEvidence(evidence: number): number {
  return 1 - Math.pow(0.6, Math.max(0, evidence));
}

/** Exponential decay by age: 1 when fresh, 0.5 after one half-life. */
export function decayFactor(ageMs: number, halfLifeMs: number = DEFAULT_HALF_LIFE_MS): number {
  if (ageMs <= 0) return 1;
  return Math.pow(0.5, ageMs / halfLifeMs);
}

/** Decayed confidence of an item with `evidence` last confirmed at `updatedAt`. */
export function itemConfidence(evidence: number, updatedAt: number, now: number, halfLifeMs?: number): number {
  return confidenceFromEvidence(evidence) * decayFactor(now - updatedAt, halfLifeMs);
}
