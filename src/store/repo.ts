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
