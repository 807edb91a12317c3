/**
 * `redundant-tool-output`: an older tool result that a newer result of the same call repeats
 * — same invocation (tool + command or arguments) AND near-identical output. Distinct calls
 * whose outputs happen to read alike (17 different patches all answering "Success. Updated
 * the following files: M a.ts") are not redundant: what each changed is different. The newest
 * is kept; the older becomes a pointer "a later identical call returned the same output except …".
 */
import type { Message } from '../../model/messages.js';
import type { Section } from '../../model/types.js';
import { toolAction } from '../../model/toolargs.js';
import { derivedDigestOf } from '../../model/index.js';
import { hash52, lineHashes, lineSet } from '../../text/index.js';
import type { Candidate, Detector, DetectorContext } from '../types.js';
import { memoList, memoMessage } from '../memo.js';
import { callsOf, isCompactable, memoMessages } from './util.js';

/** Same-call outputs at least this similar (line Jaccard) are redundant. */
export const SAME_KEY_SIMILARITY = 0.5;
/** Outputs smaller than this are not worth a pointer. */
export const MIN_TOKENS = 40;
/** How many newer outputs of the same tool each output is compared with. */
const WINDOW = 40;

interface Entry {
  readonly section: Section;
  readonly tool: string;
  readonly key: string;
  /** The section's messages, whose line set `linesOf` reads when a comparison needs it. */
  readonly msgs: readonly Message[];
}

/**
 * A line set held as the sorted, distinct 52-bit hashes of its lines: a twentieth of the
 * memory of a Set of line strings, kept per message for re-plans. The lines themselves are
 * read again from the text only for a candidate's "except" list.
 */
type LineHashes = Float64Array;

/**
 * Tool and invocation key of a section with a call and some output (null otherwise). Its
 * line set is left to `linesOf`: only outputs with a same-key neighbour are ever compared.
 * (A tool result's line hashes come with its derived data; one without them is hashed only
 * when first compared.)
 */
type Shape = { readonly tool: string; readonly key: string } | null;

function sortedDistinct(values: Float64Array): LineHashes {
  values.sort();
  let n = 0;
  for (let i = 0; i < values.length; i++) if (i === 0 || values[i] !== values[n - 1]) values[n++] = values[i] as number;
  return n === values.length ? values : values.slice(0, n);
}

/** Line hashes of a message's text (tool results): from its derived data when that has them, else worked out once per message. */
function messageLines(m: Message): LineHashes {
  return derivedDigestOf(m)?.lineHashes ?? memoMessage(m, 'line-hashes', (x) => lineHashes(x.text));
}

function hasHash(sorted: LineHashes, h: number): boolean {
  let lo = 0;
  let hi = sorted.length - 1;
  while (lo <= hi) {
    const mid = (lo + hi) >>> 1;
    const v = sorted[mid] as number;
    if (v === h) return true;
    if (v < h) lo = mid + 1;
    else hi = mid - 1;
  }
  return false;
}

/** Lines of `msgs`' tool results (in order, each once) whose hash `newer` lacks: the first `max`. */
function linesMissingFrom(msgs: readonly Message[], newer: LineHashes, max: number): string[] {
  const out: string[] = [];
  const seen = new Set<string>();
  for (const m of msgs) {
    if (m.role !== 'tool') continue;
    for (const l of lineSet(m.text)) {
      if (seen.has(l)) continue;
      seen.add(l);
      if (!hasHash(newer, hash52(l))) out.push(l);
      if (out.length >= max) return out;
    }
  }
  return out;
}

/** How many lines an older output's pointer lists as missing from the newer one. */
const EXCEPT_LINES = 6;

/**
 * `linesMissingFrom(msgs, newer, EXCEPT_LINES)`, memoized per message list and newer line set
 * (both unchanged across re-plans until a newer output of the same call arrives): the older
 * output is not split into lines again on every plan.
 */
function exceptOf(msgs: readonly Message[], newer: LineHashes): readonly string[] {
  const byNewer = memoList(msgs, 'redundant-except', () => new WeakMap<LineHashes, readonly string[]>());
  let except = byNewer.get(newer);
  if (!except) {
    except = Object.freeze(linesMissingFrom(msgs, newer, EXCEPT_LINES));
    byNewer.set(newer, except);
  }
  return except;
}

/**
 * Tool and invocation key of a section's messages (null: no call, or no output line — a
 * result that is only whitespace has an empty line set).
 */
