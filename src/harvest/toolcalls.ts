/**
 * Tool calls of a session paired with their results, with the "salient argument" that names
 * what a call was about (a shell command's head, a file path, a search pattern, a URL) and a
 * normalized error signature for failures. Pure.
 */
import type { Message } from '../model/messages.js';
import { baseToolName, isReadTool, isWriteTool } from '../model/toolargs.js';
import { isRejectedResult } from '../text/index.js';

export const TOOL_KINDS = ['shell', 'read', 'edit', 'search', 'web', 'other'] as const;
export type ToolKind = (typeof TOOL_KINDS)[number];

/** One tool call and what came back. */
export interface ToolExchange {
  /** Order among the session's calls. */
  readonly index: number;
  readonly callId: string;
  readonly tool: string;
  readonly kind: ToolKind;
  /** Parsed arguments (an object), or the raw argument string when it is not JSON. */
  readonly args: Readonly<Record<string, unknown>>;
  readonly argsText: string;
  /** What the call was about (command head, path, pattern, URL, first argument). */
  readonly salient: string;
  /** The full command for shell calls. */
  readonly command?: string;
  readonly result?: string;
  /** The call failed (adapter flag). */
  readonly isError: boolean;
  /** The user rejected or interrupted the call: neither a failure nor a success. */
  readonly rejected: boolean;
  /** Index of the assistant message that made the call. */
  readonly messageIndex: number;
}

const SHELL = /^(bash|shell|sh|zsh|exec_command|terminal|execute_command|run_command|run_terminal_cmd|local_shell|run_shell_command|command|cmd|container\.exec)$/i;
/** Beyond the shared read/write tool names: listing tools read, file moves and deletes edit. */
const READ_EXTRA = /^(ls|list|list_dir|list_directory)$/i;
const EDIT_EXTRA = /^(delete_file|move_file|rename_file)$/i;
const SEARCH = /(grep|glob|search|find|ripgrep|rg$|codebase|symbol)/i;
const WEB = /(web|browser|fetch|http|url|navigate|context7|docs|crawl|scrape)/i;

/** Coarse kind of a tool by its name. */
export function toolKind(tool: string): ToolKind {
  const name = tool.replace(/^mcp__/, '');
  if (SHELL.test(name) || /bash/i.test(name)) return 'shell';
  if (WEB.test(name) && !/session_search/i.test(name)) return 'web';
  if (isWriteTool(name) || EDIT_EXTRA.test(baseToolName(name))) return 'edit';
  if (SEARCH.test(name)) return 'search';
  if (isReadTool(name) || READ_EXTRA.test(baseToolName(name))) return 'read';
  return 'other';
}

const PATH_KEYS = ['file_path', 'path', 'filePath', 'notebook_path', 'filename', 'file', 'target_file', 'absolute_path', 'dir_path', 'directory'];
const PATTERN_KEYS = ['pattern', 'query', 'glob', 'regex', 'search', 'q', 'search_term'];
const URL_KEYS = ['url', 'uri', 'href', 'link'];

function parseArgs(text: string): Record<string, unknown> {
  try {
    const v = JSON.parse(text) as unknown;
    if (typeof v === 'object' && v !== null && !Array.isArray(v)) return v as Record<string, unknown>;
    if (Array.isArray(v)) return { command: v };
    return { value: v };
  } catch {
    return text.trim().length > 0 ? { input: text } : {};
  }
}

/** The shell command of a call's arguments (Codex passes `["bash","-lc","…"]`). */
export function commandOf(args: Readonly<Record<string, unknown>>): string | undefined {
  const c = args['command'] ?? args['cmd'] ?? args['script'] ?? args['input'];
  if (typeof c === 'string') return c;
  if (Array.isArray(c)) {
    const parts = c.filter((p): p is string => typeof p === 'string');
    const shellIdx = parts.findIndex((p) => p === '-lc' || p === '-c');
    if (shellIdx >= 0 && parts[shellIdx + 1] !== undefined) return parts[shellIdx + 1];
    return parts.join(' ');
  }
  return undefined;
}

const SHELL_KEYWORDS = new Set(['for', 'while', 'until', 'if', 'case', 'do', 'then', '[', '[[', 'function', '{']);
const TWO_WORD = new Set(['npm', 'pnpm', 'yarn', 'bun', 'npx', 'git', 'cargo', 'go', 'pip', 'pip3', 'uv', 'docker', 'kubectl', 'make', 'poetry', 'deno', 'gh', 'dotnet', 'mvn', 'gradle', 'brew', 'apt', 'apt-get', 'systemctl', 'just', 'pytest', 'rake', 'bundle', 'composer', 'task-master']);

