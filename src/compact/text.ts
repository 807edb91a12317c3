/**
 * Text fact extraction shared by detectors, summarizers and the survival check.
 * All functions are pure and deterministic.
 */

/** Lowercase, collapse whitespace. */
export function normalizeSpace(text: string): string {
  return text.toLowerCase().replace(/\s+/g, ' ').trim();
}

const URL_RE = /\bhttps?:\/\/[^\s)'"`<>\]]+/g;
/** A path: at least one `/` between name segments, or a bare file name with a known extension. */
const PATH_RE =
  /(?:^|[\s'"`(\[=:,])((?:~|\.{1,2})?\/?(?:[\w.@+-]+\/)+[\w.@+-]*[\w@+-]|[\w@+-][\w.@+-]*\.(?:ts|tsx|js|jsx|mjs|cjs|py|rb|go|rs|java|kt|c|h|cc|cpp|hpp|cs|php|sh|bash|zsh|md|txt|json|jsonl|yaml|yml|toml|ini|cfg|conf|env|lock|sql|html|css|scss|vue|svelte|xml|csv|ipynb|proto|gradle|swift|dart|lua|pl|r))(?=$|[\s'"`)\],:;]|\.(?:\s|$))/gm;

/** URLs in order of appearance, deduplicated. */
export function extractUrls(text: string): string[] {
  return uniq([...text.matchAll(URL_RE)].map((m) => m[0].replace(/[.,;:]+$/, '')));
}

/** File paths in order of appearance, deduplicated (URLs excluded). */
export function extractPaths(text: string): string[] {
  const stripped = text.replace(URL_RE, ' ');
  const out: string[] = [];
  for (const m of stripped.matchAll(PATH_RE)) {
    const p = m[1];
    if (!p || p.length < 3 || p.length > 200) continue;
    if (/^\d+(\.\d+)*$/.test(p) || /^\/+$/.test(p)) continue; // versions, bare slashes
    if (/^[\d/.-]+$/.test(p)) continue; // dates like 2025/11/17
    out.push(p);
  }
  return uniq(out);
}

const KV_LINE_RE = /^\s*(?:[-*•]\s*)?["']?([A-Za-z_][\w.-]{0,60})["']?\s*(=|:)\s*(\S.{0,100})$/;
const KV_INLINE_RE = /\b([A-Za-z_][\w.-]{1,60})\s?=\s?("[^"\n]{0,80}"|'[^'\n]{0,80}'|[^\s,;)]{1,80})/g;

/** A configuration value found in text: the key and the exact source fragment. */
export interface ConfigValue {
  readonly key: string;
  readonly text: string;
}

/**
 * `key = value` and `key: value` facts: whole lines shaped like config entries, and inline
 * `key=value` pairs in prose. Values must carry a digit, a quote, a path-ish or a constant-ish
 * token so that ordinary prose ("Note: see below") is not taken for config.
 */
export function extractConfigValues(text: string): ConfigValue[] {
  const out: ConfigValue[] = [];
  const seen = new Set<string>();
  const push = (key: string, frag: string): void => {
    const t = frag.trim().replace(/[,;]$/, '');
    if (t.length > 140 || seen.has(t)) return;
    seen.add(t);
    out.push({ key, text: t });
  };
  for (const line of text.split('\n')) {
    const m = KV_LINE_RE.exec(line);
    if (m && m[1] && m[3] && looksLikeValue(m[3], m[2] === '=')) {
      push(m[1], line.trim().replace(/^[-*•]\s*/, ''));
      continue;
    }
    for (const im of line.matchAll(KV_INLINE_RE)) {
      if (im[1] && im[2] && looksLikeValue(im[2], true)) push(im[1], im[0].replace(/[.,;:]+$/, ''));
    }
  }
  return out;
}

function looksLikeValue(v: string, isAssign: boolean): boolean {
  const s = v.trim();
  if (s.length === 0 || s.length > 100) return false;
  // code, not config: a call, an opening bracket, an arrow
  if (!/^["']/.test(s) && (/[([{]$/.test(s) || /[\w\])]\(/.test(s) || /=>/.test(s))) return false;
  if (/\d/.test(s) || /^["']/.test(s) || /^(true|false|null|none|yes|no|on|off)$/i.test(s)) return true;
  if (/[/\\.]/.test(s) && !/\s/.test(s)) return true;
  if (isAssign && !/\s/.test(s)) return true;
  return /^[A-Z0-9_-]{2,}$/.test(s);
}

const EXCEPTION_RE =
  /^\s*(?:Traceback \(most recent call last\)|(?:[A-Za-z_$][\w$.]*\.)?[A-Z][\w$]*(?:Error|Exception|Fault|Panic|Failure)\b(?::|\s*\(|$)|(?:Uncaught |Unhandled )?(?:Error|error|ERROR|fatal|FATAL|panic|FAIL(?:ED)?|E\s{2,}\S|npm ERR!|error\[E\d+\]|error TS\d+)[:!\s])/;

/** Lines that state an exception, error or failure. */
export function extractErrorLines(text: string): string[] {
  const out: string[] = [];
  for (const line of text.split('\n')) {
    if (line.length > 400) continue;
    if (EXCEPTION_RE.test(line) && !/^\s*Traceback/.test(line)) out.push(line.trim());
    else if (/\b(?:exit code|exit status|exited with(?: code| status)?|non-zero exit status)\s*:?\s*[1-9]\d*/i.test(line)) out.push(line.trim());
  }
  return uniq(out);
}

const FRAME_RES = [
  /^\s*at\s+(?:.*?\()?((?:[A-Za-z]:)?[^\s()]+?):\d+(?::\d+)?\)?\s*$/, // JS
  /^\s*File "([^"]+)", line \d+/, // Python
  /^\s*at\s+[\w$.<>]+\(([\w$.-]+):\d+\)\s*$/, // Java
  /^\s*\d+:\s+\S.*$/, // Rust backtrace
  /^\s*from\s+([^\s:]+):\d+/, // Ruby
  /^\s*#\d+\s+.*?\s+at\s+(\S+):\d+/, // gdb-style
];

/** True when the line is one stack frame. */
export function isFrameLine(line: string): boolean {
  return FRAME_RES.some((re) => re.test(line));
}

/** The file a frame line points at ('' if unknown). */
export function frameFile(line: string): string {
  for (const re of FRAME_RES) {
    const m = re.exec(line);
    if (m) return m[1] ?? '';
  }
  return '';
}

const FOREIGN_FRAME_RE = /node_modules|site-packages|dist-packages|node:internal|\binternal\/|<frozen|\/usr\/lib\/|\/lib\/python\d|^java\.|^sun\.|^jdk\.|\.cargo\/registry|\/rustc\/|<anonymous>|^native$/;

/** True when the frame is in project code (not a dependency, the runtime or the stdlib). */
export function isProjectFrame(line: string): boolean {
  const file = frameFile(line);
  if (!file) return false;
  return !FOREIGN_FRAME_RE.test(file) && !FOREIGN_FRAME_RE.test(line);
}

/** Number of stack-frame lines in the text. */
export function countFrames(text: string): number {
  let n = 0;
  for (const line of text.split('\n')) if (isFrameLine(line)) n++;
  return n;
}

const CONSTRAINT_RE = /\b(must|never|always|do not|don't|dont|should not|shouldn't|must not|mustn't|required|make sure|ensure|only use|avoid)\b/i;

/** Sentences that state a constraint ("must", "never", "always", "do not" …). */
export function extractConstraints(text: string): string[] {
  return uniq(sentences(text).filter((s) => CONSTRAINT_RE.test(s) && s.length <= 300));
}

/** Split prose into sentences and lines (code fences are left as lines). */
export function sentences(text: string): string[] {
  return text
    .split(/\n+|(?<=[.!?])\s+(?=[A-Z`"'(\[])/)
    .map((s) => s.trim())
    .filter((s) => s.length > 0);
}

/** The last `n` sentences of a text (its conclusion). */
export function lastSentences(text: string, n: number): string[] {
  const all = sentences(text).filter((s) => !/^[`~]{3}/.test(s));
  return all.slice(Math.max(0, all.length - n));
}

const IDENT_RE = /\b(?:[A-Za-z_$][\w$]*(?:\.[A-Za-z_$][\w$]*)+|[a-z][a-z0-9]*(?:[A-Z][a-z0-9]*)+|[A-Za-z][A-Za-z0-9]*_[\w]+|[A-Z][a-z0-9]+(?:[A-Z][a-z0-9]*)+)\b/g;

/** Code identifiers: camelCase, snake_case, PascalCase compounds, dotted names. */
export function extractIdentifiers(text: string): string[] {
  return uniq([...text.matchAll(IDENT_RE)].map((m) => m[0]).filter((s) => s.length >= 4 && s.length <= 80));
}

const STOP = new Set(
  'this that with from have will would could should there their them then than what when where which while your about into also just like make more most only other over some such they very been were does done using used after before because these those here each file line lines need want please thanks okay sure let lets going think know into onto upon'.split(' '),
);

/** Lowercased content words (≥ 4 chars, stop words removed) and identifiers of a text. */
export function termsOf(text: string): Set<string> {
  const out = new Set<string>();
  const re = /[a-z_$][\w$.-]{3,60}/g;
  const lower = text.toLowerCase();
  for (let m = re.exec(lower); m !== null; m = re.exec(lower)) {
    const raw = m[0];
    let end = raw.length;
    while (end > 0 && (raw.charCodeAt(end - 1) === 46 || raw.charCodeAt(end - 1) === 45)) end--; // trailing . and -
    if (end < 4) continue;
    const w = end === raw.length ? raw : raw.slice(0, end);
    if (!STOP.has(w)) out.add(w);
  }
  return out;
}

/** Deduplicate keeping first occurrence. */
export function uniq<T>(xs: readonly T[]): T[] {
  return [...new Set(xs)];
}

/** Clip a string to `max` chars on a word boundary, marking the cut. */
export function clip(text: string, max: number): string {
  if (text.length <= max) return text;
  const cut = text.slice(0, Math.max(0, max - 1));
  const sp = cut.lastIndexOf(' ');
  return `${sp > max * 0.6 ? cut.slice(0, sp) : cut}…`;
}

/** 64-bit FNV-1a as 16 hex digits: stable ids and handles without node:crypto. */
export function fnv1a64(text: string): string {
  let h = 0xcbf29ce484222325n;
  const prime = 0x100000001b3n;
  const mask = 0xffffffffffffffffn;
  for (let i = 0; i < text.length; i++) {
    h ^= BigInt(text.charCodeAt(i));
    h = (h * prime) & mask;
  }
  return h.toString(16).padStart(16, '0');
}

/** Jaccard similarity of two sets. */
export function jaccard<T>(a: ReadonlySet<T>, b: ReadonlySet<T>): number {
  if (a.size === 0 && b.size === 0) return 1;
  let inter = 0;
  const [small, large] = a.size <= b.size ? [a, b] : [b, a];
  for (const x of small) if (large.has(x)) inter++;
  return inter / (a.size + b.size - inter);
}
