/**
 * User pattern candidates and knowledge items of one session. Pure and deterministic.
 *
 * User patterns are only CANDIDATES here: the store promotes one to a pattern when it recurs
 * in a second session. Knowledge items come from evidence in the session (confirmed
 * recoveries, successful verification commands, edited files, user questions); their
 * confidence grows with the number of sessions that produced the same text (store side).
 */
import type { Message } from '../model/messages.js';
import type { KnowledgeInput, UserPatternInput } from '../store/templates.js';
import type { Recovery } from './recovery.js';
import type { ToolExchange } from './toolcalls.js';
import { relativePath } from '../text/index.js';
import { isSyntheticText } from './synthetic.js';

/** The real requests of the user: not injected by the harness, not compaction summaries. */
export function userRequests(messages: readonly Message[]): string[] {
  return messages.filter((m) => m.role === 'user' && !m.injected && !m.isSummary && m.text.trim().length > 0 && !isSyntheticText(m.text)).map((m) => m.text.trim());
}

const CONSTRAINT = /\b(don't|do not|never|always|must|make sure|prefer|avoid|without|only use|no need to|instead of|keep it|stick to|remember to|use only)\b/i;

function sentences(text: string): string[] {
  return text
    .split(/(?<=[.!?])\s+|\n+/)
    .map((s) => s.replace(/\s+/g, ' ').trim())
    .filter((s) => s.length >= 8 && s.length <= 200);
}

function wordCount(s: string): number {
  return s.split(/\s+/).filter((w) => w.length > 0).length;
}

/** Style and constraint candidates of a session's requests. */
export function userPatternCandidates(requests: readonly string[]): UserPatternInput[] {
  const out = new Map<string, UserPatternInput>();
  const add = (p: UserPatternInput): void => {
    out.set(`${p.kind}:${p.text.toLowerCase()}`, p);
  };
  for (const r of requests.slice(0, 50)) {
    if (r.length > 4000) continue; // pasted logs and documents are not the user's voice
    for (const s of sentences(r)) if (CONSTRAINT.test(s) && wordCount(s) <= 30) add({ kind: 'constraint', text: s });
    const short = r.replace(/\s+/g, ' ').trim();
    if (wordCount(short) <= 8 && short.length <= 80 && !short.endsWith('?')) add({ kind: 'request', text: short.toLowerCase().replace(/[.!]+$/, '') });
  }
  if (requests.length > 0) {
    const words = requests.map(wordCount);
    const median = [...words].sort((a, b) => a - b)[Math.floor(words.length / 2)] ?? 0;
    add({ kind: 'style', text: median <= 15 ? 'requests are short and imperative (median ≤ 15 words)' : median <= 60 ? 'requests are a few sentences long' : 'requests are long, detailed specifications' });
    const questions = requests.filter((r) => r.trimEnd().endsWith('?')).length;
    if (questions / requests.length >= 0.5) add({ kind: 'style', text: 'mostly asks questions rather than giving instructions' });
    if (requests.some((r) => r.includes('```'))) add({ kind: 'style', text: 'pastes code or logs in fenced blocks' });
  }
  return [...out.values()];
}

const VERIFY = /\b(test|tests|pytest|jest|vitest|mocha|build|tsc|lint|eslint|typecheck|check|ruff|mypy|cargo (?:test|build|check|clippy)|go (?:test|build|vet))\b/;

/** Knowledge items of a session (text not yet redacted). */
export function extractKnowledge(input: {
  calls: readonly ToolExchange[];
  recoveries: readonly Recovery[];
  requests: readonly string[];
  cwd?: string | undefined;
}): KnowledgeInput[] {
  const out = new Map<string, KnowledgeInput>();
  const add = (k: KnowledgeInput): void => {
    if (!out.has(k.text)) out.set(k.text, k);
  };
  for (const r of input.recoveries) {
    if (r.tool.match(/^(bash|shell|exec_command|terminal)$/i)) add({ category: 'pitfall', text: `\`${r.target}\` can fail with "${r.signature}"; fixed by: ${r.fix}` });
    else add({ category: 'tool-quirk', text: `${r.tool} can fail with "${r.signature}"; fixed by: ${r.fix}` });
  }
  // Verification commands that succeeded, and the habit of running them after edits.
  let editedSince = false;
  const verified = new Set<string>();
  for (const c of input.calls) {
    if (c.rejected) continue;
    if (c.kind === 'edit' && !c.isError) editedSince = true;
    if (c.kind === 'shell' && !c.isError && VERIFY.test(c.salient)) {
      if (!verified.has(c.salient)) add({ category: 'fact', text: `\`${c.salient}\` runs successfully in this project` });
      verified.add(c.salient);
      if (editedSince) add({ category: 'pattern', text: `after editing, verify with \`${c.salient}\`` });
      editedSince = false;
    }
  }
  // The files a session changed most.
  const edits = new Map<string, number>();
  for (const c of input.calls) if (c.kind === 'edit' && !c.isError && !c.rejected && c.salient.length > 0) edits.set(relativePath(c.salient, input.cwd), (edits.get(relativePath(c.salient, input.cwd)) ?? 0) + 1);
  for (const [path] of [...edits.entries()].sort((a, b) => b[1] - a[1] || a[0].localeCompare(b[0])).slice(0, 5)) add({ category: 'fact', text: `\`${path}\` is changed in this kind of task` });
  // Questions the user asked (short ones: long pastes are not questions).
  let q = 0;
  for (const r of input.requests) {
    const t = r.replace(/\s+/g, ' ').trim();
    if (t.endsWith('?') && t.length >= 12 && t.length <= 200 && q < 3) {
      add({ category: 'question', text: t });
      q++;
    }
  }
  return [...out.values()];
}
