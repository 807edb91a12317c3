import fc from 'fast-check';
import { describe, expect, it } from 'vitest';
import {
  createAdapter,
  createClaudeCodeAdapter,
  createCodexAdapter,
  createOpenAIChatAdapter,
  decodeCodexOutput,
  detectFormat,
  parseTimestamp,
  TRANSCRIPT_FORMATS,
  type TranscriptAdapter,
} from '../../src/ingest/index.js';
import type { TranscriptEvent } from '../../src/model/messages.js';
import { messages } from './helpers.js';

/** Feed objects through an adapter with fake, increasing offsets. */
function run(adapter: TranscriptAdapter, lines: Record<string, unknown>[]): TranscriptEvent[] {
  const out: TranscriptEvent[] = [];
  lines.forEach((l, i) => out.push(...adapter.parseLine(l, i * 100)));
  return out;
}

const S = 'sess-1';
function cu(uuid: string, parentUuid: string | null, content: unknown, extra: Record<string, unknown> = {}) {
  return { type: 'user', uuid, parentUuid, sessionId: S, cwd: '/p', isSidechain: false, timestamp: '2026-01-01T00:00:00.000Z', message: { role: 'user', content }, ...extra };
}
function ca(uuid: string, parentUuid: string | null, content: unknown[], msg: Record<string, unknown> = {}, extra: Record<string, unknown> = {}) {
  return {
    type: 'assistant',
    uuid,
    parentUuid,
    sessionId: S,
    isSidechain: false,
    requestId: 'req',
    message: { id: 'msg_' + uuid, role: 'assistant', model: 'claude-x', content, stop_reason: null, usage: { input_tokens: 1, output_tokens: 1 }, ...msg },
    ...extra,
  };
}

