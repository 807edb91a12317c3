import { describe, expect, it } from 'vitest';
import {
  SessionModel,
  presetContextWindow,
  scoreSection,
  PRIORITY_WEIGHTS,
  recencyWeight,
  DENSITY_FLOOR,
  RELEVANCE_FLOOR,
  isDecisionText,
  Calibrator,
  isAcknowledgement,
} from '../../src/model/index.js';
import { looksLikeStackTrace } from '../../src/text/index.js';
import { call, callMsg, prose, result, user, asst } from './helpers.js';

describe('density', () => {
  it('gives near-duplicate tool outputs lower density than the newest copy', () => {
    const m = new SessionModel({ sessionId: 'S' });
    const listing = Array.from({ length: 80 }, (_, i) => `-rw-r--r-- 1 dev dev ${1000 + i * 37} Nov 23 file_${i}.ts`).join('\n');
    m.applyAll([
      user('u1', 'watch the directory'),
      callMsg('a1', [call('c1', 'Bash', 'ls -la')]),
      result('r1', 'c1', listing),
      callMsg('a2', [call('c2', 'Read', 'notes.md')]),
      result('r2', 'c2', prose(7, 300)),
      callMsg('a3', [call('c3', 'Bash', 'ls -la')]),
      result('r3', 'c3', `${listing}\n-rw-r--r-- 1 dev dev 42 Nov 23 new_file.ts`),
    ]);
    const s = m.sections();
    const old = s.find((x) => x.messageIds.includes('r1'))!;
    const other = s.find((x) => x.messageIds.includes('r2'))!;
    const newest = s.find((x) => x.messageIds.includes('r3'))!;
    // A listing repeats its own columns a little (repetition factor), but it has no newer copy.
    expect(newest.density).toBeGreaterThan(0.8);
    expect(other.density).toBe(1);
    expect(old.density).toBeLessThan(0.3);
    expect(old.density).toBeLessThan(newest.density);
    expect(old.density).toBeGreaterThanOrEqual(DENSITY_FLOOR);
    expect(old.priority).toBe('low'); // superseded
    expect(old.score).toBeLessThan(newest.score);
    // When the newer copy leaves the context, the old one is no longer redundant.
    m.apply({ type: 'truncate', keepThroughId: 'r2', reason: 'rewind' });
    expect(m.section(old.id)?.density).toBeCloseTo(newest.density, 1);
  });

  it('penalizes very repetitive text', () => {
    const m = new SessionModel({ sessionId: 'S' });
    m.applyAll([
      user('u1', 'tail the log'),
      callMsg('a1', [call('c1', 'Bash', 'tail log')]),
      result('r1', 'c1', 'WARN retrying connection to db\n'.repeat(300)),
      callMsg('a2', [call('c2', 'Read', 'x')]),
      result('r2', 'c2', prose(3, 300)),
    ]);
    const [, rep, varied] = m.sections();
    expect(rep!.density).toBeLessThan(0.2);
    expect(varied!.density).toBe(1);
  });
});

describe('relevance', () => {
  it('favours sections sharing terms with the goal', () => {
    const m = new SessionModel({ sessionId: 'S' });
    m.applyAll([
      user('u1', 'Fix the tokenizer crash in src/lexer/tokenizer.ts'),
      asst('a1', 'The weather module formats temperatures in celsius and fahrenheit.'),
      asst('a2', 'The tokenizer in src/lexer/tokenizer.ts crashes on an empty buffer.'),
      asst('a3', 'Unrelated: the colour palette uses hex codes.'),
    ]);
    const [goal, weather, tokenizer, palette] = m.sections();
    expect(tokenizer!.relevance).toBeGreaterThan(weather!.relevance);
    expect(tokenizer!.relevance).toBeGreaterThan(palette!.relevance);
    expect(weather!.relevance).toBe(RELEVANCE_FLOOR);
    expect(goal!.relevance).toBe(1);
    for (const s of m.sections()) {
      expect(s.relevance).toBeGreaterThan(0);
      expect(s.relevance).toBeLessThanOrEqual(1);
    }
  });

  it('follows the goal when a new instruction arrives', () => {
    const m = new SessionModel({ sessionId: 'S' });
    m.applyAll([
      user('u1', 'document the socket protocol'),
      asst('a1', 'The socket protocol uses JSON-RPC lines.'),
      asst('a2', 'The sqlite store keeps an archive table.'),
    ]);
    const sock1 = m.sections()[1]!.relevance;
    const store1 = m.sections()[2]!.relevance;
    expect(sock1).toBeGreaterThan(store1);
    m.apply(user('u2', 'now change the sqlite archive table'));
    expect(m.sections()[2]!.relevance).toBeGreaterThan(m.sections()[1]!.relevance);
  });
});

