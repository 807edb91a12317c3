import { describe, expect, it } from 'vitest';
import { isContextdError } from '../../src/util/errors.js';
import { SessionModel, MESSAGE_OVERHEAD_TOKENS, type Section } from '../../src/model/index.js';
import { isStandingConstraint } from '../../src/model/classify.js';
import { asst, call, callMsg, msg, result, sys, user } from './helpers.js';

function sum(sections: readonly Section[]): number {
  return sections.reduce((a, s) => a + s.tokens, 0);
}

function model(): SessionModel {
  return new SessionModel({ sessionId: 'S' });
}

describe('SessionModel pairing', () => {
  it('pairs calls with their results by id, also when results come back out of order', () => {
    const m = model();
    m.applyAll([
      user('u1', 'list the files and read the parser'),
      callMsg('a1', [call('c1', 'Bash', '{"cmd":"ls"}'), call('c2', 'Read', '{"path":"src/parser.ts"}')], 'Checking both.'),
      result('r2', 'c2', 'export function parse() {}'),
      result('r1', 'c1', 'README.md src test'),
    ]);
    const secs = m.sections();
    expect(secs.map((s) => s.kind)).toEqual(['user-instruction', 'assistant-text', 'tool-call', 'tool-call']);
    const [, text, s1, s2] = secs as [Section, Section, Section, Section];
    expect(text.messageIds).toEqual(['a1']);
    expect(s1.toolName).toBe('Bash');
    expect(s1.messageIds).toEqual(['a1', 'r1']);
    expect(s2.toolName).toBe('Read');
    expect(s2.messageIds).toEqual(['a1', 'r2']);
    expect(s1.pending).toBeUndefined();
    // messagesOf a split call gives a view carrying only that call.
    const view = m.messagesOf(s1.id);
    expect(view.map((x) => x.id)).toEqual(['a1', 'r1']);
    expect(view[0]?.toolCalls?.map((c) => c.id)).toEqual(['c1']);
    expect(view[0]?.text).toBe('');
    expect(m.messagesOf(text.id)[0]?.toolCalls).toBeUndefined();
    expect(m.messagesOf(text.id)[0]?.text).toBe('Checking both.');
    expect(m.tokens()).toBe(sum(secs));
  });

  it('marks a call without result as pending (an anchor) and un-pends it when the result arrives', () => {
    const m = model();
    m.applyAll([user('u1', 'run the tests'), callMsg('a1', [call('c1', 'Bash', '{"cmd":"npm test"}')])]);
    const pending = m.sections()[1];
    expect(pending?.pending).toBe(true);
    expect(pending?.anchor).toBe(true);
    m.apply(result('r1', 'c1', 'all 12 tests passed'));
    const done = m.section(pending?.id ?? '');
    expect(done?.pending).toBeUndefined();
    expect(done?.messageIds).toEqual(['a1', 'r1']);
  });

  it('keeps an orphan result as tool-output, and lets a later call adopt it', () => {
    const m = model();
    m.applyAll([user('u1', 'go'), result('r0', 'zzz', 'stray output', { toolName: 'Bash' })]);
    expect(m.sections()[1]?.kind).toBe('tool-output');
    expect(m.sections()[1]?.toolName).toBe('Bash');
    m.apply(result('r1', 'c1', 'early result'));
    m.apply(callMsg('a1', [call('c1', 'Bash', '{"cmd":"echo"}')]));
    const secs = m.sections();
    const adopted = secs.find((s) => s.messageIds.includes('a1'));
    expect(adopted?.kind).toBe('tool-call');
    expect([...(adopted?.messageIds ?? [])].sort()).toEqual(['a1', 'r1']);
    expect(secs.filter((s) => s.messageIds.includes('r1'))).toHaveLength(1);
    expect(m.tokens()).toBe(sum(secs));
  });

  it('classifies failed results and stack traces as error-trace', () => {
    const m = model();
    m.applyAll([
      user('u1', 'build it'),
      callMsg('a1', [call('c1', 'Bash', 'make')]),
      result('r1', 'c1', 'make: *** No rule to make target', { isError: true }),
      callMsg('a2', [call('c2', 'Bash', 'python x.py')]),
      result('r2', 'c2', 'Traceback (most recent call last):\n  File "x.py", line 3, in <module>\nValueError: bad'),
      callMsg('a3', [call('c3', 'Bash', 'echo hi')]),
      result('r3', 'c3', 'hi'),
    ]);
    expect(m.sections().map((s) => s.kind)).toEqual(['user-instruction', 'error-trace', 'error-trace', 'tool-call']);
    expect(m.sections()[1]?.priority).toBe('medium');
  });

  it('gives reasoning-only assistant messages a reasoning section and splits reasoning + calls', () => {
    const m = model();
    m.applyAll([
      user('u1', 'think about it'),
      asst('a1', '', { reasoning: 'The user wants me to consider options.' }),
      callMsg('a2', [call('c1', 'Read', 'a.ts')], '', { reasoning: 'Need to read a.ts first.' }),
    ]);
    expect(m.sections().map((s) => s.kind)).toEqual(['user-instruction', 'reasoning', 'reasoning', 'tool-call']);
  });
});

