/**
 * `verbose-error-trace`: a long stack trace. The summary keeps the exception line, the first
 * frame in project code (not node_modules / site-packages / runtime internals) and the outcome.
 */
import { countFrames, countFramesJoined, extractErrorLines, isFrameLine, isProjectFrame } from '../../text/index.js';
import type { Message } from '../../model/messages.js';
import type { Candidate, Detector, DetectorContext } from '../types.js';
import { memoList } from '../memo.js';
import { toolOutcome } from '../outcome.js';
import { isCompactable, memoMessages, textOf } from './util.js';

/** A trace needs at least this many frame lines to be verbose. */
export const MIN_FRAMES = 6;
export const MIN_TOKENS = 80;

/** The three lines worth keeping from a trace. */
export function traceEssentials(text: string): { exception?: string; projectFrame?: string; last?: string } {
  const lines = text.split('\n').filter((l) => l.trim().length > 0);
  const errors = extractErrorLines(text);
  const projectFrame = lines.find((l) => isFrameLine(l) && isProjectFrame(l))?.trim();
  const last = [...lines].reverse().find((l) => !isFrameLine(l))?.trim();
  return {
    ...(errors[0] !== undefined ? { exception: errors[errors.length - 1] !== errors[0] && /Error|Exception/.test(errors[errors.length - 1] ?? '') ? errors[errors.length - 1] : errors[0] } : {}),
    ...(projectFrame !== undefined ? { projectFrame } : {}),
    ...(last !== undefined ? { last } : {}),
  };
}

/**
 * `countFrames(textOf(ms))` part by part: the parts are joined by line breaks, so no line spans
 * two of them, and no joined copy of a section's text is made for the many without a trace.
 */
function framesOf(ms: readonly Message[]): number {
  let n = 0;
  for (const m of ms) {
    if (m.reasoning) n += countFrames(m.reasoning);
    if (m.text) n += countFrames(m.text);
    if (m.toolCalls) for (const c of m.toolCalls) n += countFramesJoined(c.name, c.arguments);
  }
  return n;
}

export const verboseErrorTrace: Detector = {
  name: 'verbose-error-trace',
  detect(ctx: DetectorContext): Candidate[] {
    const msgsOf = memoMessages(ctx);
    const out: Candidate[] = [];
    for (const s of ctx.sections) {
      if (!isCompactable(s) || s.tokens < MIN_TOKENS) continue;
      const essentials = memoList(msgsOf(s), 'trace-essentials', (ms) => {
        // frames first: most outputs have none, and reading a run's outcome costs more
        if (framesOf(ms) < MIN_FRAMES) return null;
        const text = textOf(ms);
        // a tool run that succeeded is not an error trace, whatever its output prints
        const results = ms.filter((m) => m.role === 'tool');
        if (results.length > 0 && !results.some((m) => toolOutcome(m).failed)) return null;
        return traceEssentials(text);
      });
      if (!essentials) continue;
      out.push({ sectionIds: [s.id], reason: 'verbose-error-trace', detail: { ...essentials } });
    }
    return out;
  },
};