describe('claude-code adapter', () => {
  it('truncates back to the branch point on a rewind, and to null when branching from the root', () => {
    const events = run(createClaudeCodeAdapter(), [
      cu('u1', null, 'first'),
      ca('a1', 'u1', [{ type: 'text', text: 'one' }]),
      cu('u2', 'a1', 'second'),
      ca('a2', 'u2', [{ type: 'text', text: 'two' }]),
      cu('u3', 'a1', 'second, edited'),
      cu('u4', null, 'start over'),
    ]);
    const trunc = events.filter((e) => e.type === 'truncate');
    expect(trunc).toEqual([
      { type: 'truncate', keepThroughId: 'a1', reason: 'branch' },
      { type: 'truncate', keepThroughId: null, reason: 'branch' },
    ]);
    // The truncate comes right before the branch's message.
    const i = events.findIndex((e) => e.type === 'truncate');
    expect(events[i + 1]).toMatchObject({ type: 'message', message: { id: 'u3' } });
  });

  it('treats message-less lines as chain links, not branches', () => {
    const events = run(createClaudeCodeAdapter(), [
      cu('u1', null, 'hi'),
      ca('a1', 'u1', [{ type: 'tool_use', id: 't1', name: 'Bash', input: { command: 'ls' } }]),
      { type: 'progress', uuid: 'p1', parentUuid: 'a1', isSidechain: false, data: { type: 'hook_progress' } },
      cu('r1', 'a1', [{ type: 'tool_result', tool_use_id: 't1', content: 'ok' }]),
      { type: 'system', subtype: 'stop_hook_summary', uuid: 's1', parentUuid: 'r1', isSidechain: false },
      cu('u2', 's1', 'next'),
      // rewind to the hook summary: keeps everything through r1
      ca('a2', 'u2', [{ type: 'text', text: 'x' }]),
      cu('u3', 's1', 'next, edited'),
    ]);
    expect(events.filter((e) => e.type === 'truncate')).toEqual([{ type: 'truncate', keepThroughId: 'r1', reason: 'branch' }]);
  });

  it('does not branch on parallel tool results hanging off their own tool_use lines', () => {
    const events = run(createClaudeCodeAdapter(), [
      cu('u1', null, 'go'),
      ca('a1', 'u1', [{ type: 'tool_use', id: 't1', name: 'Read', input: {} }], { id: 'm1' }),
      ca('a2', 'a1', [{ type: 'tool_use', id: 't2', name: 'Grep', input: {} }], { id: 'm1' }),
      cu('r2', 'a2', [{ type: 'tool_result', tool_use_id: 't2', content: 'two' }]),
      cu('r1', 'a1', [{ type: 'tool_result', tool_use_id: 't1', content: 'one', is_error: true }]),
      ca('a3', 'r1', [{ type: 'text', text: 'done' }], { id: 'm2', stop_reason: 'end_turn' }),
    ]);
    expect(events.filter((e) => e.type === 'truncate')).toEqual([]);
    const tools = messages(events).filter((m) => m.role === 'tool');
    expect(tools.map((m) => [m.toolCallId, m.toolName, m.isError === true])).toEqual([
      ['t2', 'Grep', false],
      ['t1', 'Read', true],
    ]);
    // One usage per message.id, one turn end at the final end_turn.
    expect(events.filter((e) => e.type === 'usage')).toHaveLength(2);
    expect(events.filter((e) => e.type === 'turn-end')).toHaveLength(1);
    expect(events.at(-1)?.type).toBe('turn-end');
  });

  it('emits ONE usage per message id with input + cache + output tokens', () => {
    const usage = { input_tokens: 3, cache_creation_input_tokens: 5376, cache_read_input_tokens: 21440, output_tokens: 12 };
    const events = run(createClaudeCodeAdapter(), [
      cu('u1', null, 'q'),
      ca('a1', 'u1', [{ type: 'thinking', thinking: 'hmm', signature: 'SIGNATURE' }], { id: 'M', usage }),
      ca('a2', 'a1', [{ type: 'text', text: 'answer' }], { id: 'M', usage: { ...usage, output_tokens: 90 } }),
      ca('a3', 'a2', [{ type: 'tool_use', id: 't', name: 'Bash', input: {} }], { id: 'M', usage: { ...usage, output_tokens: 120 }, stop_reason: 'tool_use' }),
    ]);
    expect(events.filter((e) => e.type === 'usage')).toEqual([{ type: 'usage', contextTokens: 3 + 5376 + 21440 + 12, atMessageId: 'a1' }]);
    const m = messages(events);
    expect(m[1]).toMatchObject({ id: 'a1', role: 'assistant', text: '', reasoning: 'hmm' });
    expect(JSON.stringify(events)).not.toContain('SIGNATURE');
    expect(events.filter((e) => e.type === 'turn-end')).toHaveLength(0);
  });

  it('handles compaction, summaries, injected content, sidechains and multi-block ids', () => {
    const events = run(createClaudeCodeAdapter(), [
      cu('u0', null, 'real prompt'),
      cu('m0', 'u0', '<command-name>/model</command-name>'),
      cu('c0', 'm0', 'Caveat: The messages below were generated by the user', { isMeta: true }),
      cu('side', 'c0', 'subagent prompt', { isSidechain: true }),
      { type: 'summary', summary: 'A title', leafUuid: 'u0' },
      { type: 'system', subtype: 'compact_boundary', uuid: 'b1', parentUuid: null, logicalParentUuid: 'c0', isSidechain: false, compactMetadata: { trigger: 'auto' } },
      cu('s1', 'b1', 'This session is being continued from a previous conversation that ran out of context.', { isCompactSummary: true }),
      cu('u1', 's1', [
        { type: 'text', text: 'look' },
        { type: 'image', source: { type: 'base64', media_type: 'image/png', data: 'iVBORw0KGgoAAAA' } },
      ]),
      { type: 'future-line-type', uuid: 'f1', parentUuid: 'u1' },
    ]);
    const types = events.map((e) => e.type);
    expect(types.filter((t) => t === 'reset')).toHaveLength(1);
    expect(events.filter((e) => e.type === 'truncate')).toEqual([]);
    const afterReset = events.slice(types.indexOf('reset') + 1);
    expect(messages(afterReset)[0]).toMatchObject({ id: 's1', isSummary: true, role: 'user' });
    expect(messages(afterReset)[0]?.injected).toBeUndefined();
    const m = messages(events);
    expect(m.find((x) => x.id === 'u0')?.injected).toBeUndefined();
    expect(m.find((x) => x.id === 'm0')?.injected).toBe(true);
    expect(m.find((x) => x.id === 'c0')?.injected).toBe(true);
    expect(m.some((x) => x.id === 'side')).toBe(false);
    expect(events).toContainEqual({ type: 'unknown', lineType: 'sidechain' });
    expect(events).toContainEqual({ type: 'unknown', lineType: 'future-line-type' });
    expect(m.filter((x) => x.id.startsWith('u1#'))).toEqual([
      expect.objectContaining({ id: 'u1#0', text: 'look' }),
      expect.objectContaining({ id: 'u1#1', text: '', imageCount: 1 }),
    ]);
    expect(JSON.stringify(events)).not.toContain('iVBORw0KGgo');
  });

  it('ends a turn once: end_turn on the final block, not again at turn_duration', () => {
    const events = run(createClaudeCodeAdapter(), [
      cu('u1', null, 'q'),
      ca('a1', 'u1', [{ type: 'thinking', thinking: 't' }], { id: 'M', stop_reason: 'end_turn' }),
      ca('a2', 'a1', [{ type: 'text', text: 'a' }], { id: 'M', stop_reason: 'end_turn' }, { timestamp: '2026-01-01T00:00:04.000Z' }),
      { type: 'system', subtype: 'turn_duration', uuid: 'd1', parentUuid: 'a2', durationMs: 5, isSidechain: false, timestamp: '2026-01-01T00:00:05.000Z' },
      cu('u2', 'd1', 'q2'),
      ca('a3', 'u2', [{ type: 'text', text: 'b' }], { id: 'N' }),
      { type: 'system', subtype: 'turn_duration', uuid: 'd2', parentUuid: 'a3', durationMs: 5, isSidechain: false, timestamp: '2026-01-01T00:00:09.000Z' },
    ]);
    const ends = events.filter((e) => e.type === 'turn-end');
    expect(ends).toEqual([
      { type: 'turn-end', timestamp: Date.parse('2026-01-01T00:00:04.000Z') },
      { type: 'turn-end', timestamp: Date.parse('2026-01-01T00:00:09.000Z') },
    ]);
    expect(events.indexOf(ends[0] as TranscriptEvent)).toBeGreaterThan(events.findIndex((e) => e.type === 'message' && e.message.id === 'a2'));
  });
});

