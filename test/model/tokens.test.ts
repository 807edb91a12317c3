import { describe, expect, it } from 'vitest';
import {
  SessionModel,
  createTokenCounter,
  IMAGE_TOKEN_ESTIMATE,
  MESSAGE_OVERHEAD_TOKENS,
} from '../../src/model/index.js';
import { countInPieces, LONGEST_RUN_CHARS, type TokenCountCache } from '../../src/model/tokens.js';
import { get_encoding } from 'tiktoken';
import { call, callMsg, countingCounter, msg, prose, result, user, asst } from './helpers.js';

describe('token counting', () => {
  it('counts text + reasoning + tool call name/arguments + overhead + images', () => {
    const enc = createTokenCounter('o200k_base');
    const m = new SessionModel({ sessionId: 'S', tokenCounter: enc });
    m.apply(msg({ id: 'u', role: 'user', text: 'look at this screenshot', imageCount: 2 }));
    expect(m.tokens()).toBe(enc.count('look at this screenshot') + MESSAGE_OVERHEAD_TOKENS + 2 * IMAGE_TOKEN_ESTIMATE);
    const t0 = m.tokens();
    m.apply(callMsg('a', [call('c1', 'Read', '{"path":"a.ts"}'), call('c2', 'Bash', '{"cmd":"ls -la"}')], 'Reading.', { reasoning: 'need the file' }));
    const expected =
      enc.count('Reading.') + enc.count('need the file') + MESSAGE_OVERHEAD_TOKENS +
      enc.count('Read') + enc.count('{"path":"a.ts"}') + enc.count('Bash') + enc.count('{"cmd":"ls -la"}');
    expect(m.tokens() - t0).toBe(expected);
    // Sections split the message's tokens without double counting.
    expect(m.sections().reduce((a, s) => a + s.tokens, 0)).toBe(m.tokens());
  });

  it('tokenizes each message once: tokenizer calls per append stay constant as the session grows', () => {
    const counter = countingCounter();
    const m = new SessionModel({ sessionId: 'S', tokenCounter: counter });
    m.apply(user('u0', 'Refactor the planner and keep the tests green'));
    const perRound: number[] = [];
    for (let i = 0; i < 200; i++) {
      const before = counter.calls;
      // One round: assistant text, a call, its result; then read every score.
      m.apply(asst(`a${i}`, prose(i, 40)));
      m.apply(callMsg(`c${i}`, [call(`k${i}`, 'Read', `{"path":"src/file${i}.ts"}`)]));
      m.apply(result(`r${i}`, `k${i}`, prose(i + 1000, 200)));
      m.sections();
      m.headroom();
      m.section('s2');
      perRound.push(counter.calls - before);
    }
    // text (1) + call name and arguments (2) + result text (1) = 4 calls per round, always.
    expect(new Set(perRound)).toEqual(new Set([4]));
    // Reading scores never tokenizes.
    const before = counter.calls;
    m.sections();
    m.goal();
    m.messages();
    expect(counter.calls).toBe(before);
  });

  it('counts a summary that replaces sections through the token cache: a model rebuilt with the same edit tokenizes nothing', () => {
    const stored = new Map<string, readonly number[]>();
    const cache: TokenCountCache = {
      get: (encoding, texts) => stored.get(`${encoding}\u0000${texts.join('\u0000')}`),
      set: (encoding, texts, counts) => void stored.set(`${encoding}\u0000${texts.join('\u0000')}`, counts),
    };
    const summary = { text: 'Read src/file1.ts and src/file2.ts: the pool drains on timeout, retried with backoff (see recall).', editId: 'e1', handle: 'h1', reason: 'low-score' as const };
    const build = (counter: ReturnType<typeof countingCounter>): SessionModel => {
      const m = new SessionModel({ sessionId: 'S', tokenCounter: counter, tokenCache: cache });
      m.apply(user('u0', 'Refactor the planner and keep the tests green, and say which files changed'));
      for (let i = 0; i < 3; i++) {
        m.apply(callMsg(`c${i}`, [call(`k${i}`, 'Read', `{"path":"src/file${i}.ts"}`)]));
        m.apply(result(`r${i}`, `k${i}`, prose(i + 1000, 200)));
      }
      return m;
    };
    const first = countingCounter();
    const m1 = build(first);
    const ids = m1.sections().filter((x) => x.kind === 'tool-call' && !x.anchor).map((x) => x.id).slice(0, 2);
    const before = first.calls;
    m1.replaceSections(ids, summary);
    expect(first.calls).toBe(before + 1); // the summary's text, counted once and stored
    const again = countingCounter();
    const m2 = build(again);
    const built = again.calls;
    m2.replaceSections(ids, summary);
    expect(again.calls).toBe(built); // read from the cache, as a restart replaying the edit does
    expect(m2.tokens()).toBe(m1.tokens());
  });

  it('counts a long run without white space in pieces, and any other text whole and exactly', () => {
    const enc = get_encoding('o200k_base');
    try {
      const exact = (t: string): number => enc.encode_ordinary(t).length;
      const pieces: string[] = [];
      const spy = (t: string): number => {
        pieces.push(t);
        return exact(t);
      };
      // ordinary text, code, a long line with spaces: one piece, the exact count
      for (const text of [prose(3, 400), 'const x = [1, 2, 3].map((n) => n * 2); // ' + 'word '.repeat(2_000), 'x'.repeat(LONGEST_RUN_CHARS)]) {
        pieces.length = 0;
        expect(countInPieces(text, spy)).toBe(exact(text));
        expect(pieces).toEqual([text]);
      }
      // a 20k-letter blob between words, and runs of '=' and of emoji (never split inside a pair)
      for (const run of ['qwerty'.repeat(3_400), '='.repeat(20_000), '\u{1F600}'.repeat(5_000)]) {
        const text = `before ${run} after`;
        pieces.length = 0;
        const counted = countInPieces(text, spy);
        expect(pieces.join('')).toBe(text);
        for (const p of pieces) for (const r of p.match(/\S+/g) ?? []) expect(r.length).toBeLessThanOrEqual(LONGEST_RUN_CHARS + 1);
        for (const p of pieces) expect(p).not.toMatch(/[\uD800-\uDBFF]$|^[\uDC00-\uDFFF]/);
        // within a token or two per piece of the count made whole
        const whole = exact(text);
        expect(Math.abs(counted - whole)).toBeLessThanOrEqual(2 * pieces.length);
      }
    } finally {
      enc.free();
    }
  });
});
