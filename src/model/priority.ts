/**
 * Kind, priority and anchor rules for a section.
 *
 * Kinds: a system message → `system`; a real user message → `user-instruction` (the latest is
 * the current goal); injected user content or a short acknowledgement ("ok", "continue") →
 * `user-message`; assistant text → `assistant-text`; assistant reasoning without text →
 * `reasoning`; a tool call with its result(s) → `tool-call`, or `error-trace` when a result
 * failed (isError) or reads like a stack trace; a result whose call is unknown → `tool-output`
 * (or `error-trace`); agent or contextd summaries → `summary`.
 *
 * Priorities:
 * - critical: system prompts, the current goal, user instructions stating a standing
 *   constraint, preference or convention (see `isStandingConstraint`);
 * - high: other user instructions (older requests and conversational turns); summaries;
 *   assistant text stating a decision / plan / conclusion (see `isDecisionText`) or closing a
 *   finished turn (its final answer);
 * - medium: other assistant text, reasoning, error traces, injected user content, pending calls,
 *   tool outputs not matching the low rule;
 * - low: acknowledgements; tool outputs (tool-call / tool-output) that are large
 *   (≥ LARGE_TOOL_OUTPUT_TOKENS), stale (ageTurns ≥ STALE_TOOL_OUTPUT_TURNS) or superseded (a
 *   newer output of the same tool is ≥ SUPERSEDED_SIMILARITY similar).
 *
 * Anchors (never compacted): system prompts; the current goal (the latest real user
 * instruction); standing constraints, preferences and conventions the user stated (no larger
 * than KEY_DECISION_MAX_TOKENS); key decisions — assistant text matching the decision patterns
 * and no larger than KEY_DECISION_MAX_TOKENS (a huge report is high priority but may be
 * summarized); pending tool calls (the agent is waiting on them). Older user requests and
 * conversational turns are not anchors: they are compacted (span summaries keep their facts)
 * when the budget needs it. Final answers that state no decision are high priority but not
 * anchors.
 */
import type { Priority, SectionKind } from './types.js';
import { hasPart, type SectionRec } from './fragments.js';

export const LARGE_TOOL_OUTPUT_TOKENS = 2_000;
export const STALE_TOOL_OUTPUT_TURNS = 3;
export const SUPERSEDED_SIMILARITY = 0.7;
export const KEY_DECISION_MAX_TOKENS = 2_000;

export function isPending(rec: SectionRec): boolean {
  return rec.base === 'call' && hasPart(rec, 'call') && !hasPart(rec, 'result');
}

export function kindOf(rec: SectionRec): SectionKind {
  switch (rec.base) {
    case 'system':
      return 'system';
    case 'instruction':
      return 'user-instruction';
    case 'user-message':
      return 'user-message';
    case 'assistant-text':
      return 'assistant-text';
    case 'reasoning':
      return 'reasoning';
    case 'summary':
      return 'summary';
    case 'call':
    case 'orphan': {
      if (rec.frags.some((f) => f.error)) return 'error-trace';
      return rec.base === 'call' && hasPart(rec, 'call') ? 'tool-call' : 'tool-output';
    }
  }
}

export interface PriorityInput {
  readonly kind: SectionKind;
  readonly pending: boolean;
  readonly tokens: number;
  readonly ageTurns: number;
  readonly maxSimilarityToNewer: number;
  readonly ack: boolean;
  readonly decision: boolean;
  readonly final: boolean;
  /** A user instruction stating a standing constraint / preference / convention. */
  readonly constraint: boolean;
  /** The current goal (latest user instruction). */
  readonly isGoal: boolean;
}

export function priorityOf(p: PriorityInput): Priority {
  switch (p.kind) {
    case 'system':
      return 'critical';
    case 'user-instruction':
      return p.isGoal || p.constraint ? 'critical' : 'high';
    case 'summary':
      return 'high';
    case 'assistant-text':
      return p.decision || p.final ? 'high' : 'medium';
    case 'reasoning':
    case 'error-trace':
      return 'medium';
    case 'user-message':
      return p.ack ? 'low' : 'medium';
    case 'tool-call':
    case 'tool-output':
      if (p.pending) return 'medium';
      if (
        p.tokens >= LARGE_TOOL_OUTPUT_TOKENS ||
        p.ageTurns >= STALE_TOOL_OUTPUT_TURNS ||
        p.maxSimilarityToNewer >= SUPERSEDED_SIMILARITY
      ) {
        return 'low';
      }
      return 'medium';
  }
}

export interface AnchorInput {
  readonly kind: SectionKind;
  readonly pending: boolean;
  readonly tokens: number;
  readonly decision: boolean;
  readonly constraint: boolean;
  readonly isGoal: boolean;
}

export function isAnchor(a: AnchorInput): boolean {
  if (a.kind === 'system' || a.pending || a.isGoal) return true;
  if (a.kind === 'user-instruction') return a.constraint && a.tokens <= KEY_DECISION_MAX_TOKENS;
  return a.kind === 'assistant-text' && a.decision && a.tokens <= KEY_DECISION_MAX_TOKENS;
}