describe('codex adapter', () => {
  const env = (type: string, payload: Record<string, unknown>) => ({ timestamp: '2025-11-17T21:30:28.608Z', type, payload });
  const userItem = (text: string) => env('response_item', { type: 'message', role: 'user', content: [{ type: 'input_text', text }] });

  it('replaces history on compacted: reset, replacement items, summary once', () => {
    const events = run(createCodexAdapter(), [
      env('session_meta', { id: 'S', cwd: '/w', base_instructions: { text: 'You are Codex.' }, git: { repository_url: 'git@x:y.git' } }),
      userItem('<environment_context>\n<cwd>/w</cwd>'),
      userItem('do it'),
      env('event_msg', { type: 'user_message', message: 'do it' }),
      env('response_item', { type: 'function_call', name: 'shell', arguments: '{"command":["ls"]}', call_id: 'c1' }),
      env('response_item', { type: 'function_call_output', call_id: 'c1', output: '{"output":"boom","metadata":{"exit_code":2}}' }),
      env('compacted', {
        message: 'SUMMARY TEXT',
        replacement_history: [
          { type: 'message', role: 'user', content: [{ type: 'input_text', text: 'do it' }] },
          { type: 'message', role: 'user', content: [{ type: 'input_text', text: 'Another model summarized:\nSUMMARY TEXT' }] },
        ],
      }),
      env('event_msg', { type: 'context_compacted' }),
      env('response_item', { type: 'message', role: 'assistant', content: [{ type: 'output_text', text: 'done' }] }),
      env('event_msg', { type: 'task_complete', turn_id: 't' }),
      env('event_msg', { type: 'turn_aborted', reason: 'interrupted' }),
    ]);
    const m = messages(events);
    expect(m[0]).toMatchObject({ role: 'system', text: 'You are Codex.' });
    expect(m.filter((x) => x.text === 'do it')).toHaveLength(2); // once live, once in the replacement history
    const r = events.findIndex((e) => e.type === 'reset');
    expect(events[r]).toEqual({ type: 'reset', reason: 'compacted' });
    const after = messages(events.slice(r + 1));
    expect(after.map((x) => [x.id, x.isSummary === true])).toEqual([
      ['L600#0', false],
      ['L600#1', true],
      ['L800', false],
    ]);
    expect(m.find((x) => x.role === 'tool')).toMatchObject({ text: 'boom', isError: true, toolName: 'shell', toolCallId: 'c1' });
    expect(events.filter((e) => e.type === 'turn-end')).toHaveLength(1);
    expect(events.find((e) => e.type === 'meta')).toEqual({ type: 'meta', meta: { sessionId: 'S', cwd: '/w', repo: 'git@x:y.git' } });
  });

  it('emits a summary message when the replacement history does not carry it', () => {
    const events = run(createCodexAdapter(), [env('compacted', { message: 'only the summary' })]);
    expect(events).toEqual([
      { type: 'reset', reason: 'compacted' },
      { type: 'message', message: expect.objectContaining({ id: 'L0', role: 'user', text: 'only the summary', isSummary: true }) },
    ]);
  });

  it('pairs custom and local shell calls, maps developer to system, counts images', () => {
    const events = run(createCodexAdapter(), [
      env('response_item', { type: 'message', role: 'developer', content: [{ type: 'input_text', text: 'rules' }] }),
      env('response_item', { type: 'custom_tool_call', name: 'apply_patch', input: '*** Begin Patch', call_id: 'p1' }),
      env('response_item', { type: 'custom_tool_call_output', call_id: 'p1', output: 'error: Failed to find expected lines' }),
      env('response_item', { type: 'local_shell_call', call_id: 'l1', action: { type: 'exec', command: ['ls'] }, status: 'completed' }),
      env('response_item', { type: 'function_call_output', call_id: 'l1', output: 'failed in sandbox LinuxSeccomp with execution error: denied' }),
      env('response_item', { type: 'message', role: 'user', content: [{ type: 'input_text', text: 'see' }, { type: 'input_image', image_url: 'data:image/png;base64,AAAA' }] }),
      env('response_item', { type: 'reasoning', summary: [], content: null, encrypted_content: 'gAAAAABsecret' }),
      env('response_item', { type: 'brand_new_item' }),
      env('mystery', { a: 1 }),
    ]);
    const m = messages(events);
    expect(m[0]).toMatchObject({ role: 'system', text: 'rules' });
    expect(m.filter((x) => x.role === 'tool').map((x) => [x.toolName, x.isError])).toEqual([
      ['apply_patch', true],
      ['local_shell', true],
    ]);
    expect(m.find((x) => x.imageCount === 1)).toMatchObject({ role: 'user', text: 'see' });
    expect(JSON.stringify(events)).not.toMatch(/base64|gAAAAAB/);
    expect(events.filter((e) => e.type === 'unknown')).toEqual([
      { type: 'unknown', lineType: 'response_item:brand_new_item' },
      { type: 'unknown', lineType: 'mystery' },
    ]);
  });

  it('emits header instructions once: dropped when an item carries them, else before the first real item', () => {
    const echoed = messages(
      run(createCodexAdapter(), [
        { id: 'S', timestamp: 't', instructions: 'RULES', git: {} },
        { record_type: 'state' },
        { type: 'message', role: 'user', content: [{ type: 'input_text', text: '<user_instructions>\nRULES\n</user_instructions>' }] },
        { type: 'message', role: 'user', content: [{ type: 'input_text', text: 'hello' }] },
      ]),
    );
    expect(echoed.filter((m) => m.text.includes('RULES'))).toHaveLength(1);
    expect(echoed[0]).toMatchObject({ role: 'user', injected: true });
    const lone = messages(
      run(createCodexAdapter(), [
        { timestamp: 't', type: 'session_meta', payload: { id: 'S', instructions: 'RULES' } },
        { timestamp: 't', type: 'response_item', payload: { type: 'message', role: 'user', content: [{ type: 'input_text', text: 'hello' }] } },
      ]),
    );
    expect(lone.map((m) => [m.id, m.role, m.text, m.sourceOffset])).toEqual([
      ['L0#instructions', 'system', 'RULES', 0],
      ['L100', 'user', 'hello', 100],
    ]);
  });

  it('decodes output shapes', () => {
    expect(decodeCodexOutput('{"output":"x","metadata":{"exit_code":0}}')).toEqual({ text: 'x', isError: false, imageCount: 0, exitCode: 0 });
    expect(decodeCodexOutput('[{"type":"text","text":"a"},{"type":"input_image","image_url":"data:"}]')).toEqual({ text: 'a', isError: false, imageCount: 1 });
    expect(decodeCodexOutput('plain')).toEqual({ text: 'plain', isError: false, imageCount: 0 });
    expect(decodeCodexOutput({ content: 'nope', success: false }).isError).toBe(true);
    expect(decodeCodexOutput(42)).toEqual({ text: '', isError: false, imageCount: 0 });
  });
});