describe('SessionModel kinds, priorities and anchors', () => {
  it('applies the documented rules', () => {
    const m = model();
    m.applyAll([
      sys('s0', 'You are a careful coding agent.'),
      user('u0', '<environment_context>cwd=/w</environment_context>', { injected: true }),
      user('u1', 'Fix the crash in the tokenizer'),
      asst('a1', 'Let me look at the code.'),
      asst('a2', 'The root cause is an off-by-one in the lexer; I will fix the bounds check.'),
      user('u2', 'ok'),
      user('uc', 'Never push to main; always open a pull request.'),
      user('u3', 'Now also add a regression test for the lexer'),
      msg({ id: 'sm', role: 'user', text: 'Earlier conversation summary', isSummary: true }),
    ]);
    const byId = new Map(m.sections().map((s) => [s.messageIds[0], s]));
    expect(byId.get('s0')).toMatchObject({ kind: 'system', priority: 'critical', anchor: true });
    expect(byId.get('u0')).toMatchObject({ kind: 'user-message', priority: 'medium', anchor: false });
    // An older request is not an anchor (its facts are kept by summaries) but ranks high.
    expect(byId.get('u1')).toMatchObject({ kind: 'user-instruction', priority: 'high', anchor: false });
    // A standing constraint stays verbatim.
    expect(byId.get('uc')).toMatchObject({ kind: 'user-instruction', priority: 'critical', anchor: true });
    expect(byId.get('a1')).toMatchObject({ kind: 'assistant-text', priority: 'medium', anchor: false });
    expect(byId.get('a2')).toMatchObject({ kind: 'assistant-text', priority: 'high', anchor: true });
    expect(byId.get('u2')).toMatchObject({ kind: 'user-message', priority: 'low', anchor: false });
    expect(byId.get('u3')).toMatchObject({ kind: 'user-instruction', priority: 'critical', anchor: true });
    expect(byId.get('sm')).toMatchObject({ kind: 'summary', priority: 'high', anchor: false });
    // An ack does not replace the goal.
    expect(m.goal()).toEqual({ text: 'Now also add a regression test for the lexer', sectionId: byId.get('u3')?.id });
    // Turns start at each instruction.
    expect(byId.get('u1')?.recency.turn).toBe(1);
    expect(byId.get('u3')?.recency.turn).toBe(3);
    expect(byId.get('a2')?.recency.ageTurns).toBe(2);
  });

  it('marks the last assistant text of a finished turn high priority', () => {
    const m = model();
    m.applyAll([user('u1', 'what is in the repo'), asst('a1', 'Looking.'), asst('a2', 'It holds a parser and its tests.')]);
    expect(m.sections()[2]?.priority).toBe('medium');
    m.apply({ type: 'turn-end' });
    expect(m.sections()[2]?.priority).toBe('high');
    expect(m.sections()[1]?.priority).toBe('medium');
  });

  it('factors multiply to the score', () => {
    const m = model();
    m.applyAll([user('u1', 'explain the budget'), asst('a1', 'The budget is the context window.'), callMsg('a2', [call('c1', 'Read', 'budget.ts')]), result('r1', 'c1', 'export const x = 1')]);
    for (const s of m.sections()) {
      const f = s.factors;
      expect(s.score).toBeCloseTo(f.priorityWeight * f.relevance * f.recencyWeight * f.density, 12);
      expect(s.relevance).toBe(f.relevance);
      expect(s.density).toBe(f.density);
      expect(s.recency.weight).toBe(f.recencyWeight);
    }
  });
});

