import { describe, expect, it } from 'vitest';
import fc from 'fast-check';
import { TranscriptDecoder } from '../../src/ingest/decoder.js';
import { SessionModel } from '../../src/model/index.js';
import { createTokenCounter, type TokenCounter } from '../../src/model/tokens.js';
import { transcriptSamples } from '../fixtures/samples.js';
import { generatedCorpus } from '../fixtures/transcripts.js';

const SAMPLES = transcriptSamples();

/** The real tokenizer, memoized so repeated runs over the same corpus stay quick. */
function memoCounter(): TokenCounter {
  const inner = createTokenCounter();
  const memo = new Map<string, number>();
  return {
    encoding: inner.encoding,
    count(text) {
      let n = memo.get(text);
      if (n === undefined) memo.set(text, (n = inner.count(text)));
      return n;
    },
  };
}
const counter = memoCounter();

function snapshot(m: SessionModel): unknown {
  return { headroom: m.headroom(), sections: m.sections().map((s) => ({ ...s })), messages: m.messages().length, goal: m.goal() };
}

function build(bytes: Buffer, cuts: readonly number[]): SessionModel {
  const decoder = new TranscriptDecoder();
  const model = new SessionModel({ sessionId: 'prop', tokenCounter: counter });
  const points = [...new Set(cuts.map((c) => c % (bytes.length + 1)))].sort((a, b) => a - b);
  let prev = 0;
  for (const p of [...points, bytes.length]) {
    model.applyAll(decoder.push(bytes.subarray(prev, p)));
    model.sections(); // score mid-stream too: lazy rescoring must not leave stale state behind
    prev = p;
  }
  model.applyAll(decoder.push(Buffer.from('\n')));
  return model;
}

describe('the model built line by line equals the model built from the whole file', () => {
  it('has transcripts to run on', () => {
    expect(SAMPLES.length).toBeGreaterThanOrEqual(generatedCorpus().length);
  });

  it.each(SAMPLES.map((s) => [s.name, s.bytes] as const))('%s, at random cut points', (_name, bytes) => {
    const whole = snapshot(build(bytes, []));
    fc.assert(
      fc.property(fc.array(fc.nat(bytes.length), { minLength: 1, maxLength: 40 }), (cuts) => {
        expect(snapshot(build(bytes, cuts))).toEqual(whole);
      }),
      { numRuns: 3, seed: 20261123 },
    );
  });
});
