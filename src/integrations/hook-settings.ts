/**
 * Installing contextd's hooks into an agent's hook settings file and removing exactly them.
 * Claude Code (`~/.claude/settings.json`) and Codex CLI (`~/.codex/hooks.json`) use the same
 * layout: `{"hooks": {"<Event>": [{"matcher"?: "...", "hooks": [{"type": "command", "command": "...", "timeout": s}]}]}}`.
 * Everything else in the file (other settings, the user's own hooks) is kept as it was.
 */
import { existsSync, readFileSync } from 'node:fs';
import { join } from 'node:path';
import { ContextdError, ErrorCode } from '../util/errors.js';
import { writeFileAtomicSync } from '../util/atomic-write.js';

/** One hook contextd installs. */
export interface HookSpec {
  readonly event: string;
  readonly matcher?: string;
  /** Seconds the agent waits for the hook. */
  readonly timeoutSec: number;
  /**
   * Run contextd only while a stash is pending (a shell test on the pending dir), so a hook on a
   * frequent event (every tool call) costs a `test`, not a Node start.
   */
  readonly onlyWhenPending?: boolean;
}

/** The directory where hooks stash text for a later hook of the same session. */
export const PENDING_DIR = 'hooks-pending';

type Json = Record<string, unknown>;

function isObj(v: unknown): v is Json {
  return typeof v === 'object' && v !== null && !Array.isArray(v);
}

/** Read a settings file (missing → `{}`); throws SETTINGS_INVALID rather than overwrite a file it cannot parse. */
export function readSettings(path: string): Json {
  if (!existsSync(path)) return {};
  const text = readFileSync(path, 'utf8');
  if (text.trim() === '') return {};
  let v: unknown;
  try {
    v = JSON.parse(text);
  } catch (err) {
    throw new ContextdError(ErrorCode.SETTINGS_INVALID, `${path} is not valid JSON (${(err as Error).message}); fix or move it, nothing was changed`, { path });
  }
  if (!isObj(v)) throw new ContextdError(ErrorCode.SETTINGS_INVALID, `${path} does not hold a JSON object; nothing was changed`, { path });
  if (v['hooks'] !== undefined && !isObj(v['hooks'])) throw new ContextdError(ErrorCode.SETTINGS_INVALID, `${path}: "hooks" is not an object; nothing was changed`, { path });
  return v;
}

/** Write atomically (temp file + rename), owner-only. */
export function writeSettings(path: string, doc: Json): void {
  writeFileAtomicSync(path, `${JSON.stringify(doc, null, 2)}\n`);
}

/** The document without any hook handler whose command `isOurs` recognizes (empty groups and events dropped). */
export function withoutHooks(doc: Json, isOurs: (command: string) => boolean): { doc: Json; removed: number } {
  const hooks = isObj(doc['hooks']) ? doc['hooks'] : undefined;
  if (!hooks) return { doc, removed: 0 };
  let removed = 0;
  const kept: Json = {};
  for (const [event, groups] of Object.entries(hooks)) {
    if (!Array.isArray(groups)) {
      kept[event] = groups;
      continue;
    }
    const outGroups: unknown[] = [];
    for (const g of groups) {
      if (!isObj(g) || !Array.isArray(g['hooks'])) {
        outGroups.push(g);
        continue;
      }
      const handlers = g['hooks'].filter((h) => {
        const ours = isObj(h) && typeof h['command'] === 'string' && isOurs(h['command']);
        if (ours) removed++;
        return !ours;
      });
      if (handlers.length > 0) outGroups.push({ ...g, hooks: handlers });
      else if (handlers.length === g['hooks'].length) outGroups.push(g);
    }
    if (outGroups.length > 0) kept[event] = outGroups;
  }
  const out: Json = { ...doc };
  if (Object.keys(kept).length > 0) out['hooks'] = kept;
  else delete out['hooks'];
  return { doc: out, removed };
}

/** The document with contextd's hooks (replacing any earlier contextd hooks: idempotent). */
export function withHooks(doc: Json, specs: readonly HookSpec[], command: string, isOurs: (command: string) => boolean, stateDir: string): Json {
  const base = withoutHooks(doc, isOurs).doc;
  const hooks: Json = isObj(base['hooks']) ? { ...base['hooks'] } : {};
  for (const s of specs) {
    const groups = Array.isArray(hooks[s.event]) ? [...(hooks[s.event] as unknown[])] : [];
    const pending = shellQuote(join(stateDir, PENDING_DIR));
    const cmd = s.onlyWhenPending ? `if [ -n "$(ls -A ${pending} 2>/dev/null)" ]; then exec ${command}; else cat >/dev/null; fi` : command;
    groups.push({ ...(s.matcher !== undefined ? { matcher: s.matcher } : {}), hooks: [{ type: 'command', command: cmd, timeout: s.timeoutSec }] });
    hooks[s.event] = groups;
  }
  return { ...base, hooks };
}

/** Quote one argument for a POSIX shell (hook commands are run by `sh -c`). */
export function shellQuote(arg: string): string {
  return /^[\w@%+=:,./-]+$/.test(arg) ? arg : `'${arg.replace(/'/g, `'\\''`)}'`;
}

/** True for a hook command contextd installed for `agent`. */
export function isContextdHookCommand(agent: string): (command: string) => boolean {
  return (command) => /contextd/.test(command) && command.includes(` hook ${agent}`);
}