describe('SessionModel truncate and reset', () => {
  it('drops everything after keepThroughId, re-pends a call that lost its result, never reuses ids', () => {
    const m = model();
    m.applyAll([
      user('u1', 'start'),
      callMsg('a1', [call('c1', 'Bash', 'ls')]),
      result('r1', 'c1', 'a b c'),
      asst('a2', 'done listing'),
    ]);
    const before = m.sections().map((s) => s.id);
    expect(before).toEqual(['s1', 's2', 's3']);
    const v = m.version;
    m.apply({ type: 'truncate', keepThroughId: 'a1', reason: 'rewind' });
    expect(m.version).toBeGreaterThan(v);
    const secs = m.sections();
    expect(secs.map((s) => s.id)).toEqual(['s1', 's2']);
    expect(secs[1]?.pending).toBe(true);
    expect(secs[1]?.messageIds).toEqual(['a1']);
    expect(m.messages().map((x) => x.id)).toEqual(['u1', 'a1']);
    expect(m.tokens()).toBe(sum(secs));
    m.apply(asst('a3', 'branch B'));
    expect(m.sections().at(-1)?.id).toBe('s4');
    expect(m.counts().truncations).toBe(1);
  });

  it('a truncate to an unknown id leaves the context alone; null clears it', () => {
    const m = model();
    m.applyAll([user('u1', 'a'), asst('a1', 'b')]);
    const t = m.tokens();
    m.apply({ type: 'truncate', keepThroughId: 'nope', reason: 'x' });
    expect(m.tokens()).toBe(t);
    m.apply({ type: 'truncate', keepThroughId: null, reason: 'x' });
    expect(m.tokens()).toBe(0);
    expect(m.sections()).toHaveLength(0);
  });

  it('reset clears the context, counts it, and keeps numbering ids', () => {
    const m = model();
    m.applyAll([sys('s0', 'sys'), user('u1', 'a'), asst('a1', 'b'), { type: 'usage', contextTokens: 999 }]);
    expect(m.headroom().reportedTokens).toBe(999);
    expect(m.calibration()).toEqual({
      reportedTokens: 999,
      countedTokens: m.tokens(),
      samples: 1,
      offsetTokens: 999 - m.tokens(),
      ratio: 1,
      estimatedTokens: 999,
    });
    m.apply({ type: 'reset', reason: 'compacted' });
    expect(m.tokens()).toBe(0);
    expect(m.messages()).toHaveLength(0);
    expect(m.counts().resets).toBe(1);
    expect(m.headroom().reportedTokens).toBeUndefined();
    expect(m.calibration()).toEqual({ samples: 0, offsetTokens: 0, ratio: 1, estimatedTokens: 0 });
    m.apply(user('u2', 'continue from summary'));
    expect(m.sections().map((s) => s.id)).toEqual(['s4']);
    expect(m.goal().text).toBe('continue from summary');
  });

  it('moves the epoch when sections may leave the context (truncate, reset, replacement), never on an append', () => {
    const m = model();
    m.applyAll([user('u1', 'start'), asst('a1', 'one'), asst('a2', 'two'), asst('a3', 'three'), { type: 'usage', contextTokens: 50 }, { type: 'meta', meta: { model: 'x' } }]);
    const e0 = m.epoch;
    m.apply(asst('a4', 'four'));
    expect(m.epoch).toBe(e0);
    m.apply({ type: 'truncate', keepThroughId: 'a3', reason: 'rewind' });
    expect(m.epoch).toBe(e0 + 1);
    const [first, second] = m.sections().filter((x) => !x.anchor).map((x) => x.id);
    m.replaceEach([
      { sectionIds: [first as string], summary: { text: 'one', editId: 'e1', handle: 'h1', reason: 'test' } },
      { sectionIds: [second as string], summary: { text: 'two', editId: 'e2', handle: 'h2', reason: 'test' } },
    ]);
    expect(m.epoch).toBe(e0 + 3);
    m.apply({ type: 'reset', reason: 'compacted' });
    expect(m.epoch).toBe(e0 + 4);
  });

  it('counts unknown events without changing the version', () => {
    const m = model();
    const v = m.version;
    m.apply({ type: 'unknown', lineType: 'file-history-snapshot' });
    expect(m.version).toBe(v);
    expect(m.counts()).toEqual({ messages: 0, unknownEvents: 1, resets: 0, truncations: 0 });
    m.apply(user('u1', 'x'));
    expect(m.version).toBe(v + 1);
    expect(m.counts().messages).toBe(1);
  });
});

