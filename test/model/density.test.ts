import { describe, expect, it } from 'vitest';
import { densityFeatures, SharedBins, similarity } from '../../src/model/density.js';

describe('SharedBins', () => {
  it('finds every later fingerprint with a similarity above 0, in order, and only those sharing a bin', () => {
    // texts that overlap in part: shared sentences give shared bins, the rest differ
    const sentences = ['the pool drains on timeout', 'retry the request with backoff', 'config max_retries is three', 'ws-client reconnects after close', 'tests pass on node twenty'];
    const texts = Array.from({ length: 60 }, (_, i) => `${sentences[i % 5]} ${sentences[(i * 3) % 5]} item ${i} of the run, unique words ${i * 7919} here`);
    texts.push('', 'x');
    const features = texts.map(densityFeatures);
    const shared = new SharedBins(features);
    let nonZero = 0;
    features.forEach((f, i) => {
      const from = i + 1;
      const found = shared.sharingFrom(from, f);
      expect(found).toEqual([...found].sort((a, b) => a - b));
      for (const j of found) expect(j).toBeGreaterThanOrEqual(from);
      for (let j = from; j < features.length; j++) {
        const sim = similarity(f, features[j]!);
        if (sim > 0) {
          nonZero++;
          expect(found).toContain(j);
        }
      }
    });
    expect(nonZero).toBeGreaterThan(100);
    expect(shared.sharingFrom(0, densityFeatures(''))).toEqual([]);
  });
});
