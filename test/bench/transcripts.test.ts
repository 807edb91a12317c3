/** The benches' generated transcripts (one home for the memory bench and the latency bench's RSS run). */
import { describe, expect, it } from 'vitest';
import { generatedTranscript } from '../../src/bench/transcripts.js';
import { demoTranscript } from '../../src/demo/transcript.js';
import { TranscriptDecoder } from '../../src/ingest/decoder.js';

const texts = (jsonl: Buffer): string[] =>
  new TranscriptDecoder()
    .push(jsonl)
    .flatMap((e) => (e.type === 'message' ? [e.message.text] : []))
    .filter((t) => t.length > 0);

describe('generated bench transcripts', () => {
  it('decode to messages that each say something of their own, distinct across sessions', () => {
    const a = texts(generatedTranscript(1, 20));
    const b = texts(generatedTranscript(2, 20));
    expect(a.length).toBeGreaterThan(40);
    expect(new Set(a).size).toBe(a.length);
    expect(a.filter((t) => b.includes(t))).toEqual([]);
  });

  it('built from shared demo lines are the same bytes as built alone', () => {
    const base = demoTranscript({ rounds: 12 });
    expect(generatedTranscript(5, 12, base).equals(generatedTranscript(5, 12))).toBe(true);
  });
});
