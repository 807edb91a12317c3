/**
 * One hook event in, the agent's hook answer out. Claude Code and Codex CLI share the answer
 * shape (`{"hookSpecificOutput":{"hookEventName","additionalContext"}}`) for the events that can
 * add context; other events get no output.
 */
import type { HookEvent } from './hook-event.js';
import { sessionIdForFile } from '../ingest/session-id.js';
import { bootstrapContext, compactionRecovery, endSession, recordCompaction, type HookDeps } from './hooks.js';

export const AGENTS = ['claude-code', 'codex'] as const;
export type AgentName = (typeof AGENTS)[number];

/** What a hook prints on stdout. */
export interface HookAnswer {
  readonly hookSpecificOutput: { readonly hookEventName: string; readonly additionalContext: string };
}

function withContext(eventName: string, text: string | undefined): HookAnswer | undefined {
  return text ? { hookSpecificOutput: { hookEventName: eventName, additionalContext: text } } : undefined;
}

/** The session id the daemon gives this agent's transcript (its file name). */
function daemonSessionId(event: HookEvent): string {
  return event.transcriptPath ? sessionIdForFile(event.transcriptPath) : event.sessionId;
}

/** Answer one hook event; undefined means "print nothing". */
export async function answerHook(event: HookEvent, deps: HookDeps): Promise<HookAnswer | undefined> {
  switch (event.hookEventName) {
    case 'UserPromptSubmit': {
      const stashed = deps.takeStash(event.sessionId);
      const boot = await bootstrapContext(event, deps);
      return withContext(event.hookEventName, [stashed, boot].filter(Boolean).join('\n\n') || undefined);
    }
    case 'SessionStart':
      return event.source === 'compact' ? withContext(event.hookEventName, await compactionRecovery(event, deps)) : undefined;
    case 'PostToolUse': {
      // The first event after PostCompact that may add context to the next request.
      const stashed = deps.takeStash(event.sessionId);
      return withContext(event.hookEventName, stashed);
    }
    case 'PostCompact':
      await recordCompaction(event, deps);
      return undefined;
    case 'SessionEnd':
      await endSession(event, daemonSessionId(event), deps);
      return undefined;
    default:
      deps.note('hook event not handled', { event: event.hookEventName });
      return undefined;
  }
}
