/**
 * One spelling of a repository, used both when templates are stored (harvest) and when they
 * are looked up (warm): `owner/name` for hosted URLs (https or scp-style, `.git` dropped),
 * else the value without `.git` or trailing slashes.
 */
const HOSTED = /\b(?:github\.com|gitlab\.com|bitbucket\.org)[/:]([\w.-]+\/[\w.-]+?)(?:\.git)?(?=[/\s"'`)#?]|$)/;

/** The `owner/name` a hosted-repository URL names, if it names one. */
export function hostedRepo(url: string): string | undefined {
  return HOSTED.exec(url)?.[1];
}

/** The stored spelling of a repository (see the module comment). */
export function normalizeRepo(repo: string): string {
  return hostedRepo(repo) ?? repo.replace(/\.git$/, '').replace(/\/+$/, '');
}

/** Folder names that say where in a project a session ran, not which project it is. */
const GENERIC_DIRS = new Set(
  'test tests spec specs src lib libs app apps packages pkg scripts docs doc bin build dist out tmp temp examples example e2e fixtures worktrees workspace workspaces work projects project code repos repo dev home users root private var mnt'.split(' '),
);

/**
 * The project a working directory names: its innermost folder that is not a generic one
 * (`…/claude-code-log/test` → `claude-code-log`), ignoring the home folder and anything from a
 * hidden folder down (`…/app/.claude/worktrees/agent-1a2b` → `app`'s project); '' when
 * nothing is left (`/home/user/project`).
 */
export function repoFromCwd(cwd: string): string {
  const parts = cwd.split(/[\\/]+/).filter((p) => p.length > 0);
  const start = (parts[0] === 'home' || parts[0] === 'Users') && parts.length > 1 ? 2 : parts[0] === 'root' ? 1 : 0;
  const hidden = parts.findIndex((p, i) => i >= start && p.startsWith('.'));
  for (let i = (hidden >= 0 ? hidden : parts.length) - 1; i >= start; i--) {
    const p = parts[i] ?? '';
    if (!GENERIC_DIRS.has(p.toLowerCase()) && !/^agent-[0-9a-f]{6,}$/i.test(p)) return p;
  }
  return '';
}

/**
 * The spelling to look templates up by, for what an agent or user names a repository with: a
 * hosted URL or a name as stored (`normalizeRepo`), or a working directory — an absolute path —
 * named the way harvest names the project of a session's cwd (`repoFromCwd`).
 */
export function repoForLookup(value: string): string {
  if (hostedRepo(value) === undefined && /^(?:\/|[A-Za-z]:[\\/])/.test(value)) return repoFromCwd(value) || normalizeRepo(value);
  return normalizeRepo(value);
}
