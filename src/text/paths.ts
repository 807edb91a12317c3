/** Paths and URLs named in text. Pure. */
import { uniq } from './prose.js';

const URL_RE = /\bhttps?:\/\/[^\s)'"`<>\]}]+/g;
const CODE_EXT =
  'ts|tsx|js|jsx|mjs|cjs|py|rb|go|rs|java|kt|c|h|cc|cpp|hpp|cs|php|sh|bash|zsh|md|txt|json|jsonl|yaml|yml|toml|ini|cfg|conf|env|lock|sql|html|css|scss|vue|svelte|xml|csv|ipynb|proto|gradle|swift|dart|lua|pl|r';
/** A path: at least one `/` between name segments, or a bare file name with a known extension. */
const PATH_RE = new RegExp(
  `(?:^|[\\s'"\`(\\[=:,])((?:~|\\.{1,2})?\\/?(?:[\\w.@+-]+\\/)+[\\w.@+-]*[\\w@+-]\\/?|[\\w@+-][\\w.@+-]*\\.(?:${CODE_EXT}))(?=$|[\\s'"\`)\\],:;]|\\.(?:\\s|$))`,
  'gm',
);
/** The last segment carries a file extension (`.ts`, `.min.js`, `.Dockerfile` is not one). */
const HAS_EXT = /\.[A-Za-z0-9]{1,10}$/;

/** URLs in order of appearance, deduplicated, without trailing punctuation. */
export function extractUrls(text: string): string[] {
  return uniq([...text.matchAll(URL_RE)].map((m) => m[0].replace(/[.,;:]+$/, '')));
}

/**
 * True when `p` reads as a file-system path rather than a fragment of prose or code: it is
 * rooted (`/`, `~/`, `./`, `../`), or names a file (an extension), or has two or more `/`
 * between lowercase-ish segments. `text/lyrics`, `X/Twitter`, `and/or`, `2025/11/17` and
 * versions are not paths.
 */
export function isPathLike(p: string): boolean {
  if (p.length < 3 || p.length > 200) return false;
  if (/^[\d/.-]+$/.test(p) || /^\/+$/.test(p)) return false; // versions, dates, bare slashes
  const rooted = /^(?:~|\.{1,2})?\//.test(p);
  const segs = p.replace(/^(?:~|\.{1,2})?\/+/, '').replace(/\/$/, '').split('/');
  const last = segs[segs.length - 1] ?? '';
  if (!p.includes('/')) return HAS_EXT.test(last);
  if (rooted) return segs.every((s) => s.length > 0);
  if (HAS_EXT.test(last) && !/^\d+$/.test(last.replace(/\..*$/, ''))) return true;
  // unrooted, no extension: a directory path needs ≥ 3 segments, none capitalised prose
  return segs.length >= 3 && segs.every((s) => /^[a-z0-9_.@+-]+$/.test(s));
}

/** File paths in order of appearance, deduplicated (URLs excluded, fragments rejected). */
export function extractPaths(text: string): string[] {
  const stripped = text.replace(URL_RE, ' ');
  const out: string[] = [];
  for (const m of stripped.matchAll(PATH_RE)) {
    const p = m[1];
    if (p && isPathLike(p)) out.push(p);
  }
  return uniq(out);
}

/** Canonical form of a path for comparing reads and writes (strips `./`, quotes, trailing `/`). */
export function canonicalPath(p: string): string {
  return p.replace(/^['"]|['"]$/g, '').replace(/^\.\//, '').replace(/\/+$/, '');
}

/** True when two canonical paths name the same file (one may be relative to the other's root). */
export function samePath(a: string, b: string): boolean {
  if (a === b) return true;
  const [s, l] = a.length <= b.length ? [a, b] : [b, a];
  return !s.startsWith('/') && s.includes('/') ? l.endsWith(`/${s}`) : false;
}

/** Make a path relative to `cwd` when it lies under it. */
export function relativePath(path: string, cwd: string | undefined): string {
  if (cwd && cwd.length > 1 && path.startsWith(`${cwd.replace(/\/$/, '')}/`)) return path.slice(cwd.replace(/\/$/, '').length + 1);
  return path;
}
