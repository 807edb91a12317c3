import { describe, expect, it } from 'vitest';
import fc from 'fast-check';
import { readdirSync, readFileSync } from 'node:fs';
import { fileURLToPath } from 'node:url';
import { join } from 'node:path';
import { TranscriptDecoder } from '../../src/ingest/decoder.js';
import { SessionModel } from '../../src/model/index.js';
import { createTokenCounter, type TokenCounter } from '../../src/model/tokens.js';

const CORPUS = fileURLToPath(new URL('../../../shared/corpus/', import.meta.url));
const FILES = readdirSync(CORPUS).filter((f) => f.endsWith('.jsonl')).sort();

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
  it('has the corpus to run on', () => {
    expect(FILES.length).toBeGreaterThanOrEqual(10);
  });

  it.each(FILES)('%s, at random cut points', (file) => {
    const bytes = readFileSync(join(CORPUS, file));
    const whole = snapshot(build(bytes, []));
    fc.assert(
      fc.property(fc.array(fc.nat(bytes.length), { minLength: 1, maxLength: 40 }), (cuts) => {
        expect(snapshot(build(bytes, cuts))).toEqual(whole);
      }),
      { numRuns: 3, seed: 20261123 },
    );
  });
});
