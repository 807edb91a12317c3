/**
 * State probes on real agent sessions: what the agent needs to know about where it stands
 * after compaction — the last edit (its file and its gist), the final test/build verdict, the
 * last error message — and two faithfulness counts over the compacted context: summaries that
 * name internal section ids (must be 0) and quoted recall handles that do not resolve in the
 * archive (must be 0).
 *
 * Probe rules (read from the original messages, not from any summary):
 *  - edit: the last tool call that wrote a file; kept when the context names its path and, if
 *    the edit changed identifiers, at least one of them (`editGists`);
 *  - verdict: the last verdict line (`Tests 245 passed (245)`, `3 failed, 10 passed`) of any
 *    tool result;
 *  - error: the last failed tool result's assertion, else its most specific error line, when
 *    that line appears verbatim in the result as the agent saw it (not clipped, not only inside
 *    JSON-escaped text), so that the uncompacted context always holds it.
 */
import type { Message } from '../model/messages.js';
import { editGists, toolOutcome, type OpenAIChatMessage } from '../compact/index.js';
import { toolAction } from '../model/toolargs.js';
import { verdictLines } from '../text/index.js';

export const STATE_PROBES = ['edit', 'verdict', 'error'] as const;
export type StateProbeKind = (typeof STATE_PROBES)[number];

/** One state probe: the strings that must all appear, and alternatives of which one must. */
export interface StateProbe {
  readonly kind: StateProbeKind;
  readonly text: string;
  readonly all: readonly string[];
  readonly anyOf: readonly string[];
}

/** The state probes of a session (at most one per kind). */
export function stateProbes(messages: readonly Message[]): StateProbe[] {
  const out: StateProbe[] = [];
  let edit: StateProbe | undefined;
  let verdict: StateProbe | undefined;
  let error: StateProbe | undefined;
  for (const m of messages) {
    for (const c of m.toolCalls ?? []) {
      const path = toolAction(c).writes.at(-1);
      if (path === undefined) continue;
      const gist = editGists(c).find((g) => g.path === path) ?? editGists(c).at(-1);
      edit = { kind: 'edit', text: path, all: [path], anyOf: gist?.identifiers ?? [] };
    }
    if (m.role !== 'tool') continue;
    const v = verdictLines(m.text)[0];
    if (v) verdict = { kind: 'verdict', text: v, all: [v], anyOf: [] };
    const o = toolOutcome(m);
    const said = o.failed ? (o.assertions[0] ?? o.error) : undefined;
    if (said && said.length >= 8 && m.text.includes(said)) error = { kind: 'error', text: said, all: [said], anyOf: [] };
  }
  for (const p of [edit, verdict, error]) if (p) out.push(p);
  return out;
}

/** True when the probe survives in `hay` (both normalized by `normalize`). */
export function stateProbeKept(p: StateProbe, hay: string, normalize: (s: string) => string): boolean {
  if (!p.all.every((s) => hay.includes(normalize(s)))) return false;
  return p.anyOf.length === 0 || p.anyOf.some((s) => hay.includes(normalize(s)));
}

const HANDLE_RE = /\bh_[0-9a-f]{16}\b/g;
const SUMMARY_RE = /\[contextd recall h_[0-9a-f]{16}\]|^\[CONTEXT COMPACTION\]/;
/** Section ids as the model names them (`s54`), standing alone (not `/s3/` in a URL or `s3.ts`). */
const INTERNAL_ID_RE = /(?<![\w/.#:-])s\d+\b(?![/.\w-])/;
const URL_RE = /\bhttps?:\/\/\S+/g;

/** Summaries (contextd's or the middle strategy's) in a compacted context that name an internal section id. */
export function summariesNamingIds(messages: readonly OpenAIChatMessage[]): number {
  return messages.filter((m) => SUMMARY_RE.test(m.content) && INTERNAL_ID_RE.test(m.content.replace(URL_RE, ' '))).length;
}

/** Every recall handle quoted in a compacted context, deduplicated. */
export function quotedHandles(messages: readonly OpenAIChatMessage[]): string[] {
  return [...new Set(messages.flatMap((m) => m.content.match(HANDLE_RE) ?? []))];
}
