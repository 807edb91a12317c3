/**
 * warm.bootstrap: pick templates for a task and render them within a token budget;
 * recordOutcome: feed back how the bootstrapped session went.
 */
import type { TokenCounter } from '../model/tokens.js';
import type { Outcome, Template, TemplateStore } from '../store/templates.js';
import type { TemplateSource } from './source.js';
import type { TaskType } from '../text/tasks.js';
import type { Logger } from '../util/logger.js';
import { ContextdError, ErrorCode } from '../util/errors.js';
import { renderBootstrap, type RenderedMessage } from './render.js';
import { selectTemplates, type SelectionOptions } from './select.js';
import { repoForLookup } from '../store/repo.js';

export const DEFAULT_BOOTSTRAP_BUDGET = 2000;

export interface BootstrapRequest {
  readonly task: string;
  readonly repo?: string | undefined;
  /** Token budget of the returned messages (default 2000). */
  readonly budgetTokens?: number | undefined;
}

export interface WarmDeps {
  /** The template store, or the warm snapshot the hook reads when the daemon is down. */
  readonly store: TemplateSource;
  readonly tokenCounter: TokenCounter;
  readonly logger?: Logger;
  /** Clock (epoch ms) for confidence decay; default Date.now. */
  readonly now?: () => number;
  readonly selection?: SelectionOptions;
}

export interface BootstrapResult {
  readonly templateIds: string[];
  readonly messages: RenderedMessage[];
  readonly tokens: number;
  readonly taskType: TaskType;
  /** Why each template was picked (scores), for `--json` and logs. */
  readonly candidates: { id: string; name: string; score: number }[];
}

function checkBudget(budget: number): number {
  if (!Number.isInteger(budget) || budget <= 0) throw new ContextdError(ErrorCode.USAGE, `budgetTokens must be a positive integer, got ${String(budget)}`);
  return budget;
}

/** Messages that warm-start an agent on `task`, at most `budgetTokens` tokens. */
export function bootstrap(request: BootstrapRequest, deps: WarmDeps): BootstrapResult {
  const budgetTokens = checkBudget(request.budgetTokens ?? DEFAULT_BOOTSTRAP_BUDGET);
  const now = (deps.now ?? Date.now)();
  const { taskType, ranked } = selectTemplates(deps.store, { task: request.task, repo: request.repo }, deps.selection);
  const templates = ranked.map((r) => deps.store.get(r.template.id, now)).filter((t): t is Template => t !== undefined);
  const repo = request.repo ? repoForLookup(request.repo) : undefined;
  const ids = templates.map((t) => t.id);
  const rendered = renderBootstrap(
    { templates, knowledge: deps.store.knowledgeFor(ids, repo, now), patterns: deps.store.patterns(repo), budgetTokens, repo },
    deps.tokenCounter,
  );
  deps.logger?.child({ component: 'warm' }).debug({ taskType, templates: rendered.templateIds, tokens: rendered.tokens, budgetTokens }, 'bootstrap rendered');
  return {
    templateIds: rendered.templateIds,
    messages: rendered.messages,
    tokens: rendered.tokens,
    taskType,
    candidates: ranked.map((r) => ({ id: r.template.id, name: r.template.name, score: r.score })),
  };
}

/** The messages ONE template would add for a task (CLI `warm test ID "task"`). */
export function testTemplate(templateId: string, request: BootstrapRequest, deps: WarmDeps): Omit<BootstrapResult, 'candidates' | 'taskType'> {
  const budgetTokens = checkBudget(request.budgetTokens ?? DEFAULT_BOOTSTRAP_BUDGET);
  const now = (deps.now ?? Date.now)();
  const t = deps.store.get(templateId, now);
  if (!t) throw new ContextdError(ErrorCode.UNKNOWN_TEMPLATE, `no template ${templateId}`, { templateId });
  const repo = request.repo ? repoForLookup(request.repo) : undefined;
  const rendered = renderBootstrap({ templates: [t], knowledge: t.knowledge, patterns: deps.store.patterns(repo ?? t.repo), budgetTokens, repo }, deps.tokenCounter);
  return { templateIds: rendered.templateIds, messages: rendered.messages, tokens: rendered.tokens };
}

/**
 * Feed back the outcome of a session that was bootstrapped with `templateIds`
 * (the daemon calls this on session.end). Returns how many templates were updated.
 */
export function recordOutcome(templateIds: readonly string[], outcome: Outcome, deps: { readonly store: Pick<TemplateStore, 'recordOutcome'>; readonly logger?: Logger }): number {
  const n = deps.store.recordOutcome(templateIds, outcome);
  deps.logger?.child({ component: 'warm' }).info({ templates: templateIds.length, updated: n, outcome }, 'template outcome recorded');
  return n;
}
