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
import { jaccard } from '../../text/index.js';
import type { Candidate, Detector, DetectorContext } from '../types.js';
import { memoList, memoMessage } from '../memo.js';
import { callsOf, isCompactable, lineSet, memoMessages } from './util.js';

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
  readonly lines: ReadonlySet<string>;
}

type Shape = { readonly tool: string; readonly key: string; readonly lines: ReadonlySet<string> } | null;

/** Line set of a message's text (tool results), memoized per message. */
function messageLines(m: Message): ReadonlySet<string> {
  return memoMessage(m, 'lines', (x) => lineSet(x.text));
}

/**
 * Tool, invocation key and output line set of a section's messages (null: no call or no
 * output). The line set of the joined outputs is the ordered union of each result's lines.
 */
function shapeOf(msgs: readonly Message[]): Shape {
  return memoList(msgs, 'redundant-shape', (ms): Shape => {
    const calls = callsOf(ms);
    const first = calls[0];
    if (!first) return null;
    const tools = ms.filter((m) => m.role === 'tool');
    let lines: ReadonlySet<string>;
    if (tools.length === 1 && tools[0]) lines = messageLines(tools[0]);
    else {
      const u = new Set<string>();
      for (const m of tools) for (const l of messageLines(m)) u.add(l);
      lines = u;
    }
    if (lines.size === 0) return null;
    return { tool: first.name, key: calls.map((c) => toolAction(c).key).join('|'), lines };
  });
}

/**
 * Jaccard similarity of two line sets when it reaches `need`, else -1. Exact for pairs that
 * reach it (the intersection is counted in full); pairs that cannot reach it stop early.
 * Memoized per threshold and pair of (shared, immutable) sets.
 */
const simMemo = new Map<number, WeakMap<ReadonlySet<string>, WeakMap<ReadonlySet<string>, number>>>();
function similarityAtLeast(a: ReadonlySet<string>, b: ReadonlySet<string>, need: number): number {
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

function boundedJaccard(a: ReadonlySet<string>, b: ReadonlySet<string>, need: number): number {
  const [small, large] = a.size <= b.size ? [a, b] : [b, a];
  // Jaccard ≤ |small| / |large| (same float division as a full containment would give)
  if (small.size / large.size < need) return -1;
  const total = a.size + b.size;
  let inter = 0;
  let left = small.size;
  for (const x of small) {
    left--;
    if (large.has(x)) inter++;
    else {
      const best = inter + left;
      // the best case (every remaining line shared) is clearly below the threshold
      if (best / (total - best) < need - 1e-9) return -1;
    }
  }
  const sim = jaccard(a, b);
  return sim >= need ? sim : -1;
}

export const redundantToolOutput: Detector = {
  name: 'redundant-tool-output',
  detect(ctx: DetectorContext): Candidate[] {
    const msgsOf = memoMessages(ctx);
    const byTool = new Map<string, Entry[]>();
    for (const s of ctx.sections) {
      const shape = shapeOf(msgsOf(s));
      if (!shape) continue;
      const tool = shape.tool;
      const entry: Entry = { section: s, ...shape };
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
          const sim = similarityAtLeast(older.lines, newer.lines, SAME_KEY_SIMILARITY);
          const ok = sim >= 0;
          if (ok && (!best || sim > best.sim)) best = { entry: newer, sim };
        }
        if (!best) continue;
        const except = [...older.lines].filter((l) => !best.entry.lines.has(l)).slice(0, 6);
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
