/**
 * Offline compaction of a whole session to a token budget, by contextd's planner or by one
 * of three baselines, each implemented as its authors describe it:
 *  - `truncate`: drop the oldest non-system sections (whole sections, so no orphans).
 *  - `mask`: observation masking — replace tool outputs with a placeholder, oldest first,
 *    the newest output kept; when masking alone cannot reach the budget, the oldest
 *    non-system sections are then dropped (as the agent harness would have to).
 *  - `middle`: hermes-agent's compressor — keep the first three messages and a token-budgeted
 *    tail, and replace the middle with one extractive summary (summary budget: 20% of target).
 * All outputs go through `repairPairs`, and all counts use the model's token formula.
 */
import { createTokenCounter, type TokenCounter } from '../model/tokens.js';
import type { ScoreFactors, Section } from '../model/types.js';
import { compactionTarget, planCompaction, toCalibratedTokens } from './planner.js';
import { renderMessage, renderText, repairPairs, totalTokens, type Rendered } from './render.js';
import { extractiveSummary } from './summarize/extractive.js';
import type { CompactableModel, CompactResult, StrategyName, Summarizer } from './types.js';

export interface StrategyOptions {
  readonly strategy: StrategyName;
  /** The context window to fit. */
  readonly budgetTokens: number;
  /** Share of the window kept free (target = budgetTokens × (1 − reserveRatio)). */
  readonly reserveRatio: number;
  /** contextd only (default extractive). */
  readonly summarizer?: Summarizer;
  readonly tokenCounter?: TokenCounter;
}

/** `middle`: messages kept at the head, and the share of the target given to the summary. */
export const MIDDLE_HEAD_MESSAGES = 3;
export const MIDDLE_SUMMARY_RATIO = 0.2;
export const MASK_PLACEHOLDER = '[tool output omitted]';

interface Group {
  readonly section: Section;
  readonly rendered: Rendered[];
  readonly tokens: number;
}

/** Each section rendered as openai-chat, its tokens adjusted to the model's section count. */
export function renderSections(model: CompactableModel, counter: TokenCounter): Group[] {
  return model.sections().map((section) => {
    const rendered = model.messagesOf(section.id).map((m) => renderMessage(m, counter));
    const sum = totalTokens(rendered);
    const first = rendered[0];
    if (first && sum !== section.tokens) rendered[0] = { chat: first.chat, tokens: first.tokens + (section.tokens - sum) };
    return { section, rendered, tokens: section.tokens };
  });
}

function factorsOf(sections: readonly Section[]): Record<string, ScoreFactors> {
  const out: Record<string, ScoreFactors> = {};
  for (const s of sections) out[s.id] = s.factors;
  return out;
}

function finish(
  strategy: StrategyName,
  tokensBefore: number,
  budget: number,
  rendered: Rendered[],
  edits: CompactResult['edits'],
  counter: TokenCounter,
  blockers?: readonly Group[],
): CompactResult {
  const out = repairPairs(rendered, counter);
  const after = totalTokens(out);
  let unreachable: CompactResult['unreachable'];
  if (blockers && after > budget) {
    // the anchors (and pending calls) whose removal would be needed, largest first
    const sorted = [...blockers].sort((a, b) => b.tokens - a.tokens);
    const anchors: string[] = [];
    let freed = 0;
    for (const g of sorted) {
      if (after - freed <= budget) break;
      anchors.push(g.section.id);
      freed += g.tokens;
    }
    unreachable = { anchors, anchorTokens: sorted.reduce((n, g) => n + g.tokens, 0) };
  }
  return {
    strategy,
    tokensBefore,
    tokensAfter: after,
    budget,
    countedTokensBefore: tokensBefore,
    countedTokensAfter: after,
    countedBudget: budget,
    edits,
    messages: out.map((r) => r.chat),
    ...(unreachable ? { unreachable } : {}),
  };
}

/**
 * Compact the whole session to `budgetTokens × (1 − reserveRatio)` with one strategy. The
 * budget is in the agent's terms (calibrated to its usage reports, as `inspect` counts); the
 * strategies work in the model's own count, so the target is converted once here, and the
 * result reports both (tokens* calibrated, countedTokens* raw).
 */
