import { describe, expect, it } from 'vitest';
import { createCodexAdapter } from '../../src/ingest/adapters/codex.js';
import type { TranscriptEvent } from '../../src/model/messages.js';

const usage = { input_tokens: 900, cached_input_tokens: 0, output_tokens: 20, reasoning_output_tokens: 0, total_tokens: 920 };

describe('codex adapter: token_usage_record (0.169+)', () => {
  it('takes the report from the record placed before the tool output and skips its token_count twin', () => {
    const a = createCodexAdapter();
    const lines = [
      { type: 'session_meta', payload: { id: '01a2099b-f8a5-79c0-9ff4-7e4131ffc81a', cwd: '/w' } },
      { type: 'response_item', payload: { type: 'function_call', name: 'exec_command', arguments: '{"cmd":"ls"}', call_id: 'call_1' } },
      { type: 'token_usage_record', payload: { usage } },
      { type: 'response_item', payload: { type: 'function_call_output', call_id: 'call_1', output: 'a\nb\n' } },
      { type: 'event_msg', payload: { type: 'token_count', info: { total_token_usage: usage, last_token_usage: usage, model_context_window: 258400 } } },
    ];
    const events: TranscriptEvent[] = lines.flatMap((l, i) => a.parseLine(l, i * 100));
    const kinds = events.filter((e) => e.type === 'usage' || e.type === 'message').map((e) => (e.type === 'usage' ? `usage:${e.contextTokens}` : `msg:${e.message.role}`));
    expect(kinds).toEqual(['msg:assistant', 'usage:920', 'msg:tool']);
  });

  it('still uses token_count when no record precedes it (older versions)', () => {
    const a = createCodexAdapter();
    const events = a.parseLine({ type: 'event_msg', payload: { type: 'token_count', info: { total_token_usage: usage, last_token_usage: usage } } }, 0);
    expect(events.filter((e) => e.type === 'usage')).toEqual([{ type: 'usage', contextTokens: 920 }]);
  });
});
