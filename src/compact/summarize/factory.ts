/** Build a summarizer from its config (`{kind: 'extractive'}` or `{kind: 'openai', …}`). */
import type { Logger } from '../../util/logger.js';
import type { Summarizer } from '../types.js';
import { createExtractiveSummarizer } from './extractive.js';
import { createOpenAISummarizer, type OpenAISummarizerConfig } from './openai.js';

export type SummarizerSpec = { readonly kind: 'extractive' } | ({ readonly kind: 'openai' } & OpenAISummarizerConfig);

export function createSummarizer(spec: SummarizerSpec | undefined, deps: { logger?: Logger } = {}): Summarizer {
  if (!spec || spec.kind === 'extractive') return createExtractiveSummarizer();
  const { kind: _kind, ...cfg } = spec;
  return createOpenAISummarizer({ ...cfg, ...(deps.logger ? { logger: deps.logger } : {}) });
}
