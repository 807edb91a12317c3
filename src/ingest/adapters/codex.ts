/**
 * OpenAI Codex CLI rollouts (`~/.codex/sessions/YYYY/MM/DD/rollout-*.jsonl`), both the
 * enveloped format (`{timestamp,type,payload}`) and the legacy one (first line
 * `{id,timestamp,instructions,git}`, then bare ResponseItems and `{record_type:"state"}`).
 *
 * One family only: the model-facing `response_item`s are rendered (user, assistant,
 * developer, tool calls and outputs, reasoning summaries); their UI mirrors
 * `event_msg/user_message|agent_message|agent_reasoning` are ignored, so nothing is doubled.
 * The first user items carrying `<environment_context>` / AGENTS.md / `<user_instructions>`
 * are marked injected. Message ids are `L<byteOffset>` (`L<byteOffset>#<i>` inside a
 * `compacted` line's replacement history).
 */
import type { TranscriptAdapter } from '../types.js';
import type { Message, ToolCall, TranscriptEvent } from '../../model/messages.js';
import {
  argsString,
  arr,
  isObject,
  jsonExitCode,
  jsonResultFailed,
  num,
  obj,
  parseTimestamp,
  partsText,
  str,
  textResultFailed,
  tryJson,
  type JsonObject,
  withSourceOffset,
} from './common.js';

const INJECTED_USER_PREFIXES = [
  '<environment_context>',
  '<user_instructions>',
  '# AGENTS.md instructions',
  '<INSTRUCTIONS>',
  '<user_shell_command>',
  '<turn_aborted>',
];
const INSTRUCTION_PREFIXES = ['<user_instructions>', '# AGENTS.md instructions', '<INSTRUCTIONS>'];

/** Items that carry no context we can count (git undo points, encrypted compaction blobs). */
const SILENT_ITEMS = new Set(['ghost_snapshot', 'compaction', 'compaction_summary']);

interface ToolOutput {
  text: string;
  isError: boolean;
  imageCount: number;
  exitCode?: number;
}

/** Decode a Codex tool output: JSON `{output, metadata}`, an MCP content array, or plain text. */
export function decodeCodexOutput(output: unknown): ToolOutput {
  if (typeof output === 'string') {
    const j = tryJson(output);
    if (isObject(j) && typeof j['output'] === 'string') {
      const exitCode = jsonExitCode(j);
      return { text: j['output'], isError: jsonResultFailed(j), imageCount: 0, ...(exitCode !== undefined ? { exitCode } : {}) };
    }
    if (Array.isArray(j)) {
      const { text, imageCount } = partsText(j);
      return { text, isError: textResultFailed(text), imageCount };
    }
    return { text: output, isError: textResultFailed(output), imageCount: 0 };
  }
  if (Array.isArray(output)) {
    const { text, imageCount } = partsText(output);
    return { text, isError: textResultFailed(text), imageCount };
  }
  const o = obj(output);
  if (o) {
    const { text, imageCount } = partsText(o['content']);
    return { text, isError: o['success'] === false || textResultFailed(text), imageCount };
  }
  return { text: '', isError: false, imageCount: 0 };
}

class CodexAdapter implements TranscriptAdapter {
  readonly format = 'codex' as const;

  private readonly callNames = new Map<string, string>();
  private lastMessageId: string | undefined;
  private lastUsageKey: string | undefined;
  /** Tokens of the last token_usage_record not yet matched by its token_count twin. */
  private recordedTokens: number | undefined;
  private model: string | undefined;
  private contextWindow: number | undefined;
  private turnOpen = false;
  /** User instructions from the session header, emitted only if no item carries them. */
  private pendingInstructions: { text: string; id: string; sourceOffset: number } | undefined;

  parseLine(value: JsonObject, sourceOffset: number): TranscriptEvent[] {
    return withSourceOffset(this.parse(value, sourceOffset), sourceOffset);
  }

  private parse(value: JsonObject, sourceOffset: number): TranscriptEvent[] {
    const out: TranscriptEvent[] = [];
    const type = str(value['type']);
    const payload = obj(value['payload']);
    if (type !== undefined && payload !== undefined) {
      this.onEnvelope(type, payload, parseTimestamp(value['timestamp']), sourceOffset, out);
      return out;
    }
    if (value['record_type'] !== undefined) return out; // legacy `{record_type:"state"}`
    if (type === undefined && typeof value['id'] === 'string' && ('instructions' in value || 'git' in value)) {
      this.onSessionMeta(value, sourceOffset, out);
      return out;
    }
    if (type !== undefined) {
      this.onItem(value, `L${sourceOffset}`, parseTimestamp(value['timestamp']), out);
      return out;
    }
    out.push({ type: 'unknown', lineType: 'untyped' });
    return out;
  }