describe('SessionModel.replaceSections', () => {
  // Known bug, found by the generated hermes transcripts (reasoning on a tool-call message):
  // the message overhead is booked on the text/reasoning fragment, so compacting only the
  // reasoning of a message whose tool call stays live drops the overhead the surviving
  // message still costs. Marked `fails` so it turns red (drop `.fails`) once fixed.
  it('compacting only the reasoning of a tool-call message keeps the message overhead counted', () => {
    const m = model();
    m.applyAll([user('u1', 'Fix the date parser'), callMsg('a1', [call('c1', 'Edit', '{"file":"src/date.ts"}')], '', { reasoning: 'The offset is applied twice.' }), result('r1', 'c1', 'updated')]);
    const reasoning = m.sections().find((s) => s.kind === 'reasoning');
    expect(reasoning).toBeDefined();
    m.replaceSections([reasoning?.id ?? ''], { text: '[contextd archived h1] reasoning elided', editId: 'e1', handle: 'h1', reason: 'low-score' });
    const rebuilt = model();
    rebuilt.applyAll(m.messages().map((message) => ({ type: 'message' as const, message })));
    expect(m.tokens()).toBe(rebuilt.tokens());
  });

  it('compacting the first call of a text-less multi-call message keeps the message overhead counted', () => {
    const m = model();
    m.applyAll([user('u1', 'List and build'), callMsg('a1', [call('c1', 'Bash', 'ls'), call('c2', 'Bash', 'npm run build')]), result('r1', 'c1', 'a b'), result('r2', 'c2', 'ok')]);
    const first = m.sections().find((s) => m.messagesOf(s.id).some((msg) => msg.toolCalls?.[0]?.id === 'c1'));
    expect(first).toBeDefined();
    m.replaceSections([first?.id ?? ''], { text: '[contextd archived h2] ls listed two files', editId: 'e2', handle: 'h2', reason: 'low-score' });
    const rebuilt = model();
    rebuilt.applyAll(m.messages().map((message) => ({ type: 'message' as const, message })));
    expect(m.tokens()).toBe(rebuilt.tokens());
  });

  function build(): SessionModel {
    const m = model();
    m.applyAll([
      sys('s0', 'You are an agent.'),
      user('u1', 'Find why the build fails'),
      callMsg('a1', [call('c1', 'Bash', 'npm run build'), call('c2', 'Bash', 'ls')], 'Running the build.'),
      result('r1', 'c1', 'x'.repeat(4000)),
      result('r2', 'c2', 'a b c'),
      callMsg('a2', [call('c3', 'Read', 'package.json')]),
      result('r3', 'c3', '{"name":"demo"}'),
      callMsg('a3', [call('c4', 'Bash', 'npm test')]),
    ]);
    return m;
  }

  it('replaces sections with one summary section and keeps totals consistent', () => {
    const m = build();
    const secs = m.sections();
    const big = secs.find((s) => s.messageIds.includes('r1'));
    const read = secs.find((s) => s.messageIds.includes('r3'));
    expect(big && read).toBeTruthy();
    const before = m.tokens();
    const v = m.version;
    const summary = m.replaceSections([big!.id, read!.id], {
      text: '[contextd h:abc] build output elided; package.json names demo',
      editId: 'e1',
      handle: 'abc',
      reason: 'low-score',
    });
    expect(m.version).toBeGreaterThan(v);
    expect(summary).toMatchObject({ kind: 'summary', compacted: true, messageIds: ['summary:e1'], anchor: false });
    expect(m.section(big!.id)).toBeUndefined();
    expect(m.section(read!.id)).toBeUndefined();
    const after = m.sections();
    expect(m.tokens()).toBe(sum(after));
    expect(m.tokens()).toBeLessThan(before);
    expect(m.tokens()).toBe(before - big!.tokens - read!.tokens + summary.tokens);
    // The summary takes the place of the first replaced section: right after the assistant
    // message a1 (which keeps its text and its other call), and sections stay in context order.
    expect(summary.messageRange).toEqual({ start: 3, end: 3 });
    const starts = after.map((s) => s.messageRange.start);
    expect(starts).toEqual([...starts].sort((a, b) => a - b));
    // The shared assistant message keeps its text and its other call.
    const msgs = m.messages();
    const a1 = msgs.find((x) => x.id === 'a1');
    expect(a1?.toolCalls?.map((c) => c.id)).toEqual(['c2']);
    expect(a1?.text).toBe('Running the build.');
    expect(msgs.map((x) => x.id)).toEqual(['s0', 'u1', 'a1', 'summary:e1', 'r2', 'a3']);
    const sm = msgs.find((x) => x.id === 'summary:e1');
    expect(sm).toMatchObject({ role: 'user', isSummary: true, text: '[contextd h:abc] build output elided; package.json names demo' });
    expect(summary.tokens).toBe(m.messagesOf(summary.id).length > 0 ? summary.tokens : -1);
    expect(summary.tokens).toBeGreaterThan(MESSAGE_OVERHEAD_TOKENS);
  });

  it('replaceEach applies several edits like one-by-one replaceSections, all or none', () => {
    const edits = (m: SessionModel) => {
      const secs = m.sections();
      const big = secs.find((s) => s.messageIds.includes('r1'))!;
      const read = secs.find((s) => s.messageIds.includes('r3'))!;
      const ls = secs.find((s) => s.messageIds.includes('r2'))!;
      return [
        { sectionIds: [big.id], summary: { text: '[contextd archived h1] build output', editId: 'e1', handle: 'h1', reason: 'low-score' } },
        { sectionIds: [ls.id, read.id], summary: { text: '[contextd archived h2] ls and package.json', editId: 'e2', handle: 'h2', reason: 'low-score' } },
      ];
    };
    const oneByOne = build();
    for (const e of edits(oneByOne)) oneByOne.replaceSections(e.sectionIds, e.summary);
    const batch = build();
    const created = batch.replaceEach(edits(batch));
    expect(created.map((s) => s.messageIds)).toEqual([['summary:e1'], ['summary:e2']]);
    expect(batch.messages()).toEqual(oneByOne.messages());
    expect(batch.tokens()).toBe(oneByOne.tokens());
    expect(batch.sections().map((s) => [s.kind, s.tokens, s.messageIds])).toEqual(oneByOne.sections().map((s) => [s.kind, s.tokens, s.messageIds]));
    // A section named by two edits, or a bad second edit: nothing applies, not even the first.
    const m = build();
    const [first, second] = edits(m);
    const tokens = m.tokens();
    const v = m.version;
    const overlap = { sectionIds: first!.sectionIds, summary: { ...second!.summary } };
    expect(() => m.replaceEach([first!, overlap])).toThrow(/replaced by two edits/);
    expect(() => m.replaceEach([first!, { sectionIds: ['s999'], summary: second!.summary }])).toThrow(/unknown section/);
    expect(m.tokens()).toBe(tokens);
    expect(m.version).toBe(v);
    expect(m.section(first!.sectionIds[0]!)).toBeDefined();
  });

  it('refuses anchors, pending calls and unknown ids without changing anything', () => {
    const m = build();
    const secs = m.sections();
    const instruction = secs.find((s) => s.kind === 'user-instruction')!;
    const pending = secs.find((s) => s.pending)!;
    const ok = secs.find((s) => s.messageIds.includes('r2'))!;
    const tokens = m.tokens();
    const v = m.version;
    const attempt = (ids: string[]): unknown => {
      try {
        m.replaceSections(ids, { text: 'x', editId: 'e', handle: 'h', reason: 'r' });
        return undefined;
      } catch (err) {
        return err;
      }
    };
    const e1 = attempt([ok.id, instruction.id]);
    expect(isContextdError(e1)).toBe(true);
    expect((e1 as { details: unknown }).details).toMatchObject({ reason: 'anchor', sectionId: instruction.id });
    expect((attempt([pending.id]) as { details: unknown }).details).toMatchObject({ reason: 'pending' });
    expect((attempt(['s999']) as { details: unknown }).details).toMatchObject({ reason: 'unknown-section' });
    expect((attempt([]) as { details: unknown }).details).toMatchObject({ reason: 'empty' });
    expect(m.tokens()).toBe(tokens);
    expect(m.version).toBe(v);
    expect(m.section(ok.id)).toBeDefined();
  });

  it('a truncate to a replaced message keeps its summary', () => {
    const m = build();
    const read = m.sections().find((s) => s.messageIds.includes('r3'))!;
    m.replaceSections([read.id], { text: 'read package.json', editId: 'e2', handle: 'h2', reason: 'stale-read' });
    m.apply({ type: 'truncate', keepThroughId: 'r3', reason: 'rewind' });
    expect(m.messages().map((x) => x.id)).toEqual(['s0', 'u1', 'a1', 'r1', 'r2', 'summary:e2']);
    expect(m.tokens()).toBe(sum(m.sections()));
  });

  it('a summary replaced in turn: a truncate to a message of the first, or to the first summary, keeps the second', () => {
    for (const keepThroughId of ['r3', 'summary:e2']) {
      const m = build();
      const read = m.sections().find((s) => s.messageIds.includes('r3'))!;
      const first = m.replaceSections([read.id], { text: 'read package.json', editId: 'e2', handle: 'h2', reason: 'stale-read' });
      const second = m.replaceSections([first.id], { text: 'read a file', editId: 'e4', handle: 'h4', reason: 'low-score' });
      const ids = m.messages().map((x) => x.id);
      // r3 went into a summary that is gone itself: the summary that holds it now is kept
      m.apply({ type: 'truncate', keepThroughId, reason: 'rewind' });
      expect(m.messages().map((x) => x.id)).toEqual(ids.slice(0, ids.indexOf('summary:e4') + 1));
      expect(m.section(second.id)).toBeDefined();
      expect(m.tokens()).toBe(sum(m.sections()));
    }
  });

  it('a summary summarized again takes over only the ids it still holds: an id re-appended after a rewind stays with the summary that holds it now', () => {
    const m = build();
    const read = m.sections().find((s) => s.messageIds.includes('r3'))!;
    const first = m.replaceSections([read.id], { text: 'read package.json', editId: 'e2', handle: 'h2', reason: 'stale-read' });
    // rewound into the summary, then the transcript brings a message with an id the summary holds
    m.apply({ type: 'truncate', keepThroughId: 'a2', reason: 'rewind' });
    m.applyAll([callMsg('r3', [call('c9', 'Bash', 'npm test')]), result('r9', 'c9', 'ok'), user('u2', 'and now?')]);
    const again = m.sections().find((s) => s.messageIds.includes('r9'))!;
    m.replaceSections([again.id], { text: 'ran the tests', editId: 'e5', handle: 'h5', reason: 'low-score' });
    m.replaceSections([first.id], { text: 'read a file', editId: 'e6', handle: 'h6', reason: 'low-score' });
    const ids = m.messages().map((x) => x.id);
    expect(ids.indexOf('summary:e6')).toBeLessThan(ids.indexOf('summary:e5'));
    // the r3 the agent has now is the one in summary:e5: a rewind to it keeps that summary
    m.apply({ type: 'truncate', keepThroughId: 'r3', reason: 'rewind' });
    expect(m.messages().map((x) => x.id)).toEqual(ids.slice(0, ids.indexOf('summary:e5') + 1));
    expect(m.tokens()).toBe(sum(m.sections()));
  });

  it('a model rebuilt from messages() has the same token total', () => {
    const m = build();
    const big = m.sections().find((s) => s.messageIds.includes('r1'))!;
    m.replaceSections([big.id], { text: 'elided', editId: 'e3', handle: 'h3', reason: 'low-score' });
    const copy = model();
    copy.applyAll(m.messages().map((message) => ({ type: 'message' as const, message })));
    expect(copy.tokens()).toBe(m.tokens());
    // A contextd summary is recognised again by its id.
    expect(copy.sections().filter((s) => s.compacted).map((s) => s.messageIds)).toEqual([['summary:e3']]);
  });
});

