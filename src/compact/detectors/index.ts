/** The candidate detectors, in the order their reasons are preferred. */
import type { Candidate, Detector, DetectorContext } from '../types.js';
import { lowScore } from './low-score.js';
import { redundantToolOutput } from './redundant-tool-output.js';
import { staleRead } from './stale-read.js';
import { supersededReasoning } from './superseded-reasoning.js';
import { verboseErrorTrace } from './verbose-error-trace.js';

export { lowScore, redundantToolOutput, staleRead, supersededReasoning, verboseErrorTrace };
export { traceEssentials } from './verbose-error-trace.js';
export { isCompactable } from './util.js';

/** Cruft detectors (cheap, specific) before the general `low-score`. */
export const CRUFT_DETECTORS: readonly Detector[] = [redundantToolOutput, staleRead, verboseErrorTrace, supersededReasoning];

/** Run detectors and return their candidates in detector order. */
export function runDetectors(ctx: DetectorContext, detectors: readonly Detector[] = CRUFT_DETECTORS): Candidate[] {
  return detectors.flatMap((d) => d.detect(ctx));
}
