/**
 * Template selection for a task: BM25 over the templates' text (SQLite FTS5), a task-type
 * match, a repo boost and a little of the harvest value; ties broken by success rate. The
 * requested repo's best template always comes first. When the request names a
 * repo, a template of another repo (or of no known repo) is returned only if its relevance to
 * the prompt — the share of the prompt's key terms found in its name and task — clears
 * `otherRepoFloor` (default OTHER_REPO_FLOOR): a task-type match alone never brings another
 * repo's files and commands into a bootstrap.
 */
import { normalizeRepo, repoForLookup } from '../store/repo.js';
import type { TemplateSummary } from '../store/templates.js';
import type { TemplateSource } from './source.js';
import { searchTerms } from '../text/words.js';
import { classifyTaskText, type TaskType } from '../text/tasks.js';

export interface SelectionQuery {
  readonly task: string;
  readonly repo?: string | undefined;
}

export interface SelectionOptions {
  /** Templates returned at most (default 3). */
  readonly maxTemplates?: number;
  /** Candidates below this score are dropped (default 0.12). */
  readonly minScore?: number;
  /** With a requested repo: least prompt relevance (0–1) of another repo's template (default OTHER_REPO_FLOOR). */
  readonly otherRepoFloor?: number;
}

/** Default least share of the prompt's key terms that another repo's template must contain. */
export const OTHER_REPO_FLOOR = 0.4;

/** Key terms of a prompt considered for relevance. */
const RELEVANCE_TERMS = 24;

/** Share of the prompt's key terms that occur among the template's name and task terms (0–1). */
export function promptRelevance(promptTerms: readonly string[], template: Pick<TemplateSummary, 'name' | 'task'>): number {
  if (promptTerms.length === 0) return 0;
  const own = new Set(searchTerms(`${template.name}\n${template.task}`, 64));
  return promptTerms.filter((t) => own.has(t)).length / promptTerms.length;
}

export interface ScoredTemplate {
  readonly template: TemplateSummary;
  readonly score: number;
  readonly parts: { readonly lexical: number; readonly type: number; readonly repo: number; readonly value: number };
  /** Share of the prompt's key terms in the template's name and task (see promptRelevance). */
  readonly relevance: number;
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
export function selectTemplates(store: TemplateSource, query: SelectionQuery, options: SelectionOptions = {}): { taskType: TaskType; ranked: ScoredTemplate[] } {
  const taskType = classifyTaskText(query.task);
  const repo = query.repo ? repoForLookup(query.repo) : undefined;
  const terms = searchTerms(query.task, 64);
  const keyTerms = terms.slice(0, RELEVANCE_TERMS);
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
    return { template: t, score: Math.round(score * 1e6) / 1e6, parts, relevance: promptRelevance(keyTerms, t) };
  });
  scored.sort(
    (a, b) =>
      b.score - a.score ||
      b.template.successRate - a.template.successRate ||
      b.template.valueScore - a.template.valueScore ||
      // Code-unit order, not localeCompare: the first localeCompare builds an ICU collator
      // (~20 ms), which the hook's daemon-down bootstrap would pay on every run. Ids are
      // `t-<hex>`, ordered the same either way.
      (a.template.id < b.template.id ? -1 : a.template.id > b.template.id ? 1 : 0),
  );
  const minScore = options.minScore ?? 0.12;
  const max = options.maxTemplates ?? 3;
  const floor = options.otherRepoFloor ?? OTHER_REPO_FLOOR;
  const admissible = (s: ScoredTemplate): boolean => s.score >= minScore && (repo === undefined || s.parts.repo > 0 || s.relevance >= floor);
  const ranked = scored.filter(admissible).slice(0, max);
  // The requested repo's own best template always gets the first seat: its files and commands
  // are what a new session there needs first, even when another repo's task reads more alike.
  const ownRepo = scored.find((s) => s.parts.repo > 0);
  if (ownRepo) {
    const at = ranked.indexOf(ownRepo);
    if (at >= 0) ranked.splice(at, 1);
    else if (ranked.length >= max) ranked.pop();
    ranked.unshift(ownRepo);
  }
  return { taskType, ranked };
}