describe('recency', () => {
  it('decays with turns and with time (mean of both)', () => {
    expect(recencyWeight({ ageTurns: 0, halfLifeTurns: 8, halfLifeSeconds: 1800 })).toBe(1);
    expect(recencyWeight({ ageTurns: 8, halfLifeTurns: 8, halfLifeSeconds: 1800 })).toBeCloseTo(Math.exp(-1), 12);
    expect(recencyWeight({ ageTurns: 0, ageSeconds: 1800, halfLifeTurns: 8, halfLifeSeconds: 1800 })).toBeCloseTo((1 + Math.exp(-1)) / 2, 12);
    const m = new SessionModel({ sessionId: 'S', halfLifeSeconds: 60 });
    m.applyAll([
      user('u1', 'go', { timestamp: 0 }),
      asst('a1', 'old', { timestamp: 1_000 }),
      asst('a2', 'new', { timestamp: 600_000 }),
    ]);
    const [, old, fresh] = m.sections();
    expect(old!.recency.ageSeconds).toBe(599);
    expect(fresh!.recency.ageSeconds).toBe(0);
    expect(old!.recency.weight).toBeLessThan(fresh!.recency.weight);
  });
});

describe('score', () => {
  it('is the product of its factors', () => {
    const f = scoreSection({ priority: 'high', relevance: 0.5, recencyWeight: 0.8, density: 0.25 });
    expect(f).toEqual({ priorityWeight: PRIORITY_WEIGHTS.high, relevance: 0.5, recencyWeight: 0.8, density: 0.25, score: 0.75 * 0.5 * 0.8 * 0.25 });
    expect(PRIORITY_WEIGHTS.critical).toBeGreaterThan(PRIORITY_WEIGHTS.high);
    expect(PRIORITY_WEIGHTS.medium).toBeGreaterThan(PRIORITY_WEIGHTS.low);
  });
});

