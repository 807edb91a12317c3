/**
 * Claude Code session files (`~/.claude/projects/<slug>/<sessionId>.jsonl`, and subagent
 * `agent-*.jsonl` files).
 *
 * Traps handled here (see formats.md §1):
 * - one assistant line per content block, all repeating the response's `usage`: ONE `usage`
 *   event per `message.id`, emitted at the response's first line (input + cache tokens are
 *   exact there; before 2.1 `output_tokens` on that line counts the output streamed so far,
 *   which matches `atMessageId` = that line's message). Waiting for a final line would hold
 *   the latest response's usage back until the next turn, since old versions never mark it;
 * - the `uuid`/`parentUuid` DAG: a message line whose parent is not where the live chain
 *   ends is a rewind/edit → `truncate` back to the last message at or before the parent.
 *   Lines without messages (progress, attachments, hook summaries) are still chain links,
 *   and parallel tool results hanging off their own tool_use line are not branches;
 * - sidechain lines inside a main file are skipped; a file whose first envelope line is a
 *   sidechain line is a subagent file and is read whole;
 * - `compact_boundary` → `reset`; `isCompactSummary` → `isSummary`; harness-injected user
 *   content → `injected`.
 */
import type { TranscriptAdapter } from '../types.js';
import type { Message, SessionMeta, ToolCall, TranscriptEvent } from '../../model/messages.js';
import { argsString, arr, num, obj, parseTimestamp, partsText, str, type JsonObject, withSourceOffset } from './common.js';

/** Line types Claude Code writes that never carry model context by themselves. */
const NON_CONTEXT_TYPES = new Set([
  'file-history-snapshot',
  'queue-operation',
  'permission-mode',
  'last-prompt',
  'summary',
  'progress',
  'custom-title',
  'tag',
  'agent-name',
]);

/** Attachment types whose content is injected into the model's context as a reminder. */
const CONTEXT_ATTACHMENTS = new Set(['hook_additional_context', 'skill_listing', 'task_reminder', 'todo_reminder']);

const INJECTED_PREFIXES = [
  '<command-name>',
  '<command-message>',
  '<command-args>',
  '<local-command-stdout>',
  '<local-command-stderr>',
  '<local-command-caveat>',
  '<system-reminder>',
  '<bash-stdout>',
  '<bash-stderr>',
  '<user-prompt-submit-hook>',
  '<task-notification>',
  'Caveat:',
  '[Request interrupted by user',
];

const SUMMARY_PREFIX = 'This session is being continued from a previous conversation';

export function isInjectedClaudeText(text: string): boolean {
  const t = text.trimStart();
  return INJECTED_PREFIXES.some((p) => t.startsWith(p));
}

interface Draft {
  readonly blockIndex: number;
  readonly message: Omit<Message, 'id'>;
}

class ClaudeCodeAdapter implements TranscriptAdapter {
  readonly format = 'claude-code' as const;

  /** 'sidechain' for subagent files (first envelope line is a sidechain line). */
  private mode: 'main' | 'sidechain' | undefined;
  /** uuid → id of the last message at or before that line on its chain (null: none). */
  private readonly chainAt = new Map<string, string | null>();
  /** The last message of the live context. */
  private lastMessageId: string | null = null;
  private seq = 0;
  private readonly seqOf = new Map<string, number>();
  /** Tool call id → tool name (never forgotten: results may arrive late). */
  private readonly callNames = new Map<string, string>();
  /** Calls without a result yet → seq of the message that made them. */
  private readonly pending = new Map<string, number>();
  /** message.id of every response whose usage was reported. */
  private readonly usageDone = new Set<string>();
  private turnOpen = false;
  private meta: { sessionId?: string; cwd?: string; model?: string } = {};

  parseLine(value: JsonObject, sourceOffset: number): TranscriptEvent[] {
    return withSourceOffset(this.parse(value, sourceOffset), sourceOffset);
  }

