/**
 * harvestSession: one finished session → extraction → redaction → value score → store.
 *
 * Nothing reaches the store or a log line before redaction: the extraction is walked, every
 * string (except ids, hashes and enum values) goes through `redactAll` (our rules + one
 * secretlint pass), and logs carry counts and ids only.
 */
import { sha1Hex } from '../util/sha1.js';
import type { Message } from '../model/messages.js';
import type { TokenCounter } from '../model/tokens.js';
import type { Logger } from '../util/logger.js';
import { searchTerms } from '../text/index.js';
import { type Outcome, type TemplateInput, type TemplateStore, type ValueScore } from '../store/templates.js';
import { contentHashChain } from './content-hash.js';
import { extractSession, type ExtractionLimits } from './extract.js';
import { mergeFindings, redactAll, redactSync, redactToolNames, type RedactionFinding } from './redact.js';
import { jaccard, scoreSession } from './value.js';

export interface HarvestInput {
  readonly sessionId: string;
  readonly messages: readonly Message[];
  readonly meta?: { readonly repo?: string | undefined; readonly cwd?: string | undefined; readonly model?: string | undefined };
  readonly outcome?: Outcome;
  /** Where the session came from (a transcript path), stored redacted. */
  readonly source?: string;
}

export interface HarvestDeps {
  readonly store: TemplateStore;
  readonly tokenCounter: TokenCounter;
  readonly logger: Logger;
  /** Clock (epoch ms); default Date.now. */
  readonly now?: () => number;
  /** Sessions scoring below this are skipped as low-value (default 0.12). */
  readonly minValue?: number;
  readonly limits?: ExtractionLimits;
}

export const SKIP_REASONS = ['empty', 'already-harvested', 'low-value'] as const;
export type SkipReason = (typeof SKIP_REASONS)[number];

export interface HarvestCounts {
  readonly examples: number;
  readonly recoveries: number;
  readonly markers: number;
  readonly knowledge: number;
  readonly patternCandidates: number;
  readonly promotedPatterns: number;
}

export interface HarvestResult {
  /** The id the session is stored under (see `storedSessionId`). */
  readonly sessionId: string;
  /** Set exactly when this call stored the session into a template. */
  readonly templateId?: string;
  /** The session joined an existing near-identical template. */
  readonly merged?: boolean;
  readonly value: ValueScore;
  readonly items: HarvestCounts;
  readonly redactions: RedactionFinding[];
  readonly skipped?: SkipReason;
}

const ZERO_COUNTS: HarvestCounts = { examples: 0, recoveries: 0, markers: 0, knowledge: 0, patternCandidates: 0, promotedPatterns: 0 };
const NO_VALUE: ValueScore = { score: 0, breakdown: {} };

/**
 * Keys whose string values are ids, hashes or enum values and are never redacted. A `category`
 * may be a tool name: those are redacted in the messages before extraction (redactToolNames).
 */
const KEEP_KEYS = new Set(['sessionId', 'fingerprint', 'outcome', 'taskType', 'kind', 'category']);

function collectStrings(value: unknown, out: string[], key?: string): void {
  if (typeof value === 'string') {
    if (key === undefined || !KEEP_KEYS.has(key)) out.push(value);
  } else if (Array.isArray(value)) for (const v of value) collectStrings(v, out);
  else if (typeof value === 'object' && value !== null) for (const [k, v] of Object.entries(value)) collectStrings(v, out, k);
}

function replaceStrings(value: unknown, next: () => string, key?: string): unknown {
  if (typeof value === 'string') return key === undefined || !KEEP_KEYS.has(key) ? next() : value;
  if (Array.isArray(value)) return value.map((v) => replaceStrings(v, next));
  if (typeof value === 'object' && value !== null) {
    const out: Record<string, unknown> = {};
    for (const [k, v] of Object.entries(value)) out[k] = replaceStrings(v, next, k);
    return out;
  }
  return value;
}

/** Redact every free-text string in a structure (one secretlint pass for all of them). */
export async function redactDeep<T>(value: T): Promise<{ value: T; findings: RedactionFinding[] }> {
  const strings: string[] = [];
  collectStrings(value, strings);
  const { texts, findings } = await redactAll(strings);
  let i = 0;
  const redacted = replaceStrings(value, () => texts[i++] ?? '') as T;
  return { value: redacted, findings };
}

/**
 * The id a session is stored and logged under: itself, or `sha1:<hash>` when the redaction
 * rules find anything in it (an id is never partly redacted, so ids stay unique).
 */
export function storedSessionId(sessionId: string): string {
  if (redactSync(sessionId).findings.length === 0) return sessionId;
  return `sha1:${sha1Hex(sessionId).slice(0, 20)}`;
}

