/**
 * What a tool call did, read from its name and arguments: the command it ran and the
 * paths it read or wrote. Covers Claude Code (Read/Edit/Write/MultiEdit/NotebookEdit/Bash),
 * Codex (shell/exec_command/apply_patch), hermes/SWE-agent (terminal, view, str_replace_editor,
 * open, edit) and shell commands (cat/head/tail/sed/nl/less/bat, sed -i, tee, redirects).
 */
import { fnv1a64 } from '../text/index.js';
import type { ToolCall } from './messages.js';
import { commandNameAt, shellCommands, shellQuote } from './shell.js';

export interface ToolAction {
  /** The shell command, when the call ran one. */
  readonly command?: string;
  /** Paths whose content the call returned. */
  readonly reads: readonly string[];
  /** Paths the call changed. */
  readonly writes: readonly string[];
  /**
   * A stable key of "the same invocation": the tool's name and all its arguments but those that
   * only describe or bound the call (`INCIDENTAL_ARGS`). Two edits of one file with other
   * strings, or two searches of one folder for other patterns, are not the same invocation.
   */
  readonly key: string;
}

const READ_TOOLS = /^(read|read_file|readfile|view|open|cat|view_file|open_file|get_file|fs_read|notebookread)$/i;
const WRITE_TOOLS = /^(edit|multiedit|write|write_file|writefile|create|create_file|notebookedit|str_replace|insert|edit_file|replace|fs_write|patch|apply_patch)$/i;
const PATH_KEYS = ['file_path', 'path', 'filePath', 'filename', 'file', 'target_file', 'notebook_path', 'absolute_path'];
const COMMAND_KEYS = ['command', 'cmd', 'script', 'input'];

/** The tool's own name: `mcp__server__tool` → `tool`. */
export function baseToolName(name: string): string {
  return name.replace(/^.*__/, '');
}

/** A tool that returns a file's content (by its exact name, not a substring: `TodoRead` is not one). */
export function isReadTool(name: string): boolean {
  return READ_TOOLS.test(baseToolName(name));
}

/** A tool that changes files (by its exact name: `TodoWrite` is not one). */
export function isWriteTool(name: string): boolean {
  return WRITE_TOOLS.test(baseToolName(name));
}

/** Parse a tool call's arguments: JSON object, or the raw string under `input`. */
export function parseArgs(raw: string): Record<string, unknown> {
  const t = raw.trim();
  if (t.startsWith('{')) {
    try {
      const v = JSON.parse(t) as unknown;
      if (v && typeof v === 'object' && !Array.isArray(v)) return v as Record<string, unknown>;
    } catch {
      /* fall through */
    }
  }
  return { input: raw };
}

function str(v: unknown): string | undefined {
  if (typeof v === 'string' && v.length > 0) return v;
  if (Array.isArray(v) && v.every((x) => typeof x === 'string')) {
    const parts = v as string[];
    // codex: ["bash","-lc","cat foo"] → the script
    if (parts.length >= 3 && /^(ba|z)?sh$/.test(parts[0] ?? '') && /^-l?c$/.test(parts[1] ?? '')) return parts.slice(2).join(' ');
    // an argv run without a shell: quoted where needed, so `["python3", "-c", "assert n >= 0"]`
    // reads back as one argument, not as a redirect to `=`
    return parts.map(shellQuote).join(' ');
  }
  return undefined;
}

const actionMemo = new WeakMap<ToolCall, ToolAction>();

/** Understand one tool call (memoized per call object; the result is shared and read-only). */
export function toolAction(call: ToolCall): ToolAction {
  let a = actionMemo.get(call);
  if (!a) {
    a = computeToolAction(call);
    actionMemo.set(call, a);
  }
  return a;
}

