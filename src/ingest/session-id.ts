/**
 * The session id of a transcript file: unique per path, stable across restarts.
 *
 * Where the format names its own session in the file name, that id is used: Claude Code
 * writes `<sessionId>.jsonl`, Codex `rollout-<time>-<session_meta id>.jsonl`. Otherwise
 * (hermes `<session>.jsonl`, Claude sub-agent files, any other name) the id is the file's
 * path relative to its watch root, without `.jsonl` — so `W/a/x.jsonl` and `W/b/x.jsonl`
 * are `a/x` and `b/x`, and a file at the root keeps its bare name.
 */
import { basename, relative, sep } from 'node:path';

const UUID_AT_END = /[0-9a-f]{8}-[0-9a-f]{4}-[0-9a-f]{4}-[0-9a-f]{4}-[0-9a-f]{12}$/i;

function stripJsonl(name: string): string {
  return name.endsWith('.jsonl') ? name.slice(0, -'.jsonl'.length) : name;
}

/** The agent's own session id when the file name carries it (Claude Code, Codex), else undefined. */
export function agentSessionId(file: string): string | undefined {
  const name = stripJsonl(basename(file));
  const m = UUID_AT_END.exec(name);
  if (!m) return undefined;
  if (name === m[0] || name.startsWith('rollout-')) return m[0].toLowerCase();
  return undefined;
}

/** The id of `file` found under watch root `root` (a directory, or the file itself). */
export function pathSessionId(file: string, root: string): string {
  const rel = relative(root, file);
  if (rel === '' || rel.startsWith('..')) return stripJsonl(basename(file));
  return stripJsonl(rel.split(sep).join('/'));
}

/** The session id of a transcript: the agent's own id, else the path relative to its root. */
export function sessionIdFor(file: string, root: string): string {
  return agentSessionId(file) ?? pathSessionId(file, root);
}

/**
 * The session id of a transcript file read on its own (offline commands): the agent's own id
 * when the file name carries it, else the file name without `.jsonl`. The daemon, which knows
 * the watch root, uses {@link sessionIdFor} so that ids are unique per path.
 */
export function sessionIdForFile(path: string): string {
  return sessionIdFor(path, path);
}
