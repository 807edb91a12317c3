/**
 * Context markers (paths, URLs, repositories, commands) and session task type. Pure.
 */
import { hostedRepo, normalizeRepo, repoFromCwd } from '../store/repo.js';

export { repoFromCwd };
import type { Message } from '../model/messages.js';
import { classifyTaskText, extractPaths, extractUrls, relativePath, type TaskType } from '../text/index.js';
import type { ToolExchange } from './toolcalls.js';

export const MARKER_KINDS = ['path', 'url', 'repo', 'command'] as const;
export type MarkerKind = (typeof MARKER_KINDS)[number];

export interface Marker {
  readonly kind: MarkerKind;
  readonly value: string;
  readonly count: number;
}

const MARKER_LIMITS: Readonly<Record<MarkerKind, number>> = { path: 20, url: 8, repo: 3, command: 12 };

/** `owner/name` of a repository URL (https or scp-style), or the value itself. */
export const repoName = normalizeRepo;

class Counter {
  private readonly map = new Map<string, number>();
  add(v: string, n = 1): void {
    if (v.length === 0) return;
    this.map.set(v, (this.map.get(v) ?? 0) + n);
  }
  top(limit: number): [string, number][] {
    return [...this.map.entries()].sort((a, b) => b[1] - a[1] || a[0].localeCompare(b[0])).slice(0, limit);
  }
}

/** Markers of a session, most frequent first within each kind. */
export function extractMarkers(messages: readonly Message[], calls: readonly ToolExchange[], meta: { cwd?: string | undefined; repo?: string | undefined }): Marker[] {
  const counters: Record<MarkerKind, Counter> = { path: new Counter(), url: new Counter(), repo: new Counter(), command: new Counter() };
  const cwd = meta.cwd;
  if (meta.repo) counters.repo.add(repoName(meta.repo), 3);
  for (const c of calls) {
    if (c.rejected) continue;
    if ((c.kind === 'read' || c.kind === 'edit') && c.salient.length > 0 && !c.isError) counters.path.add(relativePath(c.salient, cwd), c.kind === 'edit' ? 2 : 1);
    if (c.kind === 'shell' && !c.isError && c.salient.length > 0) counters.command.add(c.salient);
    if (c.kind === 'web' && /^https?:\/\//.test(c.salient)) counters.url.add(c.salient);
  }
  for (const m of messages) {
    if (m.role !== 'user' || m.injected || m.isSummary) continue;
    const text = m.text.slice(0, 20_000);
    for (const url of extractUrls(text)) {
      counters.url.add(url);
      const repo = hostedRepo(url);
      if (repo) counters.repo.add(repo);
    }
    // a path a user names: one with a directory (bare file names are too ambiguous here)
    for (const p of extractPaths(text)) if (p.includes('/')) counters.path.add(relativePath(p, cwd));
  }
  const out: Marker[] = [];
  for (const kind of Object.keys(counters) as MarkerKind[]) {
    for (const [value, count] of counters[kind].top(MARKER_LIMITS[kind])) out.push({ kind, value, count });
  }
  return out;
}

const CODE_EXT = /\.(ts|tsx|js|jsx|mjs|cjs|py|rs|go|java|kt|scala|c|h|cc|cpp|hpp|cs|rb|php|swift|m|sh|bash|zsh|vue|svelte|css|scss|html|sql|lua|dart|ex|exs|zig|toml|gradle)$/i;
const TEST_OR_BUILD = /\b(test|tests|pytest|jest|vitest|mocha|build|tsc|compile|lint|eslint|check|cargo|make|go|gradle|mvn|typecheck|ruff|mypy)\b/;
const FILE_COMMANDS = /^(mv|cp|mkdir|rm|rmdir|touch|tar|zip|unzip|rsync|chmod|chown|ln|find|du|df|convert|ffmpeg|pandoc)$/;

/**
 * Task type of a finished session from what its tools did: code edits and build/test runs →
 * code; file moves and edits of non-code files → file; web/search/read without edits →
 * research. A clear majority (≥ 60 %) wins, else mixed; without tool calls, the task text decides.
 */
export function classifySession(calls: readonly ToolExchange[], taskText: string): TaskType {
  let code = 0;
  let file = 0;
  let research = 0;
  for (const c of calls) {
    if (c.rejected) continue;
    if (c.kind === 'edit') {
      if (CODE_EXT.test(c.salient)) code += 2;
      else file += 2;
    } else if (c.kind === 'shell') {
      const prog = c.salient.split(' ')[0] ?? '';
      if (FILE_COMMANDS.test(prog)) file += 1;
      else if (TEST_OR_BUILD.test(c.salient)) code += 1.5;
      else code += 0.5;
    } else if (c.kind === 'web') research += 1.5;
    else if (c.kind === 'read' || c.kind === 'search') {
      if (CODE_EXT.test(c.salient)) code += 0.5;
      else research += 0.5;
    }
  }
  const total = code + file + research;
  if (total < 2) return classifyTaskText(taskText);
  const ranked = [
    { t: 'code' as const, n: code },
    { t: 'file' as const, n: file },
    { t: 'research' as const, n: research },
  ].sort((a, b) => b.n - a.n);
  const top = ranked[0];
  return top && top.n / total >= 0.6 ? top.t : 'mixed';
}