  private parse(value: JsonObject, sourceOffset: number): TranscriptEvent[] {
    const type = str(value['type']);
    const out: TranscriptEvent[] = [];

    if (typeof value['isSidechain'] === 'boolean' && this.mode === undefined) {
      this.mode = value['isSidechain'] === true ? 'sidechain' : 'main';
    }
    if (this.mode === 'main' && value['isSidechain'] === true) {
      return [{ type: 'unknown', lineType: 'sidechain' }];
    }
    this.maybeMeta(value, out);

    switch (type) {
      case 'user':
      case 'assistant':
        this.onMessageLine(type, value, sourceOffset, out);
        return out;
      case 'system':
        this.onSystem(value, out);
        return out;
      case 'attachment':
        this.onAttachment(value, sourceOffset, out);
        return out;
      default:
        if (type !== undefined && NON_CONTEXT_TYPES.has(type)) {
          this.linkOnly(value);
          return out;
        }
        this.linkOnly(value);
        out.push({ type: 'unknown', lineType: type ?? 'untyped' });
        return out;
    }
  }

  // ---- session facts -------------------------------------------------------------------

  private maybeMeta(value: JsonObject, out: TranscriptEvent[]): void {
    const sessionId = str(value['sessionId']);
    const cwd = str(value['cwd']);
    const message = obj(value['message']);
    const rawModel = value['type'] === 'assistant' ? str(message?.['model']) : undefined;
    const model = rawModel !== undefined && rawModel !== '<synthetic>' ? rawModel : undefined;
    const changed: { sessionId?: string; cwd?: string; model?: string } = {};
    if (sessionId !== undefined && sessionId !== this.meta.sessionId) changed.sessionId = sessionId;
    if (cwd !== undefined && cwd !== this.meta.cwd) changed.cwd = cwd;
    if (model !== undefined && model !== this.meta.model) changed.model = model;
    if (Object.keys(changed).length === 0) return;
    this.meta = { ...this.meta, ...changed };
    const meta: SessionMeta = { ...this.meta };
    out.push({ type: 'meta', meta });
  }

  // ---- DAG -----------------------------------------------------------------------------

  /** Where the chain stood at this line's parent: a message id, null (root), or undefined (unknown parent). */
  private parentState(value: JsonObject, producesMessages: boolean): string | null | undefined {
    const parent = value['parentUuid'];
    if (parent === null) return producesMessages ? null : undefined;
    if (typeof parent !== 'string') return undefined;
    return this.chainAt.has(parent) ? (this.chainAt.get(parent) ?? null) : undefined;
  }

  /** Record a line that produced no messages as a chain link. */
  private linkOnly(value: JsonObject): void {
    const uuid = str(value['uuid']);
    if (uuid === undefined) return;
    const at = this.parentState(value, false);
    this.chainAt.set(uuid, at === undefined ? this.lastMessageId : at);
  }

  /** Emit a truncate when a message line continues from somewhere other than the live end. */
  private branchCheck(value: JsonObject, answersPending: boolean, out: TranscriptEvent[]): void {
    const keep = this.parentState(value, true);
    if (keep === undefined || keep === this.lastMessageId || answersPending) return;
    out.push({ type: 'truncate', keepThroughId: keep, reason: 'branch' });
    this.lastMessageId = keep;
    const cut = keep === null ? -1 : (this.seqOf.get(keep) ?? -1);
    for (const [id, s] of this.pending) if (s > cut) this.pending.delete(id);
  }

  private emit(message: Message, out: TranscriptEvent[]): void {
    out.push({ type: 'message', message });
    this.lastMessageId = message.id;
    this.seqOf.set(message.id, ++this.seq);
    this.turnOpen = true;
  }

  // ---- lines ---------------------------------------------------------------------------