/**
 * The head of a shell command: program plus subcommand for multi-command tools
 * (`npm run build`, `git status`, `python -m pytest`), after `cd … &&`, env assignments and sudo.
 */
export function commandHead(command: string): string {
  let cmd = (command.trim().split('\n')[0] ?? '').replace(/^[({\s]+/, '');
  // Take the last segment of `cd x && y` chains (the part that does the work).
  const segments = cmd.split(/\s*(?:&&|;|\|\|)\s*/).filter((s) => s.length > 0 && !/^cd\s/.test(s) && !/^(export|source|set)\s/.test(s));
  cmd = segments[0] ?? cmd;
  const tokens = cmd
    .split(/\s+/)
    .map((t) => t.replace(/[)"';]+$/, '').replace(/^["']+/, ''))
    .filter((t) => t.length > 0 && !/^[A-Z_][A-Z0-9_]*=/.test(t));
  while (tokens[0] === 'sudo' || tokens[0] === 'time' || tokens[0] === 'env' || tokens[0] === 'timeout' || /^\d+[smh]?$/.test(tokens[0] ?? 'x')) tokens.shift();
  const first = tokens[0];
  if (first === undefined) return '';
  const prog = first.replace(/^.*\//, '');
  if (SHELL_KEYWORDS.has(prog)) return '';
  const out = [prog];
  const rest = tokens.slice(1).filter((t) => !t.startsWith('-') && !/^["'|>]/.test(t));
  if ((prog === 'python' || prog === 'python3') && tokens[1] === '-m' && tokens[2]) return `${prog} -m ${tokens[2]}`;
  if (TWO_WORD.has(prog) && rest[0] !== undefined) {
    out.push(rest[0]);
    if ((prog === 'npm' || prog === 'pnpm' || prog === 'yarn' || prog === 'bun') && rest[0] === 'run' && rest[1] !== undefined) out.push(rest[1]);
  }
  return out.join(' ').slice(0, 80);
}

function firstString(args: Readonly<Record<string, unknown>>, keys: readonly string[]): string | undefined {
  for (const k of keys) {
    const v = args[k];
    if (typeof v === 'string' && v.length > 0) return v;
  }
  return undefined;
}

/** What a call was about, short and comparable across sessions. */
export function salientArg(kind: ToolKind, args: Readonly<Record<string, unknown>>): string {
  if (kind === 'shell') {
    const c = commandOf(args);
    return c ? commandHead(c) : '';
  }
  const path = firstString(args, PATH_KEYS);
  if ((kind === 'read' || kind === 'edit') && path) return path.slice(0, 200);
  const url = firstString(args, URL_KEYS);
  if (url) return url.slice(0, 200);
  const pattern = firstString(args, PATTERN_KEYS);
  if (pattern) return pattern.slice(0, 120);
  if (path) return path.slice(0, 200);
  for (const v of Object.values(args)) if (typeof v === 'string' && v.length > 0) return v.slice(0, 80);
  return '';
}

/** Pair every tool call with its result (by id, never by position). */
export function pairToolCalls(messages: readonly Message[]): ToolExchange[] {
  const results = new Map<string, Message>();
  for (const m of messages) if (m.role === 'tool' && m.toolCallId !== undefined && !results.has(m.toolCallId)) results.set(m.toolCallId, m);
  const out: ToolExchange[] = [];
  messages.forEach((m, messageIndex) => {
    for (const call of m.toolCalls ?? []) {
      const args = parseArgs(call.arguments);
      const kind = toolKind(call.name);
      const res = results.get(call.id);
      const text = res?.text;
      const rejected = text !== undefined && isRejectedResult(text);
      const command = kind === 'shell' ? commandOf(args) : undefined;
      out.push({
        index: out.length,
        callId: call.id,
        tool: call.name,
        kind,
        args,
        argsText: call.arguments,
        salient: salientArg(kind, args),
        ...(command !== undefined ? { command } : {}),
        ...(text !== undefined ? { result: text } : {}),
        isError: !rejected && res?.isError === true,
        rejected,
        messageIndex,
      });
    }
  });
  return out;
}
