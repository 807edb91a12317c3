/**
 * The section model (design §4): pure, no fs, sockets or SQLite.
 */
export { SessionModel } from './session.js';
export type { SessionModelOptions, SessionCounts, ReplacementSummary, ReplayedEdit } from './session.js';
export { Calibrator, CALIBRATION_SAMPLES } from './calibration.js';
export type { Calibration } from './calibration.js';
export { presetContextWindow, resolveBudget, DEFAULT_CONTEXT_WINDOW, DEFAULT_RESERVE_RATIO } from './budget.js';
export type { BudgetInputs } from './budget.js';
export { scoreSection, PRIORITY_WEIGHTS } from './score.js';
export { SUMMARY_ID_PREFIX } from './scoring.js';
export type { ScoreInput } from './score.js';
export { recencyWeight, DEFAULT_HALF_LIFE_TURNS, DEFAULT_HALF_LIFE_SECONDS } from './recency.js';
export { DENSITY_FLOOR, densityFeatures, similarity, densityOf } from './density.js';
export type { DensityFeatures } from './density.js';
export { DERIVATION_VERSION, TERM_KEY_CHARS, analyseFragmentText, derivedDigestOf, encodeAnalysis, decodeAnalysis } from './derived.js';
export type { DerivedDataCache, TextDigest, TextAnalysis, TextOwner } from './derived.js';
export { RELEVANCE_FLOOR, GOAL_TERM_WEIGHT, ANCHOR_TERM_WEIGHT } from './relevance.js';
export {
  LARGE_TOOL_OUTPUT_TOKENS,
  STALE_TOOL_OUTPUT_TURNS,
  SUPERSEDED_SIMILARITY,
  KEY_DECISION_MAX_TOKENS,
} from './priority.js';
export { isAcknowledgement, isDecisionText } from './classify.js';
export { words, termStats } from '../text/index.js';
export * from './types.js';
export * from './messages.js';
export {
  createTokenCounter,
  encodingForModel,
  IMAGE_TOKEN_ESTIMATE,
  MESSAGE_OVERHEAD_TOKENS,
  SUPPORTED_ENCODINGS,
} from './tokens.js';
export type { TokenCounter, EncodingName } from './tokens.js';
