/**
 * Template selection for a task: BM25 over the templates' text (SQLite FTS5), a task-type
 * match, a repo boost and a little of the harvest value; ties broken by success rate. The
 * requested repo's best template is always among those returned.
 */
import { normalizeRepo } from '../store/repo.js';
import type { TemplateStore, TemplateSummary } from '../store/templates.js';
import { classifyTaskText, searchTerms, type TaskType } from '../text/index.js';

export interface SelectionQuery {
  readonly task: string;
  readonly repo?: string | undefined;
}

export interface SelectionOptions {
  /** Templates returned at most (default 3). */
  readonly maxTemplates?: number;
  /** Candidates below this score are dropped (default 0.12). */
  readonly minScore?: number;
}

export interface ScoredTemplate {
  readonly template: TemplateSummary;
  readonly score: number;
  readonly parts: { readonly lexical: number; readonly type: number; readonly repo: number; readonly value: number };
}

export const SELECTION_WEIGHTS = { lexical: 0.45, type: 0.15, repo: 0.35, value: 0.05 } as const;

/** `owner/name` of a repository URL or slug: the same spelling harvest stores. */
export { normalizeRepo };

/** The repository's own name (`acme/contextd` → `contextd`). */
export function repoShortName(repo: string): string {
  return repo.split('/').filter((p) => p.length > 0).pop() ?? repo;
}

function typeMatch(a: TaskType, b: TaskType): number {
  if (a === b) return 1;
  return a === 'mixed' || b === 'mixed' ? 0.5 : 0;
}

/** Rank templates for a task; best first. */
export function selectTemplates(store: TemplateStore, query: SelectionQuery, options: SelectionOptions = {}): { taskType: TaskType; ranked: ScoredTemplate[] } {
  const taskType = classifyTaskText(query.task);
  const repo = query.repo ? normalizeRepo(query.repo) : undefined;
  const terms = searchTerms(query.task, 64);
  const hits = store.search(terms, 60);
  const maxRank = hits.reduce((m, h) => Math.max(m, h.rank), 0);
  const lexical = new Map<string, number>(hits.map((h) => [h.templateId, maxRank > 0 ? h.rank / maxRank : 0]));
  const ids = new Set<string>(lexical.keys());
  const name = repo ? repoShortName(repo) : undefined;
  if (name) for (const t of store.list({ repoName: name, limit: 20 })) ids.add(t.id);
  if (ids.size === 0) for (const t of store.list({ taskType, limit: 20 })) ids.add(t.id);
  const scored: ScoredTemplate[] = store.summaries([...ids]).map((t) => {
    const parts = {
      lexical: lexical.get(t.id) ?? 0,
      type: typeMatch(taskType, t.taskType),
      repo: repo === undefined || t.repo === '' ? 0 : t.repo === repo ? 1 : repoShortName(t.repo) === name ? 0.8 : 0,
      value: t.valueScore,
    };
    const score =
      SELECTION_WEIGHTS.lexical * parts.lexical + SELECTION_WEIGHTS.type * parts.type + SELECTION_WEIGHTS.repo * parts.repo + SELECTION_WEIGHTS.value * parts.value;
    return { template: t, score: Math.round(score * 1e6) / 1e6, parts };
  });
  scored.sort(
    (a, b) =>
      b.score - a.score ||
      b.template.successRate - a.template.successRate ||
      b.template.valueScore - a.template.valueScore ||
      a.template.id.localeCompare(b.template.id),
  );
  const minScore = options.minScore ?? 0.12;
  const max = options.maxTemplates ?? 3;
  const ranked = scored.filter((s) => s.score >= minScore).slice(0, max);
  // The requested repo's own best template always gets a seat: its files and commands are
  // what a new session there needs first, even when another repo's task reads more alike.
  const ownRepo = scored.find((s) => s.parts.repo > 0);
  if (ownRepo && !ranked.some((s) => s.parts.repo > 0)) {
    if (ranked.length >= max) ranked.pop();
    ranked.push(ownRepo);
  }
  return { taskType, ranked };
}
