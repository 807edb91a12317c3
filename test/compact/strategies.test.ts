import fc from 'fast-check';
import { describe, expect, it } from 'vitest';
import type { Message, TranscriptEvent } from '../../src/model/messages.js';
import { TranscriptDecoder } from '../../src/ingest/decoder.js';
import { transcriptSamples } from '../fixtures/samples.js';
import { generatedCorpus } from '../fixtures/transcripts.js';
import { SessionModel } from '../../src/model/index.js';
import { compactWithStrategy, MASK_PLACEHOLDER, STRATEGIES, type CompactResult } from '../../src/compact/index.js';
import { Script, fileBody } from './helpers.js';

/** Calls in the input that never got a result. */
function unansweredInInput(msgs: readonly Message[]): Set<string> {
  const answered = new Set(msgs.filter((m) => m.role === 'tool' && m.toolCallId !== undefined).map((m) => m.toolCallId!));
  return new Set(msgs.flatMap((m) => (m.toolCalls ?? []).map((c) => c.id)).filter((id) => !answered.has(id)));
}

/** The invariants every strategy's output must hold. */
function checkOutput(model: SessionModel, r: CompactResult): void {
  const out = r.messages;
  const called = new Set<string>();
  const unanswered = unansweredInInput(model.messages());
  out.forEach((m, i) => {
    if (m.role === 'tool') {
      expect(m.tool_call_id, `tool message ${i} without id`).toBeDefined();
      expect(called.has(m.tool_call_id!), `orphan tool result ${m.tool_call_id} at ${i} (${r.strategy})`).toBe(true);
    }
    for (const c of m.tool_calls ?? []) {
      called.add(c.id);
      const answered = out.slice(i + 1).some((x) => x.role === 'tool' && x.tool_call_id === c.id);
      if (!answered) {
        expect(unanswered.has(c.id), `call ${c.id} lost its result (${r.strategy})`).toBe(true);
        expect(out.slice(i + 1).every((x) => x.role === 'tool'), `unanswered call ${c.id} is not the pending tail (${r.strategy})`).toBe(true);
      }
    }
  });
  const counted = r.tokensAfter;
  expect(counted).toBeGreaterThan(0);
  if (r.strategy === 'contextd') {
    for (const s of model.sections().filter((x) => x.anchor)) {
      for (const m of model.messagesOf(s.id)) {
        if (m.text.trim()) expect(out.some((o) => o.role === m.role && o.content === m.text), `anchor ${s.id} missing`).toBe(true);
      }
    }
    if (r.tokensAfter > r.budget) expect(r.unreachable).toBeDefined();
    else expect(r.unreachable).toBeUndefined();
  }
}

type Step =
  | { k: 'user'; words: number }
  | { k: 'assistant'; words: number }
  | { k: 'tool'; lines: number; error: boolean }
  | { k: 'multi'; calls: number }
  | { k: 'orphan-result' }
  | { k: 'interrupted-call' }
  | { k: 'ack' };

const stepArb: fc.Arbitrary<Step> = fc.oneof(
  fc.record({ k: fc.constant('user' as const), words: fc.integer({ min: 3, max: 60 }) }),
  fc.record({ k: fc.constant('assistant' as const), words: fc.integer({ min: 1, max: 120 }) }),
  fc.record({ k: fc.constant('tool' as const), lines: fc.integer({ min: 0, max: 80 }), error: fc.boolean() }),
  fc.record({ k: fc.constant('multi' as const), calls: fc.integer({ min: 2, max: 3 }) }),
  fc.constant({ k: 'orphan-result' as const }),
  fc.constant({ k: 'interrupted-call' as const }),
  fc.constant({ k: 'ack' as const }),
);

function buildSession(steps: readonly Step[], pendingTail: boolean): TranscriptEvent[] {
  const s = new Script().system('You are a coding agent. Never push to main.');
  s.user('Start: fix the bug in src/app.ts and keep the API stable.');
  let n = 0;
  const w = (k: number): string => Array.from({ length: k }, (_, i) => ['pool', 'queue', 'lease', 'retry', 'cursor'][(i + n) % 5]).join(' ');
  for (const st of steps) {
    n++;
    switch (st.k) {
      case 'user': s.user(`Please ${w(st.words)}.`); break;
      case 'assistant': s.assistant(`Working: ${w(st.words)}.`); break;
      case 'tool': s.tool('Bash', { command: `cat src/f${n % 4}.ts` }, fileBody(`f${n}`, st.lines), st.error); break;
      case 'multi': {
        const ids = Array.from({ length: st.calls }, (_, i) => `multi${n}_${i}`);
        s.msg({ role: 'assistant', text: 'Reading several files.', toolCalls: ids.map((id, i) => ({ id, name: 'Read', arguments: JSON.stringify({ file_path: `src/m${i}.ts` }) })) });
        for (const id of ids) s.msg({ role: 'tool', text: fileBody(id, 10), toolCallId: id, toolName: 'Read' });
        break;
      }
      case 'orphan-result': s.msg({ role: 'tool', text: 'late result with no call', toolCallId: `ghost${n}` }); break;
      case 'interrupted-call': s.pendingCall('Bash', { command: 'sleep 100' }); s.user('[Request interrupted by user] stop that and continue'); break;
      case 'ack': s.user('ok'); break;
    }
  }
  if (pendingTail) s.pendingCall('Bash', { command: 'npm test' });
  return s.events;
}

