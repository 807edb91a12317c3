/** Identifiers and configuration values named in text. Pure. */
import { uniq } from './prose.js';

const IDENT_RE = /\b(?:[A-Za-z_$][\w$]*(?:\.[A-Za-z_$][\w$]*)+|[a-z][a-z0-9]*(?:[A-Z][a-z0-9]*)+|[A-Za-z][A-Za-z0-9]*_[\w]+|[A-Z][a-z0-9]+(?:[A-Z][a-z0-9]*)+)\b/g;

/** Code identifiers: camelCase, snake_case, PascalCase compounds, dotted names. */
export function extractIdentifiers(text: string): string[] {
  return uniq([...text.matchAll(IDENT_RE)].map((m) => m[0]).filter((s) => s.length >= 4 && s.length <= 80));
}

const KV_LINE_RE = /^\s*(?:[-*•]\s*)?["']?([A-Za-z_][\w.-]{0,60})["']?\s*(=|:)\s*(\S.{0,100})$/;
const KV_INLINE_RE = /\b([A-Za-z_][\w.-]{1,60})\s?(?<![=!<>])=(?!=)\s?("[^"\n]{0,80}"|'[^'\n]{0,80}'|[^\s,;)]{1,80})/g;

/** A configuration value found in text: the key and the exact source fragment. */
export interface ConfigValue {
  readonly key: string;
  readonly text: string;
}

/**
 * `key = value` and `key: value` facts: whole lines shaped like config entries, and inline
 * `key=value` pairs in prose. Values must carry a digit, a quote, a path-ish or a constant-ish
 * token so that ordinary prose ("Note: see below") is not taken for config; comparisons
 * (`a === b`, `x == 1`, `i <= n`) and code are not values.
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
    // both patterns need a `=` (the line one may take a `:`): most lines have neither
    const assigns = line.includes('=');
    if (!assigns && !line.includes(':')) continue;
    const m = KV_LINE_RE.exec(line);
    if (m && m[1] && m[3] && !/^[=<>!]/.test(m[3]) && looksLikeValue(m[3], m[2] === '=')) {
      push(m[1], line.trim().replace(/^[-*•]\s*/, ''));
      continue;
    }
    if (!assigns) continue;
    for (const im of line.matchAll(KV_INLINE_RE)) {
      if (im[1] && im[2] && looksLikeValue(im[2], true)) push(im[1], im[0].replace(/[.,;:]+$/, ''));
    }
  }
  return out;
}

function looksLikeValue(v: string, isAssign: boolean): boolean {
  const s = v.trim();
  if (s.length === 0 || s.length > 100) return false;
  if (/^[=<>!]/.test(s)) return false; // a comparison, not an assignment
  // code, not config: a call, an opening bracket, an arrow
  if (!/^["']/.test(s) && (/[([{]$/.test(s) || /[\w\])]\(/.test(s) || /=>/.test(s))) return false;
  if (/\d/.test(s) || /^["']/.test(s) || /^(true|false|null|none|yes|no|on|off)$/i.test(s)) return true;
  if (/[/\\.]/.test(s) && !/\s/.test(s)) return true;
  if (isAssign && !/\s/.test(s)) return true;
  return /^[A-Z0-9_-]{2,}$/.test(s);
}

/**
 * The readable text of a JSON tool result: its string fields (`output`, `error`, `stderr`,
 * `message`, …) decoded and joined by newlines, so error lines inside `"…\nImportError: …"`
 * become lines again. Text that is not a JSON object comes back unchanged.
 */
export function jsonResultText(text: string): string {
  const t = text.trimStart();
  if (!t.startsWith('{') || t.length > 2_000_000) return text;
  let v: unknown;
  try {
    v = JSON.parse(t);
  } catch {
    return text;
  }
  if (typeof v !== 'object' || v === null || Array.isArray(v)) return text;
  const parts: string[] = [];
  const walk = (x: unknown, depth: number): void => {
    if (typeof x === 'string') parts.push(x);
    else if (typeof x === 'number' || typeof x === 'boolean') return;
    else if (depth < 3 && Array.isArray(x)) for (const y of x) walk(y, depth + 1);
    else if (depth < 3 && typeof x === 'object' && x !== null)
      for (const [k, y] of Object.entries(x as Record<string, unknown>)) {
        if (typeof y === 'number' && /exit|status|code/i.test(k)) parts.push(`${k}: ${y}`);
        else walk(y, depth + 1);
      }
  };
  walk(v, 0);
  return parts.join('\n');
}
