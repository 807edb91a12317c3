/**
 * Text classifiers behind section kinds and priorities. Pure functions over strings.
 */

/**
 * Words of short user replies that carry no new instruction ("ok", "thanks", "continue",
 * "excellent work, thank you!", "nothing else, we are done").
 */
const ACK_WORDS = new Set(
  (
    'ok okay k kk thanks thank thx ty cheers continue go on ahead carry keep going proceed yes yep yeah yup y no nope n ' +
    'sure great cool nice perfect good done lgtm sounds do it next please excellent awesome amazing wonderful brilliant ' +
    'job work well fine alright right got that thats s it all for now nothing else we are were is looks love very much ' +
    'so lot a you again'
  ).split(' '),
);
/** Longest reply (in characters) still treated as an acknowledgement. */
export const ACK_MAX_CHARS = 60;

/** True for a short acknowledgement that does not start a new goal. */
export function isAcknowledgement(text: string): boolean {
  const t = text.trim();
  if (t.length === 0 || t.length > ACK_MAX_CHARS) return false;
  const ws = t.toLowerCase().split(/[^a-z]+/).filter((w) => w.length > 0);
  return ws.length > 0 && ws.every((w) => ACK_WORDS.has(w));
}

/** Agent-written compaction notes that some adapters may not flag (hermes). */
export function looksLikeAgentSummary(text: string): boolean {
  return text.startsWith('[CONTEXT COMPACTION') || text.startsWith('This session is being continued from a previous conversation');
}

/** A compaction summary of earlier context (flagged `isSummary`, or a note an adapter did not flag): not the user's words. */
export function isAgentSummary(m: { readonly text: string; readonly isSummary?: boolean }): boolean {
  return m.isSummary === true || looksLikeAgentSummary(m.text);
}

/** A note's tag, `[CONTEXT COMPACTION — REFERENCE ONLY]`. */
const NOTE_TAG = /^\s*\[CONTEXT COMPACTION[^\]\n]*\]\s*/;
/**
 * A sentence in which a compaction note speaks to its reader about itself: "Do NOT answer
 * questions or fulfill requests mentioned in this summary; they were already addressed",
 * "treat it as background reference, NOT as active instructions", "The conversation is
 * summarized below". Only a demonstrative names the note itself: "the summary" or "the
 * compaction" is as often the work it reports ("Fixed the compaction bug in planner.ts").
 */
const NOTE_SELF_REFERENCE =
  /\b(?:this|that) (?:summary|handoff|compaction)\b|\bsummari[sz]ed below\b|\bsummary below\b|\breference only\b|\bbackground reference\b|\bactive instructions?\b|\balready (?:been )?addressed\b|\bprevious (?:conversation|context window)\b/i;

/**
 * The facts of a compaction note without what it tells its reader about itself: quoted in
 * another summary, "Do NOT answer … in this summary" would point at that summary instead.
 */
export function compactionNoteBody(text: string): string {
  return text
    .replace(NOTE_TAG, '')
    .split('\n')
    .map((line) =>
      line
        .split(/(?<=[.!?;])\s+/)
        .filter((s) => !NOTE_SELF_REFERENCE.test(s))
        .join(' '),
    )
    .join('\n');
}

/**
 * Assistant text that states a decision, plan or conclusion. A bare "I'll" is not enough
 * (agents narrate "I'll read the file", "I'll update the todo" constantly): it must be followed
 * by a verb of choice (use, go with, switch, replace, adopt, keep, drop, avoid, …).
 */
const DECISION =
  /\b(?:i(?:['’]ve| have)? decided|we(?:['’]ve| have)? decided|decision:|the (?:fix|solution|problem|issue|cause|bug|answer|culprit) (?:is|was)|root cause|in conclusion|to summari[sz]e|conclusion:|summary:|plan:|the plan is|here['’]?s (?:the|my) plan|going forward|from now on|(?:i|we)(?:['’]ll| will| am going to| are going to) (?:use|go with|switch|replace|refactor|rewrite|migrate|adopt|stick with|proceed with|keep|drop|take|avoid|instead)\b)/i;

/** True when assistant text reads as a decision, plan or conclusion. */
export function isDecisionText(text: string): boolean {
  const head = text.length > 20_000 ? text.slice(0, 20_000) : text;
  return DECISION.test(head);
}

/**
 * A standing constraint, preference or convention the user states for the rest of the session:
 * a sentence that opens with a directive ("never …", "always …", "don't …", "make sure …",
 * "avoid …", "only …", "stick to …", "prefer …"), or that sets a rule ("you/we must …",
 * "must not", "from now on", "going forward", "as a rule", "I prefer", "our convention is",
 * "we use … for …"). Conversational mentions ("I always loved painting", "I don't know") are
 * not constraints: the directive must lead the sentence or be addressed as a rule.
 */
const CONSTRAINT_LEAD = /^(?:please\s+)?(?:never|always|don['’]t|do not|dont|make sure|ensure|avoid|only|stick (?:to|with)|prefer|keep (?:using|it|the|all|every)|use only|no more)\b/i;
const CONSTRAINT_RULE =
  /\b(?:(?:you|we) (?:must|mustn['’]t|should never|should always|need to always)|must not|must never|must always|from now on|going forward|as a rule|(?:i|we) (?:prefer|['’]d prefer|would prefer)|(?:our|the) (?:convention|rule|house style|coding style) is|we (?:always|never) (?:use|write|run|commit|put|name))\b/i;
/** A sentence labelled as a rule: "Constraint: …", "Rules: …", "Important: …". */
const CONSTRAINT_LABEL = /^(?:constraints?|rules?|requirements?|important|policy)\s*:\s*\S/i;
/** Longest user text (chars) still read whole for constraints. */
const CONSTRAINT_SCAN_CHARS = 20_000;

/** True when user text states a standing constraint, preference or convention. */
export function isStandingConstraint(text: string): boolean {
  const head = text.length > CONSTRAINT_SCAN_CHARS ? text.slice(0, CONSTRAINT_SCAN_CHARS) : text;
  if (CONSTRAINT_RULE.test(head)) return true;
  for (const s of head.split(/(?<=[.!?;])\s+|\n+/)) {
    const t = s.replace(/^\s*(?:[-*•]|\d+[.)])\s*/, '').trim();
    if (CONSTRAINT_LABEL.test(t) || CONSTRAINT_LEAD.test(t)) return true;
  }
  return false;
}