describe('budget', () => {
  it('takes config over reported over preset over default', () => {
    const m = new SessionModel({ sessionId: 'S' });
    expect(m.budget()).toEqual({ total: 128_000, reserveRatio: 0.15, source: 'default' });
    m.apply(asst('a', 'hi', { model: 'claude-opus-4-6' }));
    expect(m.budget()).toMatchObject({ total: 200_000, source: 'preset' });
    m.apply({ type: 'meta', meta: { model: 'gpt-4.1' } });
    expect(m.budget()).toMatchObject({ total: 1_047_576, source: 'preset' });
    m.apply({ type: 'meta', meta: { contextWindow: 272_000 } });
    expect(m.budget()).toMatchObject({ total: 272_000, source: 'reported' });
    expect(m.meta()).toMatchObject({ model: 'gpt-4.1', contextWindow: 272_000 });
    const c = new SessionModel({ sessionId: 'S', budgetTokens: 50_000, reserveRatio: 0.2 });
    c.apply({ type: 'meta', meta: { contextWindow: 272_000, model: 'gpt-5' } });
    expect(c.budget()).toEqual({ total: 50_000, reserveRatio: 0.2, source: 'config' });
    c.apply(user('u', 'x'.repeat(100)));
    const h = c.headroom();
    expect(h.headroom).toBeCloseTo(1 - h.tokens / 50_000, 12);
    expect(h.sections).toBe(1);
  });

  it('knows common model names', () => {
    expect(presetContextWindow('claude-sonnet-4-5-20250929')).toBe(200_000);
    expect(presetContextWindow('claude-sonnet-4-5[1m]')).toBe(1_000_000);
    expect(presetContextWindow('gpt-4o-2024-08-06')).toBe(128_000);
    expect(presetContextWindow('gpt-5.1-codex')).toBe(272_000);
    expect(presetContextWindow('gpt-5')).toBe(400_000);
    expect(presetContextWindow('o3')).toBe(200_000);
    expect(presetContextWindow('o4-mini')).toBe(200_000);
    expect(presetContextWindow('gemini-2.5-pro')).toBe(1_048_576);
    expect(presetContextWindow('MiniMax-M2.7')).toBe(204_800);
    expect(presetContextWindow('deepseek-chat')).toBe(128_000);
    expect(presetContextWindow('qwen2.5-coder:32b')).toBe(128_000);
    expect(presetContextWindow('llama3.1:8b')).toBe(128_000);
    expect(presetContextWindow('totally-unknown')).toBeUndefined();
    expect(presetContextWindow(undefined)).toBeUndefined();
  });

  it('rejects bad options', () => {
    expect(() => new SessionModel({ sessionId: 'S', reserveRatio: 1.5 })).toThrow(/reserveRatio/);
    expect(() => new SessionModel({ sessionId: 'S', budgetTokens: -1 })).toThrow(/budgetTokens/);
    expect(() => new SessionModel({ sessionId: '' })).toThrow(/sessionId/);
  });
});

describe('classifiers', () => {
  it('recognise decisions, acknowledgements and stack traces', () => {
    expect(isDecisionText('The fix is to clamp the index.')).toBe(true);
    expect(isDecisionText("I'll switch to a streaming parser.")).toBe(true);
    expect(isDecisionText("I'll read the file first.")).toBe(false);
    expect(isAcknowledgement('thanks!')).toBe(true);
    expect(isAcknowledgement('Continue')).toBe(true);
    expect(isAcknowledgement('ok now rename the module')).toBe(false);
    expect(looksLikeStackTrace('TypeError: x is undefined\n    at f (/a.js:1:2)')).toBe(true);
    expect(looksLikeStackTrace('    at a (/x.js:1:1)\n    at b (/y.js:2:2)')).toBe(true);
    expect(looksLikeStackTrace('all tests passed')).toBe(false);
  });
});

describe('calibration', () => {
  it('recovers offset and ratio from usage reports', () => {
    const c = new Calibrator();
    for (const x of [5_000, 12_000, 30_000, 55_000]) c.add(x, Math.round(20_000 + 1.3 * x));
    const k = c.calibration(100_000);
    expect(k.samples).toBe(4);
    expect(k.ratio).toBeCloseTo(1.3, 3);
    expect(Math.abs(k.offsetTokens - 20_000)).toBeLessThanOrEqual(2);
    expect(Math.abs(k.estimatedTokens - 150_000)).toBeLessThanOrEqual(3);
  });

  it('uses a pure offset with one report, and passes through the latest report', () => {
    const c = new Calibrator();
    c.add(1_000, 26_000);
    expect(c.calibration(2_000)).toMatchObject({ offsetTokens: 25_000, ratio: 1, estimatedTokens: 27_000 });
    const d = new Calibrator();
    for (const x of [10_000, 20_000, 40_000]) d.add(x, 2 * x - 5_000);
    d.add(41_000, 90_000); // the latest report wins over the trend
    const k = d.calibration(41_000);
    expect(k.ratio).toBeGreaterThan(1.5);
    expect(k.estimatedTokens).toBe(90_000);
  });
});
