/**
 * Format detection from a transcript's first JSON object line(s), and the adapter factory.
 */
import type { TranscriptAdapter, TranscriptFormat } from './types.js';
import { createClaudeCodeAdapter } from './adapters/claude-code.js';
import { createCodexAdapter } from './adapters/codex.js';
import { createOpenAIChatAdapter } from './adapters/openai-chat.js';
import { ContextdError, ErrorCode } from '../util/errors.js';

const CLAUDE_TYPES = new Set([
  'user',
  'assistant',
  'system',
  'summary',
  'file-history-snapshot',
  'queue-operation',
  'progress',
  'attachment',
  'permission-mode',
  'last-prompt',
]);

const CODEX_ENVELOPE_TYPES = new Set(['session_meta', 'turn_context', 'response_item', 'event_msg', 'compacted']);
const CODEX_ITEM_TYPES = new Set([
  'message',
  'reasoning',
  'function_call',
  'function_call_output',
  'custom_tool_call',
  'custom_tool_call_output',
  'local_shell_call',
  'web_search_call',
  'ghost_snapshot',
]);

/**
 * Guess the format of a transcript from one parsed line. Returns undefined when the line
 * alone does not tell (the caller tries the next line).
 */
export function detectFormat(value: Record<string, unknown>): TranscriptFormat | undefined {
  const type = typeof value['type'] === 'string' ? value['type'] : undefined;
  // Codex envelope {timestamp, type, payload}.
  if (type !== undefined && CODEX_ENVELOPE_TYPES.has(type) && typeof value['payload'] === 'object' && value['payload'] !== null) return 'codex';
  // Claude Code lines: envelope fields or a Claude line type.
  if ('uuid' in value || 'sessionId' in value || 'parentUuid' in value) return 'claude-code';
  if (type !== undefined && CLAUDE_TYPES.has(type) && !('role' in value)) return 'claude-code';
  // Legacy Codex: header {id, timestamp, instructions, git}, bare ResponseItems, state records.
  if (type === undefined && typeof value['id'] === 'string' && ('instructions' in value || 'git' in value)) return 'codex';
  if (value['record_type'] === 'state') return 'codex';
  if (type !== undefined && CODEX_ITEM_TYPES.has(type)) return 'codex';
  // OpenAI chat (and hermes): a role per line, or one conversation per line.
  if (typeof value['role'] === 'string' || Array.isArray(value['messages'])) return 'openai-chat';
  return undefined;
}

/** A fresh adapter for one file of the given format. */
export function createAdapter(format: TranscriptFormat): TranscriptAdapter {
  switch (format) {
    case 'claude-code':
      return createClaudeCodeAdapter();
    case 'codex':
      return createCodexAdapter();
    case 'openai-chat':
      return createOpenAIChatAdapter();
    default:
      throw new ContextdError(ErrorCode.FORMAT_UNKNOWN, `unknown transcript format: ${String(format)}`, { format });
  }
}
