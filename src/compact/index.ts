/**
 * compact/: candidate detectors, summarizers, the planner and offline strategies (design §5).
 * Pure: plans are data; the daemon archives originals and pushes plans.
 */
export * from './types.js';
export { planCompaction, applyPlan, replacementOf, handleFor, originalsOf, planStanding, targetTokensFor, toCountedTokens, toCalibratedTokens, compactionTarget, detectorContext, SummaryCache, DEFAULT_HYSTERESIS, DEFAULT_SOFT_WATERMARK } from './planner.js';
export type { PlanOptions } from './planner.js';
export { compactWithStrategy, renderSections, MASK_PLACEHOLDER, MIDDLE_HEAD_MESSAGES, MIDDLE_SUMMARY_RATIO } from './strategies.js';
export type { StrategyOptions } from './strategies.js';
export { archiveEntries, looseEntry, redactEntries, type ArchiveEntry, type ArchivableEdit, type LooseOriginals, type OriginalsFilter, type RedactionTally } from './archive-entries.js';
export { CRUFT_DETECTORS, runDetectors, lowScore, redundantToolOutput, staleRead, supersededReasoning, verboseErrorTrace } from './detectors/index.js';
export { createExtractiveSummarizer, createOpenAISummarizer, createSummarizer, extractiveSummary } from './summarize/index.js';
export type { OpenAISummarizer, OpenAISummarizerConfig, SummarizerSpec, SummarizerStats } from './summarize/index.js';
export { keyFacts, ensureSurvival } from './survival.js';
export type { KeyFacts } from './survival.js';
export { repairPairs, toChat } from './render.js';
export { REASON_DISCOUNT } from './select.js';
export { toolOutcome, editGists, describeCall, describeOutcome, type ToolOutcome } from './outcome.js';
