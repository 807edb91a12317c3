export { createExtractiveSummarizer, extractiveSummary, DEFAULT_SUMMARY_TOKENS } from './extractive.js';
export { createOpenAISummarizer, buildRequest } from './openai.js';
export type { OpenAISummarizer, OpenAISummarizerConfig, SummarizerStats } from './openai.js';
export { createSummarizer } from './factory.js';
export type { SummarizerSpec } from './factory.js';