/** Harvest one finished session into the template store. */
export async function harvestSession(input: HarvestInput, deps: HarvestDeps): Promise<HarvestResult> {
  const now = (deps.now ?? Date.now)();
  const log = deps.logger.child({ component: 'harvest' });
  let sessionId = storedSessionId(input.sessionId);
  const outcome = input.outcome ?? 'unknown';
  const messages = input.messages;
  const previous = deps.store.harvestedSession(sessionId);
  if (previous && previous.messageCount >= messages.length) {
    log.debug({ sessionId }, 'session already harvested');
    return { sessionId, value: NO_VALUE, items: ZERO_COUNTS, redactions: [], skipped: 'already-harvested' };
  }
  // The same content under another path or name counts once; a transcript that grew since an
  // earlier harvest (its hash is a prefix of ours) replaces that contribution: it is harvested
  // under the earlier session id, so it stays one session of the same template.
  const chain = contentHashChain(messages);
  const contentHash = chain[chain.length - 1] ?? '';
  const sameContent = deps.store.harvestedByContent(chain);
  if (sameContent && sameContent.sessionId !== sessionId) {
    if (sameContent.messageCount >= messages.length) {
      log.debug({ sessionId, sameAs: sameContent.sessionId }, 'transcript content already harvested');
      return { sessionId: sameContent.sessionId, value: NO_VALUE, items: ZERO_COUNTS, redactions: [], skipped: 'already-harvested' };
    }
    log.debug({ sessionId, grownFrom: sameContent.sessionId, messages: messages.length, before: sameContent.messageCount }, 'transcript grew since its harvest: replacing it');
    sessionId = sameContent.sessionId;
  }
  const safeId = sessionId;
  // Tool names become item categories (kept as they are below) and parts of item text: a key
  // in an MCP server's name (`mcp__<key>__query`) is redacted before anything is derived from them.
  const named = await redactToolNames(messages);
  const ex = extractSession(named.messages, input.meta ?? {}, deps.tokenCounter, deps.limits);
  if (ex.stats.userRequests === 0 && ex.stats.toolCalls === 0) {
    deps.store.recordSkipped(sessionId, messages.length, 0, 'empty', now, contentHash);
    log.info({ sessionId: safeId, messages: messages.length }, 'session skipped: nothing to harvest');
    return { sessionId, value: NO_VALUE, items: ZERO_COUNTS, redactions: [], skipped: 'empty' };
  }

  // Redact before anything else looks at the text (the novelty search included).
  const draft = {
    name: ex.name,
    task: ex.task,
    repo: ex.repo,
    systemDigest: ex.systemDigest,
    source: input.source ?? '',
    items: ex.items,
    knowledge: ex.knowledge,
    patterns: ex.patterns,
  };
  const deep = await redactDeep(draft);
  const clean = deep.value;
  const findings = mergeFindings(named.findings, deep.findings);

  const taskTerms = searchTerms(clean.task, 24);
  let similarity = 0;
  for (const hit of deps.store.search(taskTerms, 5)) {
    const t = deps.store.summaries([hit.templateId])[0];
    if (t) similarity = Math.max(similarity, jaccard(taskTerms, searchTerms(t.task, 24)));
  }
  const conversation = messages.filter((m) => (m.role === 'user' || m.role === 'assistant') && !m.injected).length;
  const value = scoreSession({
    conversationMessages: conversation,
    successfulCalls: ex.stats.successfulCalls,
    confirmedRecoveries: ex.recoveries.length,
    repoTemplates: deps.store.repoStats(clean.repo).templates,
    taskSimilarity: similarity,
    ageMs: ex.stats.lastTimestamp !== undefined ? now - ex.stats.lastTimestamp : 0,
    outcome,
  });
  const counts: HarvestCounts = {
    examples: clean.items.filter((i) => i.kind === 'example').length,
    recoveries: ex.recoveries.length,
    markers: clean.items.filter((i) => i.kind === 'marker').length,
    knowledge: clean.knowledge.length,
    patternCandidates: clean.patterns.length,
    promotedPatterns: 0,
  };
  const minValue = deps.minValue ?? 0.12;
  if (value.score < minValue) {
    deps.store.recordSkipped(sessionId, messages.length, value.score, 'low-value', now, contentHash);
    log.info({ sessionId: safeId, score: value.score, breakdown: value.breakdown }, 'session skipped: low value');
    return { sessionId, value, items: counts, redactions: findings, skipped: 'low-value' };
  }
  const templateInput: TemplateInput = {
    sessionId,
    source: clean.source,
    outcome,
    name: clean.name,
    taskType: ex.taskType,
    repo: clean.repo,
    task: clean.task,
    systemDigest: clean.systemDigest,
    fingerprint: ex.fingerprint,
    value,
    items: clean.items,
    knowledge: clean.knowledge,
    patterns: clean.patterns,
    messageCount: messages.length,
    contentHash,
    at: now,
  };
  const saved = deps.store.save(templateInput);
  const result: HarvestResult = {
    sessionId,
    templateId: saved.templateId,
    merged: saved.merged,
    value,
    items: { ...counts, promotedPatterns: saved.promotedPatterns },
    redactions: findings,
  };
  log.info(
    { sessionId: safeId, templateId: saved.templateId, merged: saved.merged, taskType: ex.taskType, score: value.score, items: result.items, redactions: findings },
    'session harvested',
  );
  return result;
}