function computeToolAction(call: ToolCall): ToolAction {
  const args = parseArgs(call.arguments);
  const name = baseToolName(call.name);
  const reads: string[] = [];
  const writes: string[] = [];
  let command: string | undefined;
  for (const k of COMMAND_KEYS) {
    const v = str(args[k]);
    if (v && (k !== 'input' || !/^\s*\*\*\* Begin Patch/.test(v))) {
      command = v;
      break;
    }
  }
  let mainPath: string | undefined;
  for (const k of PATH_KEYS) {
    const v = str(args[k]);
    if (v) {
      mainPath = v;
      break;
    }
  }
  const sub = typeof args['command'] === 'string' ? (args['command'] as string) : '';
  if (mainPath) {
    // str_replace_editor style: {command: 'view'|'str_replace'|'create'|'insert', path}
    if (/^(view)$/.test(sub) || READ_TOOLS.test(name)) reads.push(mainPath);
    else if (/^(str_replace|create|insert|undo_edit)$/.test(sub) || WRITE_TOOLS.test(name)) writes.push(mainPath);
    if (/^(view|str_replace|create|insert|undo_edit)$/.test(sub)) command = undefined;
  }
  const patch = [str(args['patch']), str(args['input']), command, name === 'apply_patch' ? call.arguments : undefined].find(
    (p) => p !== undefined && p.includes('*** '),
  );
  if (patch) for (const m of patch.matchAll(/^\*\*\* (?:Update|Add|Delete) File: (.+)$/gm)) if (m[1]) writes.push(m[1].trim());
  if (command && !patch) shellPaths(command, reads, writes);
  if (!mainPath && !command && READ_TOOLS.test(name)) {
    const raw = call.arguments.trim();
    if (raw && !raw.startsWith('{') && !/\s/.test(raw)) reads.push(raw);
  }
  const key = `${name}:${command ?? mainPath ?? ''}#${fnv1a64(invocationArgs(args))}`;
  return { command, reads: dedupe(reads), writes: dedupe(writes), key };
}

const SHELL_READ = /^(cat|head|tail|less|more|nl|bat|batcat|view|open)$/;

/**
 * Paths read/written by a shell command line (best effort, per simple command), read with the
 * shell's quoting (`shellCommands`): a `>` inside quotes, arithmetic or `[[ ]]` is no redirect,
 * `2>&1` names no file, and a here-document's body is no command.
 */
function shellPaths(command: string, reads: string[], writes: string[]): void {
  for (const c of shellCommands(command)) {
    const start = commandNameAt(c.words);
    const cmd = c.words[start] ?? '';
    const args = c.words.slice(start + 1);
    for (const r of c.redirects) {
      if ((r.kind === 'write' || r.kind === 'append') && !r.target.startsWith('/dev/')) writes.push(r.target);
      else if (r.kind === 'read' && SHELL_READ.test(cmd)) reads.push(r.target);
    }
    if (cmd === 'sed') {
      const inPlace = args.some((a) => /^-i/.test(a) || a === '--in-place');
      const files = args.filter((a, i) => !a.startsWith('-') && i > 0 && !/^s\//.test(a) && /[./]/.test(a) && !/^\d+,?\d*p$/.test(a));
      for (const f of files) (inPlace ? writes : reads).push(f);
    } else if (SHELL_READ.test(cmd)) {
      for (const a of args) if (!a.startsWith('-') && !/^\d+$/.test(a)) reads.push(a);
    } else if (cmd === 'tee' || cmd === 'touch') {
      for (const a of args) if (!a.startsWith('-')) writes.push(a);
    }
  }
}

/**
 * Arguments that say what a call is for or how long it may take, not what it does: the same
 * command run again with another `description` is the same invocation.
 */
const INCIDENTAL_ARGS: ReadonlySet<string> = new Set(['description', 'explanation', 'timeout', 'timeout_ms']);

/** The arguments that decide what a call does, in a canonical text (sorted keys, whole values). */
function invocationArgs(args: Record<string, unknown>): string {
  const keys = Object.keys(args)
    .filter((k) => !INCIDENTAL_ARGS.has(k))
    .sort();
  return keys.map((k) => `${k}=${JSON.stringify(args[k])}`).join('&');
}

function dedupe(xs: string[]): string[] {
  return [...new Set(xs.filter((x) => x.length > 0 && x.length < 300))];
}
