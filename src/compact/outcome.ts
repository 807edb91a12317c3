/**
 * What a tool call did and how it ended, in the words a summary keeps: an edit's gist (file,
 * hunks, lines added/removed, changed identifiers), a command's exit status and verdict line,
 * and — only when it failed — the assertion, the exception line and the first frame in project
 * code. A success is never described as an error. Memoized per message.
 */
import type { Message, ToolCall } from '../model/messages.js';
import { isReadTool, isWriteTool, parseArgs, toolAction } from '../model/toolargs.js';
import {
  assertionLines,
  clip,
  describeEditGist,
  exitStatusOf,
  extractErrorLines,
  isFrameLine,
  isProjectFrame,
  isRejectedResult,
  FAILURE_WORDS_RE,
  jsonResultText,
  patchGists,
  replaceGist,
  stripAnsi,
  stripDanglingRefs,
  verdictFailed,
  verdictLines,
  type FileEditGist,
} from '../text/index.js';
import { memoMessage } from './memo.js';

/** How a tool result ended. */
export interface ToolOutcome {
  readonly failed: boolean;
  /** Exit status recorded by the harness or stated in the output. */
  readonly exitCode?: number;
  /** The final verdict line of a test or build run (`Tests 245 passed (245)`, `3 failed, 10 passed`). */
  readonly verdict?: string;
  /** Failed runs only: assertion messages (`expected '' to be '??'`). */
  readonly assertions: readonly string[];
  /** Failed runs only: the exception or error line that says what went wrong. */
  readonly error?: string;
  /** Failed runs only: the first stack frame in project code. */
  readonly frame?: string;
  /** The call was rejected or interrupted before it ran (a kind of failure: nothing it asked for happened). */
  readonly rejected?: true;
}

/** What a rejected call's outcome says instead of quoting the harness (whose text tells the agent to stop and wait). */
export const REJECTED_ERROR = 'the tool use was rejected; it did not run';

const GENERIC_ERROR = /^(?:npm ERR!|ELIFECYCLE|error Command failed|Process exited|Command failed|Error: Process completed with exit code|FAIL\s*$)|\bexit (?:code|status)\b/i;

/** Readable text of a tool result (JSON results unwrapped, ANSI colours removed). */
export function resultText(m: Message): string {
  return memoMessage(m, 'result-text', (x) => stripAnsi(jsonResultText(x.text.length > 400_000 ? x.text.slice(0, 200_000) + '\n' + x.text.slice(-200_000) : x.text)));
}

/** The outcome of one tool result message. */
export function toolOutcome(m: Message): ToolOutcome {
  return memoMessage(m, 'tool-outcome', (x): ToolOutcome => {
    const text = resultText(x);
    const exitCode = x.exitCode ?? exitStatusOf(text);
    const verdict = verdictLines(text)[0];
    const rejected = isRejectedResult(text);
    const failed = rejected || x.isError === true || (exitCode !== undefined && exitCode !== 0) || (verdict !== undefined && verdictFailed(verdict));
    const base = { failed, ...(exitCode !== undefined ? { exitCode } : {}), ...(verdict !== undefined ? { verdict: clip(verdict, 200) } : {}) };
    if (!failed) return { ...base, assertions: [] };
    if (rejected) return { ...base, assertions: [], error: REJECTED_ERROR, rejected: true };
    const assertions = assertionLines(text).map((l) => clip(stripDanglingRefs(l), 240));
    // a file tool answers with a message of its own, not a program's output
    const refused = x.toolName !== undefined && (isWriteTool(x.toolName) || isReadTool(x.toolName));
    const error = errorLineOf(text, refused, assertions.length > 0 || verdict !== undefined);
    const frame = text.split('\n').find((l) => isFrameLine(l) && isProjectFrame(l))?.trim();
    return { ...base, assertions, ...(error !== undefined ? { error: clip(error, 240) } : {}), ...(frame !== undefined ? { frame: clip(frame, 200) } : {}) };
  });
}

/** Non-empty lines of a result, trimmed, dangling references stripped. */
function contentLines(text: string): string[] {
  return text.trim().split('\n').map((l) => stripDanglingRefs(l.trim())).filter((l) => l.length > 0);
}

/**
 * The error line of a failed result. A file tool (edit, write, read) that refused a call
 * leads with why — `error: Failed to find expected lines …`, `Found 2 matches of the
 * string to replace, but replace_all is false …` — and the lines after it often echo the call's
 * own arguments (an edit's old_string), which are no error at all: its first line is the error
 * when it states a failure, and the fallback when nothing else does. A command's output: the
 * most specific error line (an exception or assertion beats "npm ERR! Test failed" / "exit
 * code 1"); when no line reads as an error and nothing else (assertion, verdict) says what
 * failed, its last line (a failing command ends with why).
 */
