/**
 * The normalized message stream every transcript adapter produces and the model consumes.
 *
 * These types are the contract between ingest (which turns raw JSONL lines into events)
 * and everything downstream (model, compact, harvest). They live in model/ so that the
 * pure core depends on nothing else; ingest imports them from here.
 */

export type Role = 'system' | 'user' | 'assistant' | 'tool';

/** A tool invocation requested by the assistant. */
export interface ToolCall {
  /** Id used to pair the call with its result (Claude tool_use.id, Codex call_id, OpenAI tool_calls[].id). */
  readonly id: string;
  readonly name: string;
  /** Arguments as the agent wrote them (usually a JSON string). */
  readonly arguments: string;
}

/** One normalized message. A Claude content block or a Codex response item becomes one message. */
export interface Message {
  /** Stable id within the session (Claude uuid, Codex call id / line offset, openai line offset). */
  readonly id: string;
  readonly role: Role;
  /** Plain text content (parts joined with newlines). Opaque blobs are not included. */
  readonly text: string;
  /** Hidden reasoning / thinking text (Claude thinking, Codex reasoning summary, hermes `reasoning`). */
  readonly reasoning?: string;
  /** Tool calls requested by this (assistant) message. */
  readonly toolCalls?: readonly ToolCall[];
  /** For role 'tool': the id of the call this message answers. */
  readonly toolCallId?: string;
  /** For role 'tool': the name of the tool, when known. */
  readonly toolName?: string;
  /** For role 'tool': the tool reported failure (is_error, non-zero exit code, `"error"` payload). */
  readonly isError?: boolean;
  /** For role 'tool': the exit status the harness recorded for a command (Codex/hermes `exit_code`). */
  readonly exitCode?: number;
  /**
   * Harness-injected content that is not a real prompt (Claude isMeta/<system-reminder>,
   * Codex <environment_context> / AGENTS.md, command output echoes).
   */
  readonly injected?: boolean;
  /** A compaction summary written by the agent itself (Claude isCompactSummary, hermes compaction note). */
  readonly isSummary?: boolean;
  /** Number of images / opaque binary parts; counted by a fixed token estimate, never tokenized. */
  readonly imageCount?: number;
  /** Epoch milliseconds, when the transcript has a timestamp. */
  readonly timestamp?: number;
  /** Model name found on this message, if any. */
  readonly model?: string;
  /** Byte offset of the source line in the file (for diagnostics). */
  readonly sourceOffset?: number;
  /** A contextd pointer summary: what its claim rests on (set on the summary message; compact/pointers.ts). */
  readonly pointer?: PointerBasis;
}

/**
 * What a contextd pointer summary's claim ("a later identical call returned the same output",
 * "the file was read again or edited later") rests on, kept with its summary message so that
 * later plans, a replay of the applied edits after a restart and a rebuild from the model's
 * messages all know it. Sections are named by the ids of their messages: section ids are
 * renumbered by a rebuild.
 */
export interface PointerBasis {
  /** The summary's edit reason (`redundant-tool-output`, `stale-read`). */
  readonly reason: string;
  /** A redundant output's summary that lists lines its newer output lacks (`except`). */
  readonly partial?: boolean;
  /** The sections in view its claim rests on, each by its messages' ids. */
  readonly reliesOn: readonly (readonly string[])[];
  /**
   * The sections it replaced, each by its messages' ids: an earlier pointer summary resting on
   * one of them rests, through this one, on its `reliesOn` (when the claim carries on).
   */
  readonly replaced: readonly (readonly string[])[];
}

/**
 * What a message says, as text: role, text, reasoning, tool names and arguments, result
 * flags, images — never its ids (message id, tool call ids), timestamp, model or source
 * offset. Two messages with equal keys say the same thing, whatever ids a transcript or a
 * request gave them; the one basis for content identity (harvest's transcript hash, the
 * proxy's originals).
 */
export function messageContentKey(m: Message): string {
  return JSON.stringify([
    m.role,
    m.text,
    m.reasoning ?? '',
    (m.toolCalls ?? []).map((c) => [c.name, c.arguments]),
    m.toolName ?? '',
    m.isError === true,
    m.exitCode ?? null,
    m.injected === true,
    m.isSummary === true,
    m.imageCount ?? 0,
  ]);
}

/** Session-level facts found in a transcript. */
export interface SessionMeta {
  readonly sessionId?: string;
  readonly model?: string;
  readonly cwd?: string;
  readonly repo?: string;
  /** Context window reported by the agent itself (Codex model_context_window). */
  readonly contextWindow?: number;
}

export type TranscriptEvent =
  /** A message joins the live context. */
  | { readonly type: 'message'; readonly message: Message }
  /**
   * The agent reported how many tokens its context holds right now (Claude message.usage
   * input + cache tokens, deduplicated by message id; Codex last_token_usage.input_tokens).
   */
  | { readonly type: 'usage'; readonly contextTokens: number; readonly atMessageId?: string }
  /** Session facts (may arrive several times; later values win). */
  | { readonly type: 'meta'; readonly meta: SessionMeta }
  /**
   * Everything after message `keepThroughId` leaves the live context (a Claude rewind or
   * branch switch). `keepThroughId: null` clears the whole context.
   */
  | { readonly type: 'truncate'; readonly keepThroughId: string | null; readonly reason: string }
  /**
   * The agent compacted its own context: all earlier history is replaced by the messages
   * that follow (Codex `compacted`, Claude compact_boundary).
   */
  | { readonly type: 'reset'; readonly reason: string }
  /** A turn ended (Claude end_turn, Codex task_complete / turn_aborted, hermes finish_reason stop). */
  | { readonly type: 'turn-end'; readonly timestamp?: number }
  /** A line that parsed as JSON but whose type this adapter does not model. Counted, never fatal. */
  | { readonly type: 'unknown'; readonly lineType: string };
