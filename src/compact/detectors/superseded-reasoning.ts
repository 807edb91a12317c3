/**
 * `superseded-reasoning`: a path explored then abandoned. When an assistant turn says
 * "that didn't work / instead / a different approach …", the reasoning, text and tool calls
 * since the last user message (or the previous pivot) become a candidate; the summary keeps
 * their conclusion.
 */
import type { Message } from '../../model/messages.js';
import type { Section } from '../../model/types.js';
import type { Candidate, Detector, DetectorContext } from '../types.js';
import { memoList } from '../memo.js';
import { isCompactable, memoMessages } from './util.js';

/** Phrases that abandon the path explored so far. */
export const PIVOT_RE =
  /\b(?:that|this|it) (?:didn't|did not|doesn't|does not|won't|will not) work|\b(?:didn't|did not|doesn't) (?:work|help|fix)|\bnot working\b|\b(?:that|this) (?:failed|approach failed)|\binstead\b|\blet(?: me|'s|s) try (?:a different|another|something else|again)|\b(?:a )?different approach\b|\banother approach\b|\bwrong approach\b|\bscratch that\b|\bdead end\b|\b(?:wasn't|isn't|was not|is not|not) the (?:issue|problem|cause|right)\b|\bon second thought\b|\bgive up on\b|\babandon\b/i;

const EXPLORATION_KINDS = new Set(['assistant-text', 'reasoning', 'tool-call', 'tool-output', 'error-trace']);
const USER_KINDS = new Set(['user-instruction', 'user-message', 'system', 'summary']);

/** The pivot phrase the assistant messages of a section say, if any (memoized per message list). */
function pivotOf(msgs: readonly Message[]): string | null {
  return memoList(msgs, 'pivot', (ms) => {
    const said = ms
      .filter((m) => m.role === 'assistant')
      .map((m) => `${m.reasoning ?? ''}\n${m.text}`)
      .join('\n');
    return said.length > 0 ? (PIVOT_RE.exec(said)?.[0] ?? null) : null;
  });
}

export const supersededReasoning: Detector = {
  name: 'superseded-reasoning',
  detect(ctx: DetectorContext): Candidate[] {
    const msgsOf = memoMessages(ctx);
    const out: Candidate[] = [];
    let run: Section[] = [];
    for (const s of ctx.sections) {
      if (USER_KINDS.has(s.kind)) {
        run = [];
        continue;
      }
      const pivot = s.kind === 'assistant-text' || s.kind === 'reasoning' || s.kind === 'tool-call' ? pivotOf(msgsOf(s)) : null;
      if (pivot !== null && run.length > 0) {
        const ids = run.filter((r) => isCompactable(r) && EXPLORATION_KINDS.has(r.kind)).map((r) => r.id);
        const tokens = run.reduce((n, r) => n + r.tokens, 0);
        if (ids.length >= 2 || (ids.length === 1 && tokens >= 120)) {
          out.push({ sectionIds: ids, reason: 'superseded-reasoning', detail: { pivot: s.id, marker: pivot } });
        }
        run = [];
        continue;
      }
      run.push(s);
    }
    return out;
  },
};
