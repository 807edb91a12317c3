/**
 * The gist of a file edit: which file, which hunks, how many lines added and removed, and the
 * identifiers that changed. Reads `apply_patch` envelopes (`*** Update File:` + `@@` hunks),
 * unified diffs (`+++ b/…`), and old/new string pairs (str_replace style edits). Pure.
 */
import { extractIdentifiers } from './code.js';
import { clip, uniq } from './prose.js';

/** What one edit did to one file. */
export interface FileEditGist {
  readonly path: string;
  readonly action: 'update' | 'add' | 'delete';
  /** Hunk headers (`@@ export function foo`), without the `@@` markers, non-empty only. */
  readonly hunks: readonly string[];
  readonly added: number;
  readonly removed: number;
  /** Identifiers that occur in changed lines on one side only (or, failing that, in added lines). */
  readonly identifiers: readonly string[];
}

interface Acc {
  path: string;
  action: FileEditGist['action'];
  hunks: string[];
  plus: string[];
  minus: string[];
}

function finish(a: Acc): FileEditGist {
  return { path: a.path, action: a.action, hunks: uniq(a.hunks).slice(0, 6), added: a.plus.length, removed: a.minus.length, identifiers: changedIdentifiers(a.minus, a.plus) };
}

/** Identifiers that a change introduced or removed (both sides' symmetric difference). */
export function changedIdentifiers(removed: readonly string[], added: readonly string[], max = 8): string[] {
  const before = new Set(extractIdentifiers(removed.join('\n')));
  const after = extractIdentifiers(added.join('\n'));
  const afterSet = new Set(after);
  const changed = [...after.filter((i) => !before.has(i)), ...[...before].filter((i) => !afterSet.has(i))];
  return (changed.length > 0 ? changed : after).slice(0, max);
}

/** Per-file gists of an `apply_patch` envelope or a unified diff; [] when `text` is neither. */
export function patchGists(text: string): FileEditGist[] {
  const out: FileEditGist[] = [];
  let cur: Acc | undefined;
  const start = (path: string, action: Acc['action']): void => {
    if (cur) out.push(finish(cur));
    cur = { path: path.trim(), action, hunks: [], plus: [], minus: [] };
  };
  for (const line of text.split('\n')) {
    const env = /^\*\*\* (Update|Add|Delete) File: (.+)$/.exec(line);
    if (env?.[1] && env[2]) {
      start(env[2], env[1] === 'Add' ? 'add' : env[1] === 'Delete' ? 'delete' : 'update');
      continue;
    }
    const uni = /^\+\+\+ (?:b\/)?(.+)$/.exec(line);
    if (uni?.[1] && uni[1] !== '/dev/null') {
      start(uni[1].replace(/\t.*$/, ''), 'update');
      continue;
    }
    if (!cur || /^--- /.test(line) || /^\*\*\* (?:Begin|End) Patch/.test(line) || /^\*\*\* Move to:/.test(line)) continue;
    if (line.startsWith('@@')) {
      const h = line.replace(/^@@\s*(?:-\d+(?:,\d+)?\s+\+\d+(?:,\d+)?\s*@@)?\s*/, '').replace(/\s*@@\s*$/, '').trim();
      if (h.length > 0) cur.hunks.push(clip(h, 80));
    } else if (line.startsWith('+')) cur.plus.push(line.slice(1));
    else if (line.startsWith('-')) cur.minus.push(line.slice(1));
  }
  if (cur) out.push(finish(cur));
  return out;
}

/** The gist of replacing `oldText` with `newText` in `path` (Claude Edit, str_replace). */
export function replaceGist(path: string, oldText: string, newText: string): FileEditGist {
  const o = oldText.split('\n');
  const n = newText.split('\n');
  const os = new Set(o);
  const ns = new Set(n);
  const plus = n.filter((l) => !os.has(l));
  const minus = o.filter((l) => !ns.has(l));
  return { path, action: oldText.length === 0 ? 'add' : 'update', hunks: [], added: plus.length, removed: minus.length, identifiers: changedIdentifiers(minus, plus) };
}

/** One line describing an edit gist: `components/x.ts (+12 −3) @@ export const f; changed f, g`. */
export function describeEditGist(g: FileEditGist): string {
  const verb = g.action === 'add' ? 'created' : g.action === 'delete' ? 'deleted' : 'edited';
  const parts = [`${verb} ${g.path}`];
  if (g.action !== 'delete') parts.push(`(+${g.added} −${g.removed})`);
  if (g.hunks.length > 0) parts.push(`at ${g.hunks.map((h) => `"${h}"`).join(', ')}`);
  if (g.identifiers.length > 0) parts.push(`changed ${g.identifiers.join(', ')}`);
  return parts.join(' ');
}