  private onEnvelope(type: string, payload: JsonObject, timestamp: number | undefined, offset: number, out: TranscriptEvent[]): void {
    switch (type) {
      case 'session_meta':
        this.onSessionMeta(payload, offset, out);
        return;
      case 'turn_context': {
        const model = str(payload['model']);
        if (model !== undefined && model !== this.model) {
          this.model = model;
          out.push({ type: 'meta', meta: { model } });
        }
        return;
      }
      case 'response_item':
        this.onItem(payload, `L${offset}`, timestamp, out);
        return;
      case 'event_msg':
        this.onEvent(payload, timestamp, out);
        return;
      case 'compacted':
        this.onCompacted(payload, offset, timestamp, out);
        return;
      case 'token_usage_record':
        this.onUsageRecord(payload, out);
        return;
      default:
        out.push({ type: 'unknown', lineType: type });
    }
  }

  private onSessionMeta(p: JsonObject, offset: number, out: TranscriptEvent[]): void {
    const git = obj(p['git']);
    const sessionId = str(p['id']);
    const cwd = str(p['cwd']);
    const repo = str(git?.['repository_url']);
    const model = str(p['model']);
    if (model !== undefined) this.model = model;
    out.push({
      type: 'meta',
      meta: {
        ...(sessionId !== undefined ? { sessionId } : {}),
        ...(cwd !== undefined ? { cwd } : {}),
        ...(repo !== undefined ? { repo } : {}),
        ...(model !== undefined ? { model } : {}),
      },
    });
    const base = p['base_instructions'];
    const baseText = typeof base === 'string' ? base : str(obj(base)?.['text']);
    const timestamp = parseTimestamp(p['timestamp']);
    if (baseText !== undefined && baseText.trim().length > 0) {
      this.emit({ id: `L${offset}`, role: 'system', text: baseText, ...(timestamp !== undefined ? { timestamp } : {}) }, out);
    }
    const instructions = str(p['instructions']);
    if (instructions !== undefined && instructions.trim().length > 0) {
      this.pendingInstructions = { text: instructions, id: `L${offset}#instructions`, sourceOffset: offset };
    }
  }

  /** Header instructions not echoed by an injected item: emit them before the first real item. */
  private settleInstructions(out: TranscriptEvent[]): void {
    const p = this.pendingInstructions;
    if (p === undefined) return;
    this.pendingInstructions = undefined;
    this.emit({ id: p.id, role: 'system', text: p.text, injected: true, sourceOffset: p.sourceOffset }, out);
  }

  private emit(message: Message, out: TranscriptEvent[]): void {
    out.push({ type: 'message', message });
    this.lastMessageId = message.id;
    this.turnOpen = true;
  }

  private onItem(item: JsonObject, id: string, timestamp: number | undefined, out: TranscriptEvent[], summaryText?: string): void {
    const type = str(item['type']) ?? 'untyped';
    const ts = timestamp !== undefined ? { timestamp } : {};
    switch (type) {
      case 'message': {
        const role = str(item['role']);
        const { text, imageCount } = partsText(item['content']);
        const images = imageCount > 0 ? { imageCount } : {};
        if (role === 'user') {
          const t = text.trimStart();
          const injected = INJECTED_USER_PREFIXES.some((p) => t.startsWith(p));
          const isSummary = summaryText !== undefined && summaryText.length > 0 && text.includes(summaryText);
          if (injected && INSTRUCTION_PREFIXES.some((p) => t.startsWith(p))) this.pendingInstructions = undefined;
          if (!injected) this.settleInstructions(out);
          this.emit({ id, role: 'user', text, ...(injected ? { injected: true } : {}), ...(isSummary ? { isSummary: true } : {}), ...images, ...ts }, out);
        } else if (role === 'assistant') {
          this.settleInstructions(out);
          this.emit({ id, role: 'assistant', text, ...images, ...ts, ...(this.model !== undefined ? { model: this.model } : {}) }, out);
        } else if (role === 'developer' || role === 'system') {
          this.emit({ id, role: 'system', text, ...images, ...ts }, out);
        } else {
          out.push({ type: 'unknown', lineType: `message:${role ?? 'none'}` });
        }
        return;
      }
      case 'reasoning': {
        this.settleInstructions(out);
        let reasoning = partsText(item['summary']).text;
        if (reasoning.length === 0) reasoning = partsText(item['content']).text;
        if (reasoning.length > 0) this.emit({ id, role: 'assistant', text: '', reasoning, ...ts }, out);
        return;
      }
      case 'function_call':
      case 'custom_tool_call':
      case 'local_shell_call': {
        this.settleInstructions(out);
        const callId = str(item['call_id']) ?? str(item['id']) ?? id;
        const name = type === 'local_shell_call' ? 'local_shell' : (str(item['name']) ?? 'unknown');
        const args = type === 'function_call' ? item['arguments'] : type === 'custom_tool_call' ? item['input'] : item['action'];
        this.callNames.set(callId, name);
        const call: ToolCall = { id: callId, name, arguments: argsString(args) };
        this.emit({ id, role: 'assistant', text: '', toolCalls: [call], ...ts }, out);
        return;
      }
      case 'function_call_output':
      case 'custom_tool_call_output': {
        const callId = str(item['call_id']);
        const { text, isError, imageCount, exitCode } = decodeCodexOutput(item['output']);
        const toolName = callId !== undefined ? this.callNames.get(callId) : undefined;
        this.emit(
          {
            id,
            role: 'tool',
            text,
            ...(callId !== undefined ? { toolCallId: callId } : {}),
            ...(toolName !== undefined ? { toolName } : {}),
            ...(isError ? { isError: true } : {}),
            ...(exitCode !== undefined ? { exitCode } : {}),
            ...(imageCount > 0 ? { imageCount } : {}),
            ...ts,
          },
          out,
        );
        return;
      }
      case 'web_search_call': {
        const action = obj(item['action']);
        const query = str(action?.['query']);
        if (query !== undefined) this.emit({ id, role: 'assistant', text: `[web_search] ${query}`, ...ts }, out);
        return;
      }
      default:
        if (!SILENT_ITEMS.has(type)) out.push({ type: 'unknown', lineType: `response_item:${type}` });
    }
  }

