/**
 * Our own secret rules, ported in spirit from gitleaks' (MIT) rule set, plus e-mail addresses
 * and a Shannon-entropy check for unknown token shapes. Pure and synchronous.
 *
 * Entropy trade-off: a candidate is a run of ≥ 24 chars of [A-Za-z0-9+/_=-] that
 *  - is not all hex (commit hashes, sha256 digests: hex never exceeds 4 bits/char anyway),
 *  - is not a UUID and not a readable name (every `-_/.`-separated part a short word or a number,
 *    e.g. `claude-sonnet-4-20250514`, `src/harvest/redact-rules.ts`),
 *  - mixes digits and letters, switching between lower case, upper case and digits often
 *    (≥ 6 times and ≥ once per 6 chars: random keys do, identifiers and words do not), and
 *  - has Shannon entropy of at least `min(4.0, log2(length) − 1.5)` bits/char. A string of n
 *    characters cannot exceed log2(n) bits/char, and a short random key falls well below it:
 *    one in twenty random 24-char base62 keys measures under 4.0 (seen in a million draws each
 *    at 24–44 chars, none measured under log2(n) − 1.4). So the bar is lowered for short
 *    strings and stays 4.0 from 46 chars on.
 * Measured on uniformly random base62 keys (a million draws per length): none missed from 32
 * chars on; at 24 chars about 2 in 10,000 are, which look like a camelCase name or hold long
 * runs of one case — the price of keeping names readable.
 * This catches random API keys of vendors we have no rule for, at the cost of redacting some
 * long random-looking ids (base64 hashes, opaque request ids). Missing a secret is worse than
 * losing an opaque id from a warm-start template, so the threshold leans to redacting.
 */

/** One rule: a global regex and how to rewrite a match (default: the whole match). */
export interface SecretRule {
  readonly id: string;
  readonly pattern: RegExp;
  /** Build the replacement from the match groups; `marker` is `[REDACTED:<id>]`. */
  readonly replace?: (marker: string, match: string, ...groups: string[]) => string;
  /** Return false to keep a match (false-positive filter). */
  readonly accept?: (match: string, ...groups: string[]) => boolean;
}

