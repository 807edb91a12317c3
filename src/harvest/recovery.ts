/**
 * Error → fix recovery patterns, kept only when a later success confirms the fix.
 *
 * A recovery is recorded for failed call F only when ALL hold:
 *  - F failed (not rejected or interrupted by the user), was not read-only exploration (ls,
 *    cat, grep, Read, Glob…: a wrong path teaches nothing), and its output has an error
 *    signature with at least two real words;
 *  - within `maxGap` later calls, a call S of the same tool on the same salient argument
 *    (same command head / same path / same pattern) succeeded, and no other failure of that
 *    same tool+argument came between (the last failure before the success is the one fixed);
 *  - something changed between F and S: successful modifying calls ran in between (edits,
 *    other non-exploratory commands), or — for non-shell tools only — S's arguments differ
 *    from F's. A plain retry of the identical call is a flake, not a recovery.
 * Everything else — failures never followed by a confirming success — is dropped.
 */
import { errorSignature } from '../text/index.js';
import type { ToolExchange } from './toolcalls.js';

export interface Recovery {
  readonly tool: string;
  /** The failed call's salient argument (command head, path, …). */
  readonly target: string;
  readonly signature: string;
  /** Human-readable description of the fixing action(s). */
  readonly fix: string;
  /** Index of the failed call and of the confirming success. */
  readonly failedAt: number;
  readonly confirmedAt: number;
}

export interface RecoveryOptions {
  /** Calls after a failure within which the confirming success must come (default 12). */
  readonly maxGap?: number;
}

function sameTarget(a: ToolExchange, b: ToolExchange): boolean {
  return a.tool === b.tool && a.salient.length > 0 && a.salient === b.salient;
}

/** A fixing action, generalized (command head, tool + file name) so that fixes merge across sessions. */
function describeAction(x: ToolExchange): string {
  if (x.kind === 'shell') return `ran \`${x.salient}\``;
  const file = x.salient.split('/').pop() ?? '';
  return `${x.tool} ${file}`.trim();
}

/** Read-only exploration: its failures (a wrong path, a bad pattern) teach nothing transferable. */
const EXPLORE_COMMANDS = /^(ls|cat|sed|head|tail|rg|grep|find|fd|which|echo|pwd|tree|wc|file|stat|du|less|more|git (?:status|log|diff|show|branch))$/;

function isExploration(x: ToolExchange): boolean {
  if (x.kind === 'read' || x.kind === 'search') return true;
  return x.kind === 'shell' && EXPLORE_COMMANDS.test(x.salient);
}

function isModifying(x: ToolExchange, failed: ToolExchange): boolean {
  if (x.isError || x.rejected) return false;
  if (x.kind === 'edit') return true;
  return x.kind === 'shell' && x.salient !== failed.salient && !isExploration(x);
}

/** Confirmed recoveries of a session, in order of the failures. */
export function findRecoveries(calls: readonly ToolExchange[], options: RecoveryOptions = {}): Recovery[] {
  const maxGap = options.maxGap ?? 12;
  const out: Recovery[] = [];
  const seen = new Set<string>();
  for (let i = 0; i < calls.length; i++) {
    const f = calls[i];
    if (!f || !f.isError || isExploration(f)) continue;
    const signature = errorSignature(f.result);
    if (signature === undefined) continue;
    let confirmed: ToolExchange | undefined;
    for (let j = i + 1; j < calls.length && j <= i + maxGap; j++) {
      const s = calls[j];
      if (!s || !sameTarget(f, s) || s.rejected) continue;
      if (s.isError) break; // a later failure of the same target is the one a success would fix
      confirmed = s;
      break;
    }
    if (!confirmed) continue;
    const between = calls.slice(i + 1, confirmed.index).filter((x) => isModifying(x, f));
    let fix: string;
    if (between.length > 0) {
      fix = [...new Set(between.map(describeAction))].slice(0, 3).join('; then ');
    } else if (confirmed.argsText !== f.argsText && f.kind !== 'shell') {
      // A tool quirk: the same tool on the same target worked once called differently
      // (e.g. Edit with a unique old_string). For shell commands a changed command line alone
      // is usually a different command, not a fix, so it does not count.
      fix = `retried ${confirmed.kind === 'shell' ? `\`${confirmed.salient}\`` : confirmed.tool} with changed arguments`;
    } else {
      continue;
    }
    const key = `${f.tool}\0${f.salient}\0${signature}`;
    if (seen.has(key)) continue;
    seen.add(key);
    out.push({ tool: f.tool, target: f.salient, signature, fix, failedAt: f.index, confirmedAt: confirmed.index });
  }
  return out;
}