describe('compactWithStrategy', () => {
  it('never leaves orphans or unanswered calls, and keeps contextd anchors (random sessions)', async () => {
    await fc.assert(
      fc.asyncProperty(
        fc.array(stepArb, { minLength: 1, maxLength: 40 }),
        fc.boolean(),
        fc.double({ min: 0.05, max: 1.2, noNaN: true }),
        fc.constantFrom(0, 0.15, 0.3),
        async (steps, pendingTail, share, reserve) => {
          const model = new SessionModel({ sessionId: 'prop' });
          model.applyAll(buildSession(steps, pendingTail));
          const budgetTokens = Math.max(1, Math.ceil((model.tokens() * share) / (1 - reserve)));
          for (const strategy of STRATEGIES) checkOutput(model, await compactWithStrategy(model, { strategy, budgetTokens, reserveRatio: reserve }));
        },
      ),
      { numRuns: Number(process.env['FC_RUNS'] ?? 30) },
    );
  });

  it('holds the same invariants on every sample transcript', async () => {
    const samples = transcriptSamples();
    expect(samples.length).toBeGreaterThanOrEqual(generatedCorpus().length);
    for (const { name: f, bytes } of samples) {
      const model = new SessionModel({ sessionId: f });
      const decoder = new TranscriptDecoder();
      model.applyAll([...decoder.push(bytes), ...decoder.push(Buffer.from('\n'))]);
      expect(model.tokens(), f).toBeGreaterThan(0);
      for (const strategy of STRATEGIES) {
        const r = await compactWithStrategy(model, { strategy, budgetTokens: Math.ceil(model.tokens() * 0.4), reserveRatio: 0 });
        checkOutput(model, r);
        // tokens* are what inspect counts (calibrated to usage reports), countedTokens* our own count
        expect(r.tokensBefore).toBe(model.headroom().tokens);
        expect(r.countedTokensBefore).toBe(model.tokens());
        if (r.tokensAfter > r.budget) expect(r.unreachable, `${strategy} ${f}`).toBeDefined();
      }
    }
  }, 120_000);

  it('counts tokens like the model: an uncompacted render equals model.tokens()', async () => {
    const model = new Script().system('sys').user('Fix src/a.ts now please').tool('Read', { file_path: 'src/a.ts' }, fileBody('a')).model();
    for (const strategy of STRATEGIES) {
      const r = await compactWithStrategy(model, { strategy, budgetTokens: model.tokens() * 2, reserveRatio: 0 });
      expect(r.tokensBefore).toBe(model.tokens());
      expect(r.tokensAfter).toBe(model.tokens());
      expect(r.edits).toEqual([]);
    }
  });

  it('baselines behave as described', async () => {
    const s = new Script().system('You are a coding agent.').user('First instruction: keep all logs under logs/.');
    for (let i = 0; i < 8; i++) s.tool('Read', { file_path: `src/f${i}.ts` }, fileBody(`f${i}`)).assistant(`Read file ${i}.`);
    s.user('Last instruction: write the summary.');
    const model = s.model();
    const budgetTokens = Math.ceil(model.tokens() * 0.5);
    const truncate = await compactWithStrategy(model, { strategy: 'truncate', budgetTokens, reserveRatio: 0 });
    expect(truncate.messages[0]!.role).toBe('system');
    expect(truncate.messages.some((m) => m.content.startsWith('First instruction'))).toBe(false);
    expect(truncate.messages.at(-1)!.content).toBe('Last instruction: write the summary.');
    const mask = await compactWithStrategy(model, { strategy: 'mask', budgetTokens, reserveRatio: 0 });
    const tools = mask.messages.filter((m) => m.role === 'tool');
    expect(tools.filter((m) => m.content === MASK_PLACEHOLDER).length).toBeGreaterThan(0);
    expect(tools.at(-1)!.content).not.toBe(MASK_PLACEHOLDER);
    expect(mask.messages.some((m) => m.content.startsWith('First instruction'))).toBe(true);
    const middle = await compactWithStrategy(model, { strategy: 'middle', budgetTokens, reserveRatio: 0 });
    expect(middle.messages.slice(0, 2).map((m) => m.role)).toEqual(['system', 'user']);
    expect(middle.messages.some((m) => m.content.startsWith('[CONTEXT COMPACTION]'))).toBe(true);
    expect(middle.messages.at(-1)!.content).toBe('Last instruction: write the summary.');
    for (const r of [truncate, mask, middle]) expect(r.tokensAfter).toBeLessThanOrEqual(r.budget);
  });

  it('reports the anchors that stand in the way of an unreachable budget', async () => {
    const huge = `You must follow these rules. ${'Always keep the retry limit at 3 and never change the public API. '.repeat(60)}`;
    const model = new Script().system('You are a coding agent.').user(huge).tool('Read', { file_path: 'src/a.ts' }, fileBody('a', 20)).user('Go on with src/a.ts and fix it now.').model();
    const r = await compactWithStrategy(model, { strategy: 'contextd', budgetTokens: 200, reserveRatio: 0.15 });
    expect(r.tokensAfter).toBeGreaterThan(r.budget);
    expect(r.unreachable).toBeDefined();
    const anchorIds = new Set(model.sections().filter((x) => x.anchor).map((x) => x.id));
    expect(r.unreachable!.anchors.length).toBeGreaterThan(0);
    for (const id of r.unreachable!.anchors) expect(anchorIds.has(id)).toBe(true);
    const big = model.sections().find((x) => model.messagesOf(x.id).some((m) => m.text === huge))!;
    expect(r.unreachable!.anchors[0]).toBe(big.id);
  });
});
