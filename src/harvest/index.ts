/**
 * harvest: finished-session detection, value scoring, deterministic extraction, redaction.
 */
export { IdleTracker, DEFAULT_IDLE_MS, DEFAULT_TURN_END_IDLE_MS, type IdleTrackerOptions } from './idle.js';
export {
  harvestSession,
  redactDeep,
  storedSessionId,
  SKIP_REASONS,
  type HarvestInput,
  type HarvestDeps,
  type HarvestResult,
  type HarvestCounts,
  type SkipReason,
} from './harvest.js';
export {
  harvestFiles,
  harvestFile,
  loadTranscript,
  loadTranscriptPrefix,
  listTranscriptFiles,
  sessionFromEvents,
  SessionHistory,
  type LoadedSession,
  type HarvestProgress,
  type HarvestFilesSummary,
} from './files.js';
export { extractSession, sessionFingerprint, systemDigest, type Extraction, type ExtractionLimits } from './extract.js';
export { findRecoveries, type Recovery, type RecoveryOptions } from './recovery.js';
export { pairToolCalls, salientArg, commandHead, commandOf, toolKind, type ToolExchange, type ToolKind } from './toolcalls.js';
export { extractMarkers, classifySession, repoFromCwd, repoName, type Marker, type MarkerKind } from './markers.js';
export { isSyntheticText } from './synthetic.js';
export { userPatternCandidates, extractKnowledge, userRequests } from './patterns.js';
export { scoreSession, jaccard, VALUE_WEIGHTS, OUTCOME_FACTOR, type ValueInput } from './value.js';
export { redact, redactAll, redactMessages, redactSync, redactToolNames, redactionMarker, type Redacted, type RedactionFinding } from './redact.js';
export { SECRET_RULES, shannonEntropy, looksRandom, type SecretRule } from './redact-rules.js';