export async function compactWithStrategy(model: CompactableModel, o: StrategyOptions): Promise<CompactResult> {
  const { countedTarget } = compactionTarget(model, o.budgetTokens, o.reserveRatio);
  const raw = await compactCounted(model, o, countedTarget);
  const { target } = compactionTarget(model, o.budgetTokens, o.reserveRatio);
  const tokensAfter = toCalibratedTokens(model, raw.countedTokensAfter);
  const overheadTokens = toCalibratedTokens(model, 0);
  const unreachable = raw.unreachable ?? (tokensAfter > target ? { anchors: [], anchorTokens: 0 } : undefined);
  return {
    ...raw,
    tokensBefore: toCalibratedTokens(model, raw.countedTokensBefore),
    tokensAfter,
    budget: target,
    ...(unreachable ? { unreachable: overheadTokens > 0 ? { ...unreachable, overheadTokens } : unreachable } : {}),
  };
}

async function compactCounted(model: CompactableModel, o: StrategyOptions, target: number): Promise<CompactResult> {
  const counter = o.tokenCounter ?? createTokenCounter();
  const groups = renderSections(model, counter);
  const tokensBefore = groups.reduce((n, g) => n + g.tokens, 0);
  switch (o.strategy) {
    case 'contextd':
      return contextd(model, groups, tokensBefore, target, o, counter);
    case 'truncate':
      return finish('truncate', tokensBefore, target, ...truncate(groups, tokensBefore, target, 'truncate'), counter);
    case 'mask':
      return finish('mask', tokensBefore, target, ...mask(groups, tokensBefore, target, counter), counter);
    case 'middle':
      return finish('middle', tokensBefore, target, ...middle(model, groups, target, counter), counter);
  }
}

async function contextd(model: CompactableModel, groups: Group[], tokensBefore: number, target: number, o: StrategyOptions, counter: TokenCounter): Promise<CompactResult> {
  const blockers = groups.filter((g) => g.section.anchor || g.section.pending);
  if (tokensBefore <= target) return finish('contextd', tokensBefore, target, groups.flatMap((g) => g.rendered), [], counter, blockers);
  const plan = await planCompaction(model, { mode: 'manual', targetTokens: target, tokenCounter: counter, ...(o.summarizer ? { summarizer: o.summarizer } : {}) });
  const bySection = new Map<string, (typeof plan.edits)[number]>();
  for (const e of plan.edits) for (const id of e.replaces) bySection.set(id, e);
  const out: Rendered[] = [];
  for (const g of groups) {
    const e = bySection.get(g.section.id);
    if (!e) out.push(...g.rendered);
    else if (e.replaces[0] === g.section.id) out.push({ chat: { role: e.summary.role, content: e.summary.content }, tokens: e.tokensAfter });
  }
  const edits = plan.edits.map((e) => ({ editId: e.editId, replaces: e.replaces, reason: e.reason, tokensBefore: e.tokensBefore, tokensAfter: e.tokensAfter, scores: e.scores, handle: e.handle }));
  return finish('contextd', tokensBefore, target, out, edits, counter, blockers);
}

type EditRow = CompactResult['edits'][number];
type Partial = [Rendered[], EditRow[]];

/** Drop the oldest non-system groups until `current` fits. */
function truncate(groups: readonly Group[], current: number, target: number, label: string): Partial {
  const dropped = new Set<Section>();
  let tokens = current;
  for (const g of groups) {
    if (tokens <= target) break;
    if (g.section.kind === 'system') continue;
    dropped.add(g.section);
    tokens -= g.tokens;
  }
  const kept = groups.filter((g) => !dropped.has(g.section)).flatMap((g) => g.rendered);
  const ds = [...dropped];
  const edits = ds.length
    ? [{ editId: `${label}-drop`, replaces: ds.map((s) => s.id), reason: 'truncate', tokensBefore: ds.reduce((n, s) => n + s.tokens, 0), tokensAfter: 0, scores: factorsOf(ds) }]
    : [];
  return [kept, edits];
}