  /**
   * Codex 0.169+ writes `token_usage_record` right after the response it measures, before the
   * tool output that follows; its `event_msg/token_count` twin comes after that output. The
   * record is the correctly placed report (our count then matches what was sent), so it is
   * used, and the token_count carrying the same figure is skipped.
   */
  private onUsageRecord(p: JsonObject, out: TranscriptEvent[]): void {
    const usage = obj(p['usage']);
    if (usage === undefined) return;
    const tokens = (num(usage['input_tokens']) ?? 0) + (num(usage['output_tokens']) ?? 0);
    if (tokens <= 0) return;
    this.recordedTokens = tokens;
    out.push(this.lastMessageId !== undefined ? { type: 'usage', contextTokens: tokens, atMessageId: this.lastMessageId } : { type: 'usage', contextTokens: tokens });
  }

  private onEvent(p: JsonObject, timestamp: number | undefined, out: TranscriptEvent[]): void {
    const type = str(p['type']);
    if (type === 'token_count') {
      const info = obj(p['info']);
      if (info === undefined) return;
      this.contextWindowMeta(num(info['model_context_window']), out);
      const last = obj(info['last_token_usage']);
      if (last === undefined) return;
      const key = JSON.stringify([info['total_token_usage'] ?? null, last]);
      if (key === this.lastUsageKey) return;
      this.lastUsageKey = key;
      const tokens = (num(last['input_tokens']) ?? 0) + (num(last['output_tokens']) ?? 0);
      if (tokens <= 0) return;
      const recorded = this.recordedTokens;
      this.recordedTokens = undefined;
      if (recorded === tokens) return;
      out.push(this.lastMessageId !== undefined ? { type: 'usage', contextTokens: tokens, atMessageId: this.lastMessageId } : { type: 'usage', contextTokens: tokens });
    } else if (type === 'task_started') {
      this.contextWindowMeta(num(p['model_context_window']), out);
    } else if (type === 'task_complete' || type === 'turn_aborted') {
      if (!this.turnOpen) return;
      this.turnOpen = false;
      out.push(timestamp !== undefined ? { type: 'turn-end', timestamp } : { type: 'turn-end' });
    }
    // user_message / agent_message / agent_reasoning mirror response items; other events are UI-only.
  }

  private contextWindowMeta(window: number | undefined, out: TranscriptEvent[]): void {
    if (window === undefined || window <= 0 || window === this.contextWindow) return;
    this.contextWindow = window;
    out.push({ type: 'meta', meta: { contextWindow: window } });
  }

  private onCompacted(p: JsonObject, offset: number, timestamp: number | undefined, out: TranscriptEvent[]): void {
    out.push({ type: 'reset', reason: 'compacted' });
    this.turnOpen = false;
    this.pendingInstructions = undefined;
    this.lastMessageId = undefined;
    const summary = (str(p['message']) ?? '').trim();
    const history = arr(p['replacement_history']) ?? [];
    let summarySeen = false;
    history.forEach((raw, i) => {
      const item = obj(raw);
      if (!item) return;
      const before = out.length;
      this.onItem(item, `L${offset}#${i}`, timestamp, out, summary);
      for (let k = before; k < out.length; k++) {
        const e = out[k];
        if (e?.type === 'message' && e.message.isSummary === true) summarySeen = true;
      }
    });
    if (summary.length > 0 && !summarySeen) {
      this.emit({ id: `L${offset}`, role: 'user', text: summary, isSummary: true, ...(timestamp !== undefined ? { timestamp } : {}) }, out);
    }
  }
}

/** A fresh, stateful Codex rollout adapter for one file (enveloped and legacy shapes). */
export function createCodexAdapter(): TranscriptAdapter {
  return new CodexAdapter();
}
