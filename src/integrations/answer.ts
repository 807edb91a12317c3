/**
 * One hook event in, the agent's hook answer out. Claude Code and Codex CLI share the answer
 * shape (`{"hookSpecificOutput":{"hookEventName","additionalContext"}}`) for the events that can
 * add context; other events get no output.
 */
import { sessionIdForFile } from '../ingest/decoder.js';
import type { HookEvent } from './hook-event.js';
import { bootstrapContext, compactionRecovery, endSession, type HookDeps } from './hooks.js';

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
    case 'UserPromptSubmit':
      return withContext(event.hookEventName, await bootstrapContext(event, deps));
    case 'SessionStart':
      return event.source === 'compact' ? withContext(event.hookEventName, await compactionRecovery(event, deps)) : undefined;
    case 'SessionEnd':
      await endSession(event, daemonSessionId(event), deps);
      return undefined;
    default:
      deps.note('hook event not handled', { event: event.hookEventName });
      return undefined;
  }
}