  private onMessageLine(role: 'user' | 'assistant', value: JsonObject, offset: number, out: TranscriptEvent[]): void {
    const message = obj(value['message']);

    const timestamp = parseTimestamp(value['timestamp']);
    const drafts = role === 'user' ? this.userDrafts(value, message, timestamp) : this.assistantDrafts(value, message, timestamp);
    const uuid = str(value['uuid']);

    if (drafts.length === 0) {
      this.linkOnly(value);
    } else {
      // Parallel tool results hang off their own tool_use line; injected command echoes hang
      // off odd parents. Neither is a rewind.
      const attached =
        (role === 'user' && drafts.every((d) => d.message.role === 'tool') && drafts.some((d) => d.message.toolCallId !== undefined && this.pending.has(d.message.toolCallId))) ||
        drafts.every((d) => d.message.injected === true);
      this.branchCheck(value, attached, out);
      const content = message?.['content'];
      const multi = Array.isArray(content) && content.length > 1;
      const base = uuid ?? `L${offset}`;
      for (const d of drafts) {
        const id = multi ? `${base}#${d.blockIndex}` : base;
        const m: Message = { id, ...d.message };
        if (m.toolCalls) for (const c of m.toolCalls) this.pending.set(c.id, this.seq + 1);
        if (m.role === 'tool' && m.toolCallId !== undefined) this.pending.delete(m.toolCallId);
        this.emit(m, out);
      }
      if (uuid !== undefined) this.chainAt.set(uuid, this.lastMessageId);
    }

    if (role !== 'assistant' || message === undefined) return;
    this.assistantUsage(str(message['id']), message, out);
    const stop = str(message['stop_reason']);
    const blocks = arr(message['content']);
    const lastBlockType = str(obj(blocks?.[blocks.length - 1])?.['type']);
    const endsTurn = (stop === 'end_turn' || stop === 'stop_sequence') && lastBlockType !== 'thinking' && lastBlockType !== 'redacted_thinking';
    if (endsTurn && this.pending.size === 0 && this.turnOpen) this.turnEnd(timestamp, out);
  }

  /** One usage event per API response (message.id), at its first line. */
  private assistantUsage(apiId: string | undefined, message: JsonObject, out: TranscriptEvent[]): void {
    const usage = obj(message['usage']);
    if (apiId === undefined || usage === undefined || this.usageDone.has(apiId)) return;
    const tokens =
      (num(usage['input_tokens']) ?? 0) +
      (num(usage['cache_creation_input_tokens']) ?? 0) +
      (num(usage['cache_read_input_tokens']) ?? 0) +
      (num(usage['output_tokens']) ?? 0);
    if (tokens <= 0) return;
    this.usageDone.add(apiId);
    const at = this.lastMessageId;
    out.push(at === null ? { type: 'usage', contextTokens: tokens } : { type: 'usage', contextTokens: tokens, atMessageId: at });
  }

  private turnEnd(timestamp: number | undefined, out: TranscriptEvent[]): void {
    out.push(timestamp === undefined ? { type: 'turn-end' } : { type: 'turn-end', timestamp });
    this.turnOpen = false;
  }

  private userDrafts(value: JsonObject, message: JsonObject | undefined, timestamp: number | undefined): Draft[] {
    const content = message?.['content'];
    const isMeta = value['isMeta'] === true;
    const isSummary = value['isCompactSummary'] === true;
    const base = (text: string, blockIndex: number, imageCount = 0): Draft => {
      const summary = isSummary || text.trimStart().startsWith(SUMMARY_PREFIX);
      const injected = !summary && (isMeta || isInjectedClaudeText(text));
      return {
        blockIndex,
        message: {
          role: 'user',
          text,
          ...(injected ? { injected: true } : {}),
          ...(summary ? { isSummary: true } : {}),
          ...(imageCount > 0 ? { imageCount } : {}),
          ...(timestamp !== undefined ? { timestamp } : {}),
        },
      };
    };
    if (typeof content === 'string') return content.length > 0 ? [base(content, 0)] : [];
    const blocks = arr(content);
    if (!blocks) return [];
    const drafts: Draft[] = [];
    blocks.forEach((raw, i) => {
      const b = obj(raw);
      if (!b) return;
      const type = str(b['type']);
      if (type === 'text') {
        const text = str(b['text']) ?? '';
        if (text.length > 0) drafts.push(base(text, i));
      } else if (type === 'image' || type === 'document') {
        drafts.push(base('', i, 1));
      } else if (type === 'tool_result') {
        const callId = str(b['tool_use_id']);
        const { text, imageCount } = partsText(b['content']);
        const toolName = callId !== undefined ? this.callNames.get(callId) : undefined;
        drafts.push({
          blockIndex: i,
          message: {
            role: 'tool',
            text,
            ...(callId !== undefined ? { toolCallId: callId } : {}),
            ...(toolName !== undefined ? { toolName } : {}),
            ...(b['is_error'] === true ? { isError: true } : {}),
            ...(imageCount > 0 ? { imageCount } : {}),
            ...(timestamp !== undefined ? { timestamp } : {}),
          },
        });
      }
    });
    return drafts;
  }

