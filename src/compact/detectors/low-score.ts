/** `low-score`: every compactable section, lowest score first (ties: oldest first). */
import type { Candidate, Detector, DetectorContext } from '../types.js';
import { isCompactable } from './util.js';

export const lowScore: Detector = {
  name: 'low-score',
  detect(ctx: DetectorContext): Candidate[] {
    return ctx.sections
      .map((s, index) => ({ s, index }))
      .filter(({ s }) => isCompactable(s))
      .sort((a, b) => a.s.score - b.s.score || a.index - b.index)
      .map(({ s }) => ({ sectionIds: [s.id], reason: 'low-score' as const, detail: { score: s.score } }));
  },
};
