import { describe, expect, it } from 'vitest';
import { densityFeatures, SharedBins, similarity } from '../../src/model/density.js';

describe('SharedBins', () => {
  it('finds the most similar later fingerprint (the first of equals) exactly as comparing each in order does', () => {
    // texts that overlap in part: shared sentences give shared bins, the rest differ; some
    // repeat exactly (ties), some are long (every bin used), some empty or one word
    const sentences = ['the pool drains on timeout', 'retry the request with backoff', 'config max_retries is three', 'ws-client reconnects after close', 'tests pass on node twenty'];
    const texts = Array.from({ length: 60 }, (_, i) => `${sentences[i % 5]} ${sentences[(i * 3) % 5]} item ${i % 20} of the run, unique words ${(i % 20) * 7919} here`);
    for (let i = 0; i < 10; i++) texts.push(Array.from({ length: 80 }, (_, k) => `w${(k * (i % 3 + 1)) % 97} v${k % (i + 2)}`).join(' '));
    texts.push('', 'x', 'x');
    const features = texts.map(densityFeatures);
    const shared = new SharedBins(features);
    let nonZero = 0;
    let ties = 0;
    features.forEach((f, i) => {
      for (const from of [0, i + 1]) {
        let at = -1;
        let best = 0;
        for (let j = from; j < features.length; j++) {
          const sim = similarity(f, features[j]!);
          if (sim === best && sim > 0) ties++;
          if (sim > best) {
            best = sim;
            at = j;
          }
        }
        if (at >= 0) nonZero++;
        expect(shared.bestFrom(from, f)).toEqual({ at, sim: best });
      }
    });
    expect(nonZero).toBeGreaterThan(100);
    expect(ties).toBeGreaterThan(10);
    expect(shared.bestFrom(0, densityFeatures(''))).toEqual({ at: -1, sim: 0 });
  });
});