const NON_SECRET_VALUES = /^(?:string|number|boolean|null|undefined|none|true|false|required|optional|redacted|\*+|x+|\.\.\.|<[^>]*>|\$\{.*|\$\w+|process\.env.*|os\.environ.*|env\..*)$/i;

function acceptAssignedValue(value: string): boolean {
  if (NON_SECRET_VALUES.test(value)) return false;
  if (value.includes('(') || value.startsWith('[REDACTED')) return false;
  if (/^\d{1,7}$/.test(value)) return false; // counts and limits (`max_tokens: 4096`)
  return true;
}

export const SECRET_RULES: readonly SecretRule[] = [
  {
    id: 'private-key',
    pattern: /-----BEGIN[ A-Z0-9_-]{0,40}PRIVATE KEY(?: BLOCK)?-----[\s\S]{0,20000}?(?:-----END[ A-Z0-9_-]{0,40}PRIVATE KEY(?: BLOCK)?-----|$)/g,
  },
  { id: 'aws-access-key', pattern: /\b(?:AKIA|ASIA|ABIA|ACCA|A3T[A-Z0-9])[A-Z0-9]{16}\b/g },
  {
    id: 'aws-secret-key',
    pattern: /\b((?:aws)?_?(?:secret)_?(?:access)?_?key(?:_id)?)(["'\s]*[:=]\s*["']?)([A-Za-z0-9/+=]{40})(?![A-Za-z0-9/+=])/gi,
    replace: (m, _all, name, sep) => `${name}${sep}${m}`,
  },
  { id: 'github-token', pattern: /\b(?:ghp|gho|ghu|ghs|ghr)_[A-Za-z0-9]{36,255}\b/g },
  { id: 'github-pat', pattern: /\bgithub_pat_[A-Za-z0-9_]{22,255}\b/g },
  { id: 'gitlab-token', pattern: /\bglpat-[A-Za-z0-9_-]{20,}\b/g },
  { id: 'anthropic-key', pattern: /\bsk-ant-[A-Za-z0-9_-]{20,}/g },
  { id: 'openai-key', pattern: /\bsk-(?:proj-|svcacct-|admin-|None-)?[A-Za-z0-9_-]{20,}/g },
  { id: 'slack-token', pattern: /\bxox[abposre]-[A-Za-z0-9-]{10,}/g },
  { id: 'slack-webhook', pattern: /https:\/\/hooks\.slack\.com\/(?:services|workflows)\/[A-Za-z0-9+/_-]{20,}/g },
  { id: 'stripe-key', pattern: /\b(?:sk|rk|pk)_(?:live|test)_[A-Za-z0-9]{16,}\b/g },
  { id: 'google-api-key', pattern: /\bAIza[0-9A-Za-z_-]{35}\b/g },
  { id: 'huggingface-token', pattern: /\bhf_[A-Za-z0-9]{30,}\b/g },
  { id: 'npm-token', pattern: /\bnpm_[A-Za-z0-9]{36}\b/g },
  { id: 'jwt', pattern: /\beyJ[A-Za-z0-9_-]{10,}\.[A-Za-z0-9_-]{10,}\.[A-Za-z0-9_-]{10,}={0,2}/g },
  {
    id: 'url-password',
    pattern: /\b([a-z][a-z0-9+.-]{1,20}:\/\/)([^\s:@/]{1,100}):([^\s@/]{1,200})@/gi,
    replace: (m, _all, scheme, user) => `${scheme}${user}:${m}@`,
  },
  {
    id: 'bearer-token',
    pattern: /\b(Bearer|Token|Basic)(\s+)([A-Za-z0-9._~+/-]{16,}=*)/g,
    replace: (m, _all, kind, space) => `${kind}${space}${m}`,
  },
  {
    id: 'secret-assignment',
    pattern:
      /\b([A-Za-z0-9_.-]{0,40}(?:password|passwd|pwd|secret|api[_-]?key|apikey|access[_-]?token|auth[_-]?token|client[_-]?secret|private[_-]?key|token)(?:[_.-][A-Za-z0-9_.-]{0,20})?)(["']?\s*[:=]\s*)(["']?)([^\s"'`,;]{4,200})/gi,
    accept: (_all, _name, _sep, _q, value) => value !== undefined && acceptAssignedValue(value),
    replace: (m, _all, name, sep, quote) => `${name}${sep}${quote}${m}`,
  },
  {
    id: 'email',
    pattern: /\b[A-Za-z0-9._%+-]{1,64}@[A-Za-z0-9-]{1,63}(?:\.[A-Za-z0-9-]{1,63})*\.[A-Za-z]{2,24}\b/g,
    accept: (m) => !/^git@/i.test(m),
  },
  {
    id: 'high-entropy',
    pattern: /[A-Za-z0-9+/_=-]{24,}/g,
    accept: (m) => looksRandom(m),
  },
];

/** Shannon entropy in bits per character. */
export function shannonEntropy(s: string): number {
  if (s.length === 0) return 0;
  const counts = new Map<string, number>();
  for (const ch of s) counts.set(ch, (counts.get(ch) ?? 0) + 1);
  let h = 0;
  for (const n of counts.values()) {
    const p = n / s.length;
    h -= p * Math.log2(p);
  }
  return h;
}

const UUID = /^[0-9a-f]{8}-[0-9a-f]{4}-[0-9a-f]{4}-[0-9a-f]{4}-[0-9a-f]{12}$/i;

/** A part of a name a person would write: a word (maybe with a version number), a number, a hex id. */
const READABLE_PART = /^(?:[A-Za-z][a-z]{0,24}\d{0,4}|[A-Z]{1,12}\d{0,4}|\d+[A-Za-z]{0,2}\d*|[0-9a-f]{4,40})$/;

/** Changes between lower case, upper case and digits: random keys switch often, words rarely. */
function classSwitches(s: string): number {
  let n = 0;
  let prev = '';
  for (const ch of s) {
    const c = ch >= '0' && ch <= '9' ? 'd' : ch >= 'a' && ch <= 'z' ? 'l' : ch >= 'A' && ch <= 'Z' ? 'u' : 'o';
    if (c === 'o') continue;
    if (prev !== '' && c !== prev) n++;
    prev = c;
  }
  return n;
}

/** A path from the root whose first folder is a plain name (`/tmp/…`, `/home/…`, `/work/…`). */
const ABSOLUTE_PATH = /^\/[a-z][a-z0-9_.-]{0,15}\//;

/** The entropy rule's test (see the file comment for the trade-off). */
export function looksRandom(token: string): boolean {
  // An absolute path (`/tmp/contextd-aB3x9Q/a/b.jsonl`) is judged run by run (between `/`, `-`
  // and `_`): a temp folder's random suffix is not a key, while a key standing in it still is.
  if (ABSOLUTE_PATH.test(token)) return token.split(/[/_-]/).some((run) => run.length >= 24 && looksRandom(run));
  const t = token.replace(/^[-_/=+]+|[-_/=+]+$/g, '');
  if (t.length < 24) return false;
  if (/^[0-9a-f]+$/i.test(t) || UUID.test(t)) return false;
  if (!/[0-9]/.test(t) || !/[A-Za-z]/.test(t)) return false;
  // Names made of words: paths, package names, model ids, camelCase identifiers.
  const parts = t.split(/[-_/.+=]+|(?<=[a-z])(?=[A-Z])/).filter((p) => p.length > 0);
  if (parts.every((p) => READABLE_PART.test(p))) return false;
  if (classSwitches(t) < Math.max(6, t.length / 6)) return false;
  return shannonEntropy(t) >= entropyBar(t.length);
}

/** The entropy a random key of `length` characters reaches (see the file comment). */
function entropyBar(length: number): number {
  return Math.min(4.0, Math.log2(length) - 1.5);
}
