/**
 * Transcripts the benches generate: the demo session, with every line made its own text.
 * The demo generator repeats itself and real transcripts do not; repeated messages would let
 * caches (the token cache, the planner's memos) serve a run better than real sessions allow.
 */
import { demoTranscript, type DemoLine } from '../demo/transcript.js';

/**
 * The JSONL of generated session `session`: `rounds` demo rounds, each line tagged with the
 * session and line number. Pass `base` (the demo lines for `rounds`) to build many at once.
 */
export function generatedTranscript(session: number, rounds: number, base: readonly DemoLine[] = demoTranscript({ rounds })): Buffer {
  const lines = base.map((l, n) => JSON.stringify({ ...l, content: `${l.content}\n[session ${session}, line ${n}]` }));
  return Buffer.from(lines.join('\n') + '\n');
}