  private assistantDrafts(value: JsonObject, message: JsonObject | undefined, timestamp: number | undefined): Draft[] {
    if (message === undefined || value['isApiErrorMessage'] === true) return [];
    const rawModel = str(message['model']);
    if (rawModel === '<synthetic>') return [];
    const model = rawModel;
    const common = { role: 'assistant' as const, ...(timestamp !== undefined ? { timestamp } : {}), ...(model !== undefined ? { model } : {}) };
    const content = message['content'];
    if (typeof content === 'string') return content.length > 0 ? [{ blockIndex: 0, message: { ...common, text: content } }] : [];
    const blocks = arr(content);
    if (!blocks) return [];
    const drafts: Draft[] = [];
    blocks.forEach((raw, i) => {
      const b = obj(raw);
      if (!b) return;
      const type = str(b['type']);
      if (type === 'text') {
        const text = str(b['text']) ?? '';
        if (text.length > 0) drafts.push({ blockIndex: i, message: { ...common, text } });
      } else if (type === 'thinking') {
        const reasoning = str(b['thinking']) ?? '';
        if (reasoning.length > 0) drafts.push({ blockIndex: i, message: { ...common, text: '', reasoning } });
      } else if (type === 'tool_use' || type === 'server_tool_use') {
        const id = str(b['id']);
        const name = str(b['name']) ?? 'unknown';
        if (id === undefined) return;
        this.callNames.set(id, name);
        const call: ToolCall = { id, name, arguments: argsString(b['input']) };
        drafts.push({ blockIndex: i, message: { ...common, text: '', toolCalls: [call] } });
      } else if (type === 'image') {
        drafts.push({ blockIndex: i, message: { ...common, text: '', imageCount: 1 } });
      }
    });
    return drafts;
  }

  private onSystem(value: JsonObject, out: TranscriptEvent[]): void {
    const subtype = str(value['subtype']);
    if (subtype === 'compact_boundary') {
      out.push({ type: 'reset', reason: 'compact_boundary' });
      this.lastMessageId = null;
      this.pending.clear();
      this.turnOpen = false;
      const uuid = str(value['uuid']);
      if (uuid !== undefined) this.chainAt.set(uuid, null);
      return;
    }
    this.linkOnly(value);
    if (subtype === 'turn_duration' && this.turnOpen) this.turnEnd(parseTimestamp(value['timestamp']), out);
  }

  private onAttachment(value: JsonObject, offset: number, out: TranscriptEvent[]): void {
    const att = obj(value['attachment']);
    const attType = str(att?.['type']);
    if (att === undefined || attType === undefined || !CONTEXT_ATTACHMENTS.has(attType)) {
      this.linkOnly(value);
      return;
    }
    const content = att['content'];
    let text: string;
    if (typeof content === 'string') text = content;
    else if (Array.isArray(content) && content.every((c) => typeof c === 'string')) text = content.join('\n');
    else text = argsString(content);
    if (text.length === 0) {
      this.linkOnly(value);
      return;
    }
    this.branchCheck(value, false, out);
    const timestamp = parseTimestamp(value['timestamp']);
    const id = str(value['uuid']) ?? `L${offset}`;
    this.emit({ id, role: 'user', text, injected: true, ...(timestamp !== undefined ? { timestamp } : {}) }, out);
    const uuid = str(value['uuid']);
    if (uuid !== undefined) this.chainAt.set(uuid, this.lastMessageId);
  }
}

/** A fresh, stateful Claude Code adapter for one file. */
export function createClaudeCodeAdapter(): TranscriptAdapter {
  return new ClaudeCodeAdapter();
}