describe('openai-chat adapter', () => {
  it('handles hermes lines: session_meta, reasoning, tool pairing and errors, naive timestamps, turn ends', () => {
    const events = run(createOpenAIChatAdapter(), [
      { role: 'session_meta', tools: [{ type: 'function', function: { name: 'terminal', description: 'run', parameters: {} } }], model: 'M-1', timestamp: '2026-04-18T20:45:54.444235' },
      { role: 'user', content: 'Hello', timestamp: '2026-04-18T20:45:54.444235' },
      { role: 'assistant', content: '', reasoning: 'think', finish_reason: 'tool_calls', tool_calls: [{ id: 'c1', type: 'function', function: { name: 'terminal', arguments: '{}' } }] },
      { role: 'tool', content: '{"success": false, "error": "429 Rate limit"}', tool_call_id: 'c1' },
      { role: 'assistant', content: 'sorry', finish_reason: 'stop' },
      { role: 'session_meta', tools: [{ type: 'function', function: { name: 'other' } }], model: 'M-1' },
      { role: 'user', content: '[CONTEXT COMPACTION — REFERENCE ONLY] Earlier turns were compacted' },
      { role: 'user', content: [{ type: 'text', text: 'pic' }, { type: 'image_url', image_url: { url: 'data:image/png;base64,AAAA' } }] },
      { role: 'narrator', content: 'x' },
    ]);
    const m = messages(events);
    expect(events[0]).toEqual({ type: 'meta', meta: { model: 'M-1' } });
    expect(m.filter((x) => x.role === 'system')).toHaveLength(1);
    expect(m[0]?.text).toContain('"terminal"');
    expect(m[1]).toMatchObject({ id: 'L100', role: 'user', text: 'Hello', timestamp: Date.UTC(2026, 3, 18, 20, 45, 54, 444) });
    expect(m[2]).toMatchObject({ role: 'assistant', text: '', reasoning: 'think', toolCalls: [{ id: 'c1', name: 'terminal', arguments: '{}' }] });
    expect(m[3]).toMatchObject({ role: 'tool', toolCallId: 'c1', toolName: 'terminal', isError: true });
    expect(events.filter((e) => e.type === 'turn-end')).toHaveLength(1);
    expect(m.find((x) => x.text.startsWith('[CONTEXT'))?.isSummary).toBe(true);
    expect(m.find((x) => x.text === 'pic')?.imageCount).toBe(1);
    expect(events.at(-1)).toEqual({ type: 'unknown', lineType: 'role:narrator' });
  });

  it('reads one-conversation-per-line files as reset + messages', () => {
    const events = run(createOpenAIChatAdapter(), [
      { messages: [{ role: 'system', content: 's' }, { role: 'user', content: 'u' }] },
      { messages: [{ role: 'user', content: 'u2' }] },
    ]);
    expect(events.map((e) => (e.type === 'message' ? e.message.id : e.type))).toEqual(['reset', 'L0#0', 'L0#1', 'reset', 'L100#0']);
  });
});

