/**
 * What an agent's own compaction summary lost. The messages before its compaction boundary
 * hold the facts that must survive (user instructions and constraints, the current goal,
 * paths read or edited, the last unresolved error); the summary after the boundary is checked
 * for each, and only the missing ones are returned, to be re-injected.
 */
import type { Message } from '../model/messages.js';
import { ensureSurvival, finalErrorLine, keyFacts, type KeyFacts } from '../compact/survival.js';
import { clip, contentTerms } from '../text/index.js';

export interface LostFacts {
  /** Lines naming the facts the summary lacks (`- constraints: …`), empty when nothing was lost. */
  readonly lines: string[];
  /** How many facts were checked. */
  readonly checked: number;
}

/** The last real user prompt among `messages` (harness-injected text skipped). */
export function lastUserPrompt(messages: readonly Message[]): string | undefined {
  for (let i = messages.length - 1; i >= 0; i--) {
    const m = messages[i];
    if (m && m.role === 'user' && !m.injected && !m.isSummary && m.text.trim().length > 0) return m.text;
  }
  return undefined;
}

/** The error of the last tool result, when that result failed (an error later fixed is not kept). */
function unresolvedError(messages: readonly Message[]): string[] {
  for (let i = messages.length - 1; i >= 0; i--) {
    const m = messages[i];
    if (m?.role !== 'tool') continue;
    const line = m.isError ? finalErrorLine(m) : undefined;
    return line ? [clip(line, 240)] : [];
  }
  return [];
}

/** Check `summary` against the facts of `before`; return what it lost. */
export function lostFacts(all: readonly Message[], summary: string): LostFacts {
  // Harness-injected text (skill listings, reminders) is re-sent by the agent itself.
  const before = all.filter((m) => !m.injected);
  const goal = lastUserPrompt(before);
  const found = keyFacts(before, goal ? [...contentTerms(goal)] : [], []);
  const facts: KeyFacts = { ...found, errors: unresolvedError(before), values: [] };
  const check = ensureSurvival(summary, facts);
  if (check.missing.length === 0) return { lines: [], checked: check.checked };
  const lines = check.content
    .slice(summary.length)
    .split('\n')
    .filter((l) => l.startsWith('- '));
  const taskLost = lines.findIndex((l) => l.startsWith('- task:'));
  if (taskLost >= 0 && goal) lines[taskLost] = `- goal (the user's last request): ${clip(goal.replace(/\s+/g, ' ').trim(), 400)}`;
  return { lines, checked: check.checked };
}