function shapeOf(msgs: readonly Message[]): Shape {
  return memoList(msgs, 'redundant-shape', (ms): Shape => {
    const calls = callsOf(ms);
    const first = calls[0];
    if (!first) return null;
    if (!ms.some((m) => m.role === 'tool' && /\S/.test(m.text))) return null;
    return { tool: first.name, key: calls.map((c) => toolAction(c).key).join('|') };
  });
}

/** Output line set of a section's messages: the ordered union of each result's lines. */
function linesOf(msgs: readonly Message[]): LineHashes {
  return memoList(msgs, 'redundant-lines', (ms) => {
    const tools = ms.filter((m) => m.role === 'tool');
    if (tools.length === 1 && tools[0]) return messageLines(tools[0]);
    const parts = tools.map(messageLines);
    const all = new Float64Array(parts.reduce((n, p) => n + p.length, 0));
    let at = 0;
    for (const p of parts) {
      all.set(p, at);
      at += p.length;
    }
    return sortedDistinct(all);
  });
}

/**
 * Jaccard similarity of two line sets when it reaches `need`, else -1. Exact for pairs that
 * reach it (the intersection is counted in full); pairs that cannot reach it stop early.
 * Memoized per threshold and pair of (shared, immutable) sets.
 */
const simMemo = new Map<number, WeakMap<LineHashes, WeakMap<LineHashes, number>>>();
function similarityAtLeast(a: LineHashes, b: LineHashes, need: number): number {
  let byA = simMemo.get(need);
  if (!byA) {
    byA = new WeakMap();
    simMemo.set(need, byA);
  }
  let inner = byA.get(a);
  if (!inner) {
    inner = new WeakMap();
    byA.set(a, inner);
  }
  let v = inner.get(b);
  if (v === undefined) {
    v = boundedJaccard(a, b, need);
    inner.set(b, v);
  }
  return v;
}

/** Jaccard similarity of two sorted, distinct hash sets when it reaches `need` (0 < need ≤ 1), else -1. */
export function boundedJaccard(a: LineHashes, b: LineHashes, need: number): number {
  const [small, large] = a.length <= b.length ? [a, b] : [b, a];
  // Jaccard ≤ |small| / |large| (same float division as a full containment would give)
  if (small.length / large.length < need) return -1;
  const total = a.length + b.length;
  // The best case (every remaining line of the smaller side shared) clearly below the threshold,
  // best / (total − best) < need − 1e-9, is best < limit: total − best > 0, so the division is
  // done once here, not once per step.
  const c = need - 1e-9;
  const limit = (c * total) / (1 + c);
  let inter = 0;
  let i = 0;
  let j = 0;
  while (i < a.length && j < b.length) {
    const x = a[i] as number;
    const y = b[j] as number;
    if (x === y) {
      // the best case stays as it was
      inter++;
      i++;
      j++;
      continue;
    }
    if (x < y) i++;
    else j++;
    if (inter + Math.min(a.length - i, b.length - j) < limit) return -1;
  }
  const sim = inter / (total - inter);
  return sim >= need ? sim : -1;
}

export const redundantToolOutput: Detector = {
  name: 'redundant-tool-output',
  detect(ctx: DetectorContext): Candidate[] {
    const msgsOf = memoMessages(ctx);
    const byTool = new Map<string, Entry[]>();
    for (const s of ctx.sections) {
      const msgs = msgsOf(s);
      const shape = shapeOf(msgs);
      if (!shape) continue;
      const tool = shape.tool;
      const entry: Entry = { section: s, ...shape, msgs };
      const list = byTool.get(tool) ?? [];
      list.push(entry);
      byTool.set(tool, list);
    }
    const out: Candidate[] = [];
    for (const list of byTool.values()) {
      for (let i = 0; i < list.length - 1; i++) {
        const older = list[i];
        if (!older || !isCompactable(older.section) || older.section.tokens < MIN_TOKENS) continue;
        let best: { entry: Entry; sim: number } | undefined;
        for (let j = list.length - 1; j > i && j >= list.length - WINDOW - i; j--) {
          const newer = list[j];
          if (!newer || newer.key !== older.key) continue;
          const sim = similarityAtLeast(linesOf(older.msgs), linesOf(newer.msgs), SAME_KEY_SIMILARITY);
          const ok = sim >= 0;
          if (ok && (!best || sim > best.sim)) best = { entry: newer, sim };
        }
        if (!best) continue;
        const except = exceptOf(older.msgs, linesOf(best.entry.msgs));
        out.push({
          sectionIds: [older.section.id],
          reason: 'redundant-tool-output',
          detail: { newer: best.entry.section.id, similarity: Math.round(best.sim * 100) / 100, except, key: older.key },
        });
      }
    }
    return out;
  },
};
