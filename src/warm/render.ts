/**
 * Rendering of selected templates into ONE compact system message, within a token budget.
 *
 * Lines are added in value order — knowledge (most confident first), recoveries, context
 * markers, examples, the user's recurring preferences — each section capped, each line
 * trimmed, until the next line would not fit. Tokens are counted with the caller's
 * TokenCounter line by line (exact: tiktoken never merges across a newline; the tests check
 * the sum against a count of the whole text), and the result is trimmed from the end until
 * `tokens ≤ budget`.
 */
import { MESSAGE_OVERHEAD_TOKENS, type TokenCounter } from '../model/tokens.js';
import type { KnowledgeItem, Template, TemplateItem, UserPattern } from '../store/templates.js';

export interface RenderInput {
  readonly templates: readonly Template[];
  readonly knowledge: readonly KnowledgeItem[];
  readonly patterns: readonly UserPattern[];
  readonly budgetTokens: number;
  readonly repo?: string | undefined;
}

export interface RenderedMessage {
  readonly role: 'system' | 'user' | 'assistant';
  readonly content: string;
}

export interface Rendered {
  readonly messages: RenderedMessage[];
  readonly tokens: number;
  /** Templates at least one rendered line came from. */
  readonly templateIds: string[];
}

const MAX_LINE_CHARS = 320;
const CAPS = { knowledge: 8, recoveries: 5, paths: 12, commands: 8, urls: 5, examples: 5, patterns: 4 } as const;

interface Line {
  readonly text: string;
  readonly from: readonly string[];
}

function clip(s: string, n = MAX_LINE_CHARS): string {
  const one = s.replace(/\s+/g, ' ').trim();
  return one.length > n ? `${one.slice(0, n - 1)}…` : one;
}

function byWeight(items: readonly { item: TemplateItem; rank: number; templateId: string }[]): { item: TemplateItem; templateId: string }[] {
  return [...items].sort((a, b) => b.item.confidence * (1 - 0.1 * a.rank) - a.item.confidence * (1 - 0.1 * b.rank) || b.item.evidence - a.item.evidence || a.item.id - b.item.id);
}

function exampleLine(item: TemplateItem): string {
  const data = (item.data ?? {}) as { call?: unknown; result?: unknown };
  const rawCall = typeof data.call === 'string' ? data.call.trim() : '';
  // Shell calls show their command line; other tools their target (the item text), not raw JSON.
  const call = rawCall.length > 0 && !rawCall.startsWith('{') ? `${item.category}: ${clip(rawCall, 140)}` : item.text;
  const result = typeof data.result === 'string' ? clip(data.result, 120) : '';
  return clip(`- ${call}${result ? ` → ${result}` : ''}`);
}

/** Candidate lines, grouped by section, best first. */
function sections(input: RenderInput): { title: string; lines: Line[] }[] {
  const all = input.templates.flatMap((t, rank) => t.items.map((item) => ({ item, rank, templateId: t.id })));
  const ofKind = (kind: TemplateItem['kind'], category?: string): { item: TemplateItem; templateId: string }[] =>
    byWeight(all.filter((x) => x.item.kind === kind && (category === undefined || x.item.category === category)));
  const templateOfKnowledge = new Map<number, string[]>();
  for (const t of input.templates) for (const k of t.knowledge) templateOfKnowledge.set(k.id, [...(templateOfKnowledge.get(k.id) ?? []), t.id]);

  const dedupe = (lines: Line[]): Line[] => {
    const seen = new Set<string>();
    return lines.filter((l) => (seen.has(l.text) ? false : (seen.add(l.text), true)));
  };
  const knowledge = dedupe(
    input.knowledge.slice(0, CAPS.knowledge * 2).map((k) => ({ text: clip(`- [${k.category}] ${k.text}`), from: templateOfKnowledge.get(k.id) ?? [] })),
  ).slice(0, CAPS.knowledge);
  const recoveries = dedupe(ofKind('recovery').map((x) => ({ text: clip(`- ${x.item.text}`), from: [x.templateId] }))).slice(0, CAPS.recoveries);
  const markerLine = (category: string, label: string, cap: number): Line[] => {
    const xs = ofKind('marker', category);
    const values = [...new Set(xs.map((x) => x.item.text))].slice(0, cap);
    return values.length === 0 ? [] : [{ text: clip(`- ${label}: ${values.join(', ')}`, 600), from: [...new Set(xs.slice(0, cap).map((x) => x.templateId))] }];
  };
  const context = [
    ...markerLine('repo', 'repos', 3),
    ...markerLine('path', 'files', CAPS.paths),
    ...markerLine('command', 'commands', CAPS.commands),
    ...markerLine('url', 'urls', CAPS.urls),
  ];
  const examples = dedupe(ofKind('example').map((x) => ({ text: exampleLine(x.item), from: [x.templateId] }))).slice(0, CAPS.examples);
  // Style observations can disagree between sessions: only the most frequent one is shown.
  const firstStyle = input.patterns.find((p) => p.kind === 'style');
  const prefs = input.patterns
    .filter((p) => p.kind !== 'style' || p === firstStyle)
    .slice(0, CAPS.patterns)
    .map((p) => ({ text: clip(`- ${p.kind}: ${p.text} (seen in ${p.sessionCount} sessions)`), from: [] }));
  return [
    { title: 'Knowledge:', lines: knowledge },
    { title: 'Errors and fixes seen before:', lines: recoveries },
    { title: 'Context:', lines: context },
    { title: 'Tool calls that worked:', lines: examples },
    { title: "The user's habits:", lines: prefs },
  ];
}

