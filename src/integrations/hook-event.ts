/**
 * The hook event an agent writes on a hook's stdin. Claude Code and Codex CLI send the same
 * envelope (`session_id`, `transcript_path`, `cwd`, `hook_event_name`) plus per-event fields.
 *
 * Validated with plain guards, not zod: a hook is a fresh process on the agent's critical
 * path, and loading zod costs more start-up time than the whole check.
 */
import { ContextdError, ErrorCode } from '../util/errors.js';

export interface HookEvent {
  readonly hookEventName: string;
  readonly sessionId: string;
  readonly transcriptPath?: string;
  readonly cwd?: string;
  /** UserPromptSubmit: the prompt. */
  readonly prompt?: string;
  /** SessionStart: startup | resume | clear | compact. */
  readonly source?: string;
  /** SessionEnd: why the session ended. */
  readonly reason?: string;
  /** PreCompact / PostCompact: manual | auto. */
  readonly trigger?: string;
  /** PostCompact (Claude Code 2.1.x): the summary the agent's own compaction produced. */
  readonly compactSummary?: string;
}

/** Largest hook input read from stdin. */
export const MAX_HOOK_INPUT_BYTES = 4 * 1024 * 1024;

function optString(o: Record<string, unknown>, key: string): string | undefined {
  const v = o[key];
  return typeof v === 'string' ? v : undefined;
}

/** Parse one hook event; throws HOOK_INPUT_INVALID naming what is wrong. */
export function parseHookEvent(text: string): HookEvent {
  let v: unknown;
  try {
    v = JSON.parse(text);
  } catch (err) {
    throw new ContextdError(ErrorCode.HOOK_INPUT_INVALID, `hook input is not JSON: ${(err as Error).message}`);
  }
  if (typeof v !== 'object' || v === null || Array.isArray(v)) throw new ContextdError(ErrorCode.HOOK_INPUT_INVALID, 'hook input is not a JSON object');
  const o = v as Record<string, unknown>;
  const hookEventName = optString(o, 'hook_event_name');
  const sessionId = optString(o, 'session_id');
  if (!hookEventName) throw new ContextdError(ErrorCode.HOOK_INPUT_INVALID, 'hook input has no hook_event_name');
  if (!sessionId) throw new ContextdError(ErrorCode.HOOK_INPUT_INVALID, 'hook input has no session_id');
  const pick = (key: string): Record<string, string> => {
    const s = optString(o, key);
    return s === undefined ? {} : { [key]: s };
  };
  const t = pick('transcript_path');
  const summary = optString(o, 'compact_summary');
  return {
    hookEventName,
    sessionId,
    ...(t['transcript_path'] ? { transcriptPath: t['transcript_path'] } : {}),
    ...pick('cwd'),
    ...pick('prompt'),
    ...pick('source'),
    ...pick('reason'),
    ...pick('trigger'),
    ...(summary !== undefined ? { compactSummary: summary } : {}),
  };
}
