import { describe, expect, it } from 'vitest';
import { SessionModel } from '../../src/model/index.js';
import { createTokenCounter } from '../../src/model/tokens.js';
import { compactWithStrategy, planCompaction } from '../../src/compact/index.js';
import { isConversational, resolveDates, parseDate, spanSummary } from '../../src/compact/summarize/span.js';
import { extractiveSummary } from '../../src/compact/summarize/extractive.js';
import type { Message } from '../../src/model/messages.js';
import type { SummarizeInput } from '../../src/compact/types.js';
import { generateChat } from './chat.js';

const counter = createTokenCounter();

function input(messages: Message[], maxTokens: number): SummarizeInput {
  return { reason: 'low-score', sections: [], messages, goal: '', maxTokens };
}
const m = (id: string, role: 'user' | 'assistant', text: string, extra: Partial<Message> = {}): Message => ({ id, role, text, ...extra });

describe('span summaries', () => {
  const chat: Message[] = [
    m('d', 'user', '[new chat session, 1:56 pm on 8 May, 2023]'),
    m('1', 'user', 'Ana: Hey Ben! Good to see you! I went to the pottery fair in Ghent yesterday and bought 3 blue bowls.'),
    m('2', 'assistant', 'Ben: Wow, that is great! I did not go, my sister Lotte was visiting last week.'),
    m('3', 'user', 'Ana: Thanks!'),
  ];

  it('renders every line per speaker, drops filler, keeps names, numbers and negations, and dates the span', () => {
    const text = spanSummary(input(chat, 400));
    expect(text).toContain('[new chat session, 1:56 pm on 8 May, 2023]');
    expect(text).toContain('Ana:');
    expect(text).toContain('Ben:');
    // relative dates resolved against the stated session date
    expect(text).toContain('7 May 2023');
    expect(text).toContain('the week before 8 May 2023');
    expect(text).not.toMatch(/Thanks!|Good to see you/);
    for (const w of ['Ghent', '3', 'blue', 'bowls', 'Lotte', 'not']) expect(text).toContain(w);
  });

  it('compresses harder to fit a small budget and never exceeds it', () => {
    const long: Message[] = [];
    for (let i = 0; i < 60; i++) long.push(m(`l${i}`, i % 2 ? 'assistant' : 'user', `The tram to Harbourside ${i} stops near the old cannery where the market sells fresh mackerel on Fridays.`));
    const roomy = spanSummary(input(long, 2_000));
    const tight = spanSummary(input(long, 200));
    expect(tight.length).toBeLessThanOrEqual(200 * 3.5);
    expect(tight.length).toBeLessThan(roomy.length);
    // repeated words are said once; the numbers that tell the lines apart stay
    expect(tight).toContain('mackerel');
    expect(tight).toContain('59');
  });

  it('resolves relative dates from message timestamps too', () => {
    const day = Date.UTC(2024, 2, 14, 9, 0);
    const text = spanSummary(input([m('a', 'user', 'I met Joss yesterday at the lake.', { timestamp: day }), m('b', 'assistant', 'Good to know, noted for tomorrow.', { timestamp: day })], 200));
    expect(text).toContain('[14 March 2024]');
    expect(text).toContain('13 March 2024');
    expect(parseDate('on 2024-03-14 we left')).toEqual({ y: 2024, m: 2, d: 14 });
    expect(resolveDates('two years ago', { y: 2024, m: 2, d: 14 })).toBe('two years ago (2022)');
  });

  it('is what the extractive summarizer gives for conversation, and only for conversation', () => {
    expect(isConversational(chat)).toBe(true);
    expect(extractiveSummary(input(chat, 300))).toBe(spanSummary(input(chat, 300)));
    const withTool = [...chat, m('t', 'assistant', '', { toolCalls: [{ id: 'c1', name: 'read_file', arguments: '{"path":"a.ts"}' }] })];
    expect(isConversational(withTool)).toBe(false);
  });
});

describe('a generated long chat (many short user turns)', () => {
  const g = generateChat(7, 160);
  const model = new SessionModel({ sessionId: 'chat-7', tokenCounter: counter });
  model.applyAll(g.events);

  it('has only the system prompt, the goal and the stated constraints as anchors', () => {
    const anchors = model.sections().filter((s) => s.anchor);
    const texts = anchors.flatMap((s) => model.messagesOf(s.id).map((x) => x.text));
    expect(texts).toEqual([g.lines[0]?.content, ...g.constraints, 'What should I cook tonight?']);
  });

  it('reaches a 30% budget: constraints verbatim, planted facts in span summaries, handles quoted, no section ids', async () => {
    const tokens = model.tokens();
    const res = await compactWithStrategy(model, { strategy: 'contextd', budgetTokens: Math.floor(tokens * 0.3), reserveRatio: 0, tokenCounter: counter });
    expect(res.unreachable).toBeUndefined();
    expect(res.tokensAfter).toBeLessThanOrEqual(res.budget);
    const contents = res.messages.map((x) => x.content);
    for (const c of g.constraints) expect(contents).toContain(c);
    const summaries = contents.filter((c) => c.includes('[contextd recall h_'));
    expect(summaries.length).toBeGreaterThan(0);
    for (const s of summaries) expect(s).not.toMatch(/\bs\d+\b/);
    // every planted fact is still there as a whole: its words in one message
    for (const f of g.facts) {
      const home = contents.find((c) => f.words.every((w) => c.includes(w)));
      expect(home, f.text).toBeDefined();
    }
    // the facts were compacted, not kept verbatim
    expect(g.facts.filter((f) => contents.includes(f.text)).length).toBeLessThan(g.facts.length);
  });

  it('plans the same in the daemon reserve mode: the chat gets its headroom back', async () => {
    const live = new SessionModel({ sessionId: 'chat-7b', tokenCounter: counter, budgetTokens: Math.ceil(model.tokens() / 0.95) });
    live.applyAll(g.events);
    expect(live.headroom().headroom).toBeLessThan(0.15);
    const plan = await planCompaction(live, { mode: 'reserve', tokenCounter: counter });
    expect(plan.edits.length).toBeGreaterThan(0);
    expect(plan.headroomAfter).toBeGreaterThanOrEqual(0.15);
  });
});