/** Token counts of rendered lines, per encoding: the same template lines recur across bootstraps. */
const LINE_CACHE_MAX = 20_000;
const lineCache = new Map<string, number>();

function lineTokens(counter: TokenCounter, text: string): number {
  const key = `${counter.encoding}\0${text}`;
  let n = lineCache.get(key);
  if (n === undefined) {
    n = counter.count(text);
    if (lineCache.size >= LINE_CACHE_MAX) lineCache.clear();
    lineCache.set(key, n);
  }
  return n;
}

/** Render within `budgetTokens` (message overhead included). */
export function renderBootstrap(input: RenderInput, counter: TokenCounter): Rendered {
  const empty: Rendered = { messages: [], tokens: 0, templateIds: [] };
  if (input.templates.length === 0 || input.budgetTokens <= MESSAGE_OVERHEAD_TOKENS) return empty;
  const types = [...new Set(input.templates.map((t) => t.taskType))].join('/');
  const header = clip(
    `[contextd warm start] Notes harvested from ${input.templates.reduce((n, t) => n + t.sessionCount, 0)} earlier session(s) on similar ${types} tasks${input.repo ? ` in ${input.repo}` : ''}. Hints only: verify before relying on them.`,
    400,
  );
  const budget = input.budgetTokens - MESSAGE_OVERHEAD_TOKENS;
  const out: { text: string; from: readonly string[]; isTitle: boolean }[] = [];
  // Each piece is counted with its newline. tiktoken's pre-tokenizer joins text across a
  // newline only when the next line starts with '/' or whitespace; every piece here starts
  // with '- ', a letter or '[' (clip() trims), so the joined text costs exactly the sum.
  let used = lineTokens(counter, `${header}\n`);
  if (used > budget) return empty;
  for (const section of sections(input)) {
    if (section.lines.length === 0) continue;
    let titleAdded = false;
    for (const line of section.lines) {
      const cost = lineTokens(counter, `${line.text}\n`) + (titleAdded ? 0 : lineTokens(counter, `${section.title}\n`));
      if (used + cost > budget) continue;
      if (!titleAdded) {
        out.push({ text: section.title, from: [], isTitle: true });
        titleAdded = true;
      }
      out.push({ text: line.text, from: line.from, isTitle: false });
      used += cost;
    }
  }
  const pieces = (): string[] => [header, ...out.map((l) => l.text)];
  const total = (): number => {
    const ps = pieces();
    let n = 0;
    ps.forEach((p, i) => (n += lineTokens(counter, i < ps.length - 1 ? `${p}\n` : p)));
    return n + MESSAGE_OVERHEAD_TOKENS;
  };
  let tokens = total();
  while (out.length > 0 && tokens > input.budgetTokens) {
    out.pop();
    while (out.length > 0 && out[out.length - 1]?.isTitle) out.pop();
    tokens = total();
  }
  const content = pieces().join('\n');
  const body = out.filter((l) => !l.isTitle);
  if (body.length === 0 || tokens > input.budgetTokens) return empty;
  const used_ = new Set(body.flatMap((l) => l.from));
  const templateIds = input.templates.map((t) => t.id).filter((id) => used_.has(id));
  return { messages: [{ role: 'system', content }], tokens, templateIds: templateIds.length > 0 ? templateIds : input.templates.map((t) => t.id) };
}