describe('detectFormat and adapters in general', () => {
  it('detects each format from its first lines', () => {
    expect(detectFormat({ timestamp: 't', type: 'session_meta', payload: {} })).toBe('codex');
    expect(detectFormat({ id: 'x', timestamp: 't', instructions: null, git: {} })).toBe('codex');
    expect(detectFormat({ record_type: 'state' })).toBe('codex');
    expect(detectFormat({ type: 'message', role: 'user', content: [] })).toBe('codex');
    expect(detectFormat({ type: 'summary', summary: 't', leafUuid: 'u' })).toBe('claude-code');
    expect(detectFormat({ type: 'file-history-snapshot', messageId: 'm', snapshot: {} })).toBe('claude-code');
    expect(detectFormat({ type: 'user', uuid: 'u', message: {} })).toBe('claude-code');
    expect(detectFormat({ role: 'session_meta', tools: [] })).toBe('openai-chat');
    expect(detectFormat({ messages: [] })).toBe('openai-chat');
    expect(detectFormat({ hello: 'world' })).toBeUndefined();
  });

  it('never throws on arbitrary objects', () => {
    fc.assert(
      fc.property(fc.constantFrom(...TRANSCRIPT_FORMATS), fc.array(fc.object({ maxDepth: 3 }), { maxLength: 20 }), (format, objs) => {
        const adapter = createAdapter(format);
        for (const [i, v] of objs.entries()) expect(Array.isArray(adapter.parseLine(v, i))).toBe(true);
      }),
      { numRuns: 200 },
    );
    // Shaped-but-wrong values in the fields adapters read.
    const weird = [null, 1, 'x', [], {}, [null], [{ type: 1 }], { text: null }];
    fc.assert(
      fc.property(
        fc.constantFrom(...TRANSCRIPT_FORMATS),
        fc.record({
          type: fc.constantFrom('user', 'assistant', 'system', 'attachment', 'response_item', 'event_msg', 'compacted', 'session_meta', 'message'),
          role: fc.constantFrom('user', 'assistant', 'tool', 'session_meta', undefined),
          uuid: fc.constantFrom('a', 'b', undefined),
          parentUuid: fc.constantFrom('a', 'b', null, 7),
          message: fc.constantFrom(...weird),
          payload: fc.constantFrom(...weird, { type: 'token_count', info: { last_token_usage: null } }, { type: 'message', role: 'user', content: 5 }),
          content: fc.constantFrom(...weird),
          tool_calls: fc.constantFrom(...weird),
          messages: fc.constantFrom(undefined, [1, null, {}]),
        }),
        (format, v) => {
          const adapter = createAdapter(format);
          expect(Array.isArray(adapter.parseLine(v as Record<string, unknown>, 0))).toBe(true);
          expect(Array.isArray(adapter.parseLine(v as Record<string, unknown>, 1))).toBe(true);
        },
      ),
      { numRuns: 300 },
    );
  });

  it('parses timestamps: zoned, naive (as UTC), epoch seconds/ms, garbage', () => {
    expect(parseTimestamp('2026-02-16T18:47:50.590Z')).toBe(Date.UTC(2026, 1, 16, 18, 47, 50, 590));
    expect(parseTimestamp('2026-04-03T12:41:46.092819')).toBe(Date.UTC(2026, 3, 3, 12, 41, 46, 92));
    expect(parseTimestamp('2026-04-03T12:41:46+02:00')).toBe(Date.UTC(2026, 3, 3, 10, 41, 46));
    expect(parseTimestamp(1_700_000_000)).toBe(1_700_000_000_000);
    expect(parseTimestamp(1_700_000_000_123)).toBe(1_700_000_000_123);
    expect(parseTimestamp('yesterday-ish')).toBeUndefined();
    expect(parseTimestamp(undefined)).toBeUndefined();
  });
});
