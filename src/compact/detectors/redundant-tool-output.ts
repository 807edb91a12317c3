/**
 * `redundant-tool-output`: an older tool result that a newer result of the same tool
 * (same command, or near-identical output) repeats. The newest is kept; the older becomes
 * a pointer "same as <newer> except …".
 */
import type { Section } from '../../model/types.js';
import { toolAction } from '../toolargs.js';
import { jaccard } from '../text.js';
import type { Candidate, Detector, DetectorContext } from '../types.js';
import { callsOf, isCompactable, lineSet, memoMessages, outputOf } from './util.js';

/** Same-command outputs at least this similar (line Jaccard) are redundant. */
export const SAME_KEY_SIMILARITY = 0.5;
/** Outputs of different invocations of one tool at least this similar are redundant. */
export const ANY_KEY_SIMILARITY = 0.85;
/** Outputs smaller than this are not worth a pointer. */
export const MIN_TOKENS = 40;
/** How many newer outputs of the same tool each output is compared with. */
const WINDOW = 40;

interface Entry {
  readonly section: Section;
  readonly tool: string;
  readonly key: string;
  readonly lines: Set<string>;
}

export const redundantToolOutput: Detector = {
  name: 'redundant-tool-output',
  detect(ctx: DetectorContext): Candidate[] {
    const msgsOf = memoMessages(ctx);
    const byTool = new Map<string, Entry[]>();
    for (const s of ctx.sections) {
      const msgs = msgsOf(s);
      const calls = callsOf(msgs);
      const first = calls[0];
      if (!first) continue;
      const out = outputOf(msgs);
      if (out.trim().length === 0) continue;
      const tool = first.name;
      const entry: Entry = { section: s, tool, key: calls.map((c) => toolAction(c).key).join('|'), lines: lineSet(out) };
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
          if (!newer) continue;
          const sim = jaccard(older.lines, newer.lines);
          const ok = newer.key === older.key ? sim >= SAME_KEY_SIMILARITY : sim >= ANY_KEY_SIMILARITY;
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