function errorLineOf(text: string, refused: boolean, explained: boolean): string | undefined {
  const first = refused ? contentLines(text.length > 4000 ? text.slice(0, 4000) : text)[0] : undefined;
  if (first !== undefined && FAILURE_WORDS_RE.test(first)) return first;
  const errors = extractErrorLines(text)
    .map((l) => stripDanglingRefs(l))
    .filter((l) => l.length > 0 && !verdictLines(l).length);
  const error = [...errors].reverse().find((l) => !GENERIC_ERROR.test(l)) ?? errors[errors.length - 1];
  if (error !== undefined || explained) return error;
  const fallback = first ?? contentLines(text).pop();
  return fallback !== undefined && fallback.length <= 400 ? fallback : undefined;
}

/** Per-file gists of a tool call that edits files (apply_patch, Edit, MultiEdit, Write, str_replace). */
export function editGists(call: ToolCall): FileEditGist[] {
  const a = toolAction(call);
  const args = parseArgs(call.arguments);
  const patchText = [args['patch'], args['input'], a.command, call.arguments].find((p): p is string => typeof p === 'string' && /^\*\*\* (?:Update|Add|Delete) File:|^\+\+\+ /m.test(p));
  if (patchText) return patchGists(patchText);
  // A command that writes a file on the side (`npm test > out.log`, `sed -i`) made no edit whose
  // lines are known: it is told by its command and the path it wrote, never as `(+0 −0)`.
  if (!isWriteTool(call.name) && (a.writes.length === 0 || runCommand(call) !== undefined)) return [];
  const path = a.writes[0];
  if (path === undefined) return [];
  if (typeof args['old_string'] === 'string' && typeof args['new_string'] === 'string') return [replaceGist(path, args['old_string'], args['new_string'])];
  if (typeof args['old_str'] === 'string' && typeof args['new_str'] === 'string') return [replaceGist(path, args['old_str'], args['new_str'])];
  if (Array.isArray(args['edits'])) {
    const pairs = (args['edits'] as unknown[]).filter((e): e is Record<string, unknown> => typeof e === 'object' && e !== null);
    const old = pairs.map((e) => (typeof e['old_string'] === 'string' ? e['old_string'] : '')).join('\n');
    const neu = pairs.map((e) => (typeof e['new_string'] === 'string' ? e['new_string'] : '')).join('\n');
    return [replaceGist(path, old, neu)];
  }
  const content = [args['content'], args['file_text'], args['text']].find((c): c is string => typeof c === 'string');
  if (content !== undefined) return [replaceGist(path, '', content)];
  return a.writes.map((p) => ({ path: p, action: 'update' as const, hunks: [], added: 0, removed: 0, identifiers: [] }));
}

/** One line per edited file: `edited a.ts (+3 −1) at "export function f"; changed f`. */
export function describeEdits(call: ToolCall): string[] {
  return editGists(call).map(describeEditGist);
}

/** A command that only carries a patch (Codex `apply_patch <<EOF`, a bare patch): an edit, not a program run. */
const PATCH_COMMAND_RE = /^\*\*\* Begin Patch|apply_patch\s*<</;

/** The command a call runs, unless it only carries a patch (then the call is named by its files). */
function runCommand(call: ToolCall): string | undefined {
  const { command } = toolAction(call);
  return command !== undefined && !PATCH_COMMAND_RE.test(command) ? command : undefined;
}

/**
 * Whether a call is a file edit (an edit tool, a patch), told by its files: not a command that
 * writes a file on the side (`npm test > out.log`, `sed -i`), which is told by its command.
 */
export function isFileEdit(call: ToolCall): boolean {
  return runCommand(call) === undefined && editGists(call).length > 0;
}

/** A short name of a call for summaries: its command, or `Tool(path)`. */
export function describeCall(call: ToolCall): string {
  const a = toolAction(call);
  const command = runCommand(call);
  if (command !== undefined) return `\`${clip(command.replace(/\s+/g, ' ').trim(), 140)}\``;
  const target = a.writes[0] ?? a.reads[0];
  return target ? `${call.name}(${target})` : `${call.name}(${clip(call.arguments.replace(/\s+/g, ' '), 80)})`;
}

/** Describe a tool result's outcome for a summary; undefined when there is nothing to say. */
export function describeOutcome(o: ToolOutcome): string | undefined {
  const status = o.exitCode !== undefined ? `exit ${o.exitCode}` : o.failed ? 'failed' : undefined;
  if (!status && !o.verdict) return undefined;
  return [status, o.verdict].filter((x) => x !== undefined).join(': ');
}