describe('SessionModel.replayEach', () => {
  const events = [
    sys('s0', 'You are a careful coding agent.'),
    user('u1', 'Fix the date parser and run the tests'),
    callMsg('a1', [call('c1', 'Read', '{"path":"src/date.ts"}')]),
    result('r1', 'c1', 'export function parseDate(s) { return new Date(s); }\n'.repeat(20)),
    callMsg('a2', [call('c2', 'Bash', 'npm test')]),
    result('r2', 'c2', 'Tests 3 passed (3)\n'),
    callMsg('a3', [call('c3', 'Bash', 'npm run lint')]),
  ];
  const built = (): SessionModel => {
    const m = model();
    m.applyAll(events);
    return m;
  };
  const summary = (editId: string) => ({ text: `[contextd archived h-${editId}] read src/date.ts`, editId, handle: `h-${editId}`, reason: 'low-score' });
  const shapeOf = (m: SessionModel, ids: readonly string[]) => {
    const secs = ids.map((id) => m.section(id) as Section);
    return { tokens: sum(secs), messageRange: { start: Math.min(...secs.map((x) => x.messageRange.start)), end: Math.max(...secs.map((x) => x.messageRange.end)) } };
  };

  it('leaves the model replaceEach leaves, when the sections are as they were', () => {
    const a = built();
    const read = a.sections().find((x) => x.toolName === 'Read') as Section;
    const shape = shapeOf(a, [read.id]);
    a.replaceEach([{ sectionIds: [read.id], summary: summary('e1') }]);
    const b = built();
    b.replayEach([{ sectionIds: [read.id], summary: summary('e1'), ...shape }]);
    expect(b.messages()).toEqual(a.messages());
    expect(b.sections()).toEqual(a.sections());
  });

  it('refuses, changing nothing, an anchor, a pending call, a section named twice or missing, and sections that hold other tokens or messages', () => {
    const m = built();
    const secs = m.sections();
    const read = secs.find((x) => x.toolName === 'Read') as Section;
    const pending = secs.find((x) => x.pending) as Section;
    const system = secs.find((x) => x.kind === 'system') as Section;
    const tests = secs.find((x) => x.toolName === 'Bash' && !x.pending) as Section;
    const before = m.messages();
    const tries: [string, Parameters<SessionModel['replayEach']>[0]][] = [
      ['is an anchor', [{ sectionIds: [system.id], summary: summary('e1'), ...shapeOf(m, [system.id]) }]],
      ['is a pending tool call', [{ sectionIds: [pending.id], summary: summary('e1'), ...shapeOf(m, [pending.id]) }]],
      ['is replaced by two edits', [{ sectionIds: [read.id], summary: summary('e1'), ...shapeOf(m, [read.id]) }, { sectionIds: [read.id], summary: summary('e2'), ...shapeOf(m, [read.id]) }]],
      ['is not in the model', [{ sectionIds: ['s999'], summary: summary('e1'), tokens: 1, messageRange: { start: 0, end: 0 } }]],
      ['its sections hold', [{ sectionIds: [read.id], summary: summary('e1'), ...shapeOf(m, [read.id]), tokens: read.tokens + 1 }]],
      ['its sections hold', [{ sectionIds: [read.id], summary: summary('e1'), ...shapeOf(m, [tests.id]), tokens: read.tokens }]],
    ];
    for (const [why, edits] of tries) {
      let caught: unknown;
      try {
        m.replayEach(edits);
      } catch (err) {
        caught = err;
      }
      expect(isContextdError(caught, 'PLAN_EXPIRED'), why).toBe(true);
      expect((caught as Error).message).toContain(why);
      expect(m.messages()).toEqual(before);
    }
  });
});

describe('standing constraints', () => {
  it('reads a sentence labelled as a rule ("Constraint: …") as one; a mention is not', () => {
    expect(isStandingConstraint('Refactor the payments package. Constraint: keep the public signatures in payments/api.py.')).toBe(true);
    expect(isStandingConstraint('Rules: tabs, not spaces.')).toBe(true);
    expect(isStandingConstraint('The constraint solver failed again, can you look?')).toBe(false);
  });
});