function mask(groups: readonly Group[], tokensBefore: number, target: number, counter: TokenCounter): Partial {
  const placeholder = renderText('tool', MASK_PLACEHOLDER, counter);
  const toolPositions: [number, number][] = [];
  groups.forEach((g, gi) => g.rendered.forEach((r, ri) => r.chat.role === 'tool' && toolPositions.push([gi, ri])));
  const masked = groups.map((g) => ({ section: g.section, rendered: [...g.rendered], tokens: g.tokens }));
  let tokens = tokensBefore;
  const maskedSections: Section[] = [];
  let before = 0;
  let after = 0;
  for (const [gi, ri] of toolPositions.slice(0, -1)) {
    if (tokens <= target) break;
    const g = masked[gi];
    const r = g?.rendered[ri];
    if (!g || !r || r.tokens <= placeholder.tokens) continue;
    g.rendered[ri] = { chat: { ...placeholder.chat, ...(r.chat.tool_call_id !== undefined ? { tool_call_id: r.chat.tool_call_id } : {}) }, tokens: placeholder.tokens };
    tokens -= r.tokens - placeholder.tokens;
    before += r.tokens;
    after += placeholder.tokens;
    g.tokens -= r.tokens - placeholder.tokens;
    if (!maskedSections.includes(g.section)) maskedSections.push(g.section);
  }
  const edits: EditRow[] = maskedSections.length
    ? [{ editId: 'mask-outputs', replaces: maskedSections.map((s) => s.id), reason: 'mask', tokensBefore: before, tokensAfter: after, scores: factorsOf(maskedSections) }]
    : [];
  if (tokens <= target) return [masked.flatMap((g) => g.rendered), edits];
  const [kept, dropEdits] = truncate(masked, tokens, target, 'mask');
  return [kept, [...edits, ...dropEdits]];
}

function middle(model: CompactableModel, groups: readonly Group[], target: number, counter: TokenCounter): Partial {
  let headEnd = 0; // groups [0, headEnd) form the head
  let headMsgs = 0;
  while (headEnd < groups.length && headMsgs < MIDDLE_HEAD_MESSAGES) headMsgs += groups[headEnd++]?.rendered.length ?? 0;
  const head = groups.slice(0, headEnd);
  const headTokens = head.reduce((n, g) => n + g.tokens, 0);
  const allTokens = groups.reduce((n, g) => n + g.tokens, 0);
  if (allTokens <= target) return [groups.flatMap((g) => g.rendered), []];
  const summaryBudget = Math.max(32, Math.floor(target * MIDDLE_SUMMARY_RATIO));
  let tailStart = groups.length;
  let tailTokens = 0;
  const tailBudget = target - headTokens - summaryBudget;
  while (tailStart > headEnd) {
    const g = groups[tailStart - 1];
    if (!g || tailTokens + g.tokens > tailBudget) break;
    tailTokens += g.tokens;
    tailStart--;
  }
  const mid = groups.slice(headEnd, tailStart);
  const rendered: Rendered[] = head.flatMap((g) => g.rendered);
  const edits: EditRow[] = [];
  if (mid.length > 0) {
    const sections = mid.map((g) => g.section);
    const text = extractiveSummary({
      reason: 'low-score',
      sections,
      messages: sections.flatMap((s) => [...model.messagesOf(s.id)]),
      goal: model.goal().text,
      maxTokens: summaryBudget,
    });
    const summary = renderText('user', `[CONTEXT COMPACTION] Earlier turns were compacted:\n${text}`, counter);
    rendered.push(summary);
    edits.push({ editId: 'middle-summary', replaces: sections.map((s) => s.id), reason: 'middle', tokensBefore: mid.reduce((n, g) => n + g.tokens, 0), tokensAfter: summary.tokens, scores: factorsOf(sections) });
  }
  // the summary may come in under or over its estimate: trim the tail's oldest sections to fit
  let tail = groups.slice(tailStart);
  let total = totalTokens(rendered) + tail.reduce((n, g) => n + g.tokens, 0);
  while (total > target && tail.length > 0) {
    total -= tail[0]?.tokens ?? 0;
    tail = tail.slice(1);
  }
  return [[...rendered, ...tail.flatMap((g) => g.rendered)], edits];
}
