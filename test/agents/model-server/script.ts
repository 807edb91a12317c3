/**
 * What the scripted model says. A script is a list of turns; a turn is a list of steps, each
 * an optional text plus an optional tool action. The model server maps an abstract action onto
 * whichever tool the agent offered in its request (Claude Code's Bash/Read/Edit, Codex's shell
 * tools), so one script drives both agents.
 *
 * Which step to play is read from the request itself where possible: every tool-call id the
 * server issues carries its turn and step (`ctxd_t<turn>s<step>_<n>`), so a request whose last
 * item is the result of step k gets step k + 1. A request ending in a fresh user prompt starts
 * the turn that prompt selects. A request ending in the agent's own "continue after
 * compaction" text resumes after the last step served.
 */

/** An agent-neutral tool action. */
export type ToolAction =
  | { readonly kind: 'shell'; readonly command: string }
  | { readonly kind: 'read'; readonly path: string }
  | { readonly kind: 'edit'; readonly path: string; readonly oldText: string; readonly newText: string };

/** One model reply. A step without an action ends the turn (`end_turn` / a final message). */
export interface Step {
  readonly text?: string;
  readonly action?: ToolAction;
}

export interface Turn {
  /** The prompt that selects this turn; a turn without `match` is the default. */
  readonly match?: RegExp;
  readonly steps: readonly Step[];
}

export interface Script {
  readonly turns: readonly Turn[];
  /** The answer to the agent's own compaction request (its "summarize the conversation" call). */
  readonly summary: string;
  /** The answer to any other side request (titles, topic checks, quota probes). */
  readonly sideReply?: string;
  /**
   * Once a main request quotes a contextd summary (`[contextd recall h_…]`) and offers the
   * `contextd_recall` tool, call that tool once with the first handle quoted, then go on with
   * the script where it was.
   */
  readonly recallOnce?: boolean;
}

/** The tool contextd's proxy offers (proxy.recallTool). */
export const RECALL_TOOL = 'contextd_recall';
/** A handle as summaries quote it. */
export const QUOTED_HANDLE_RE = /\[contextd recall (h_[0-9a-f]{16})\]/;
/** Call ids of the server's recall calls (`toolu_recall_3`, `call_recall_3`). */
export const RECALL_CALL_RE = /_recall_\d+$/;

/** Where in the script a reply comes from. */
export interface Cursor {
  readonly turn: number;
  readonly step: number;
}

const ID_RE = /ctxd_t(\d+)s(\d+)_/;

/** A tool-call id that records which step issued it. */
export function stepCallId(prefix: string, cursor: Cursor, n: number): string {
  return `${prefix}ctxd_t${cursor.turn}s${cursor.step}_${n}`;
}

/** The step that issued a tool-call id, if the server issued it. */
export function cursorOfCallId(id: string): Cursor | undefined {
  const m = ID_RE.exec(id);
  if (!m) return undefined;
  return { turn: Number(m[1]), step: Number(m[2]) };
}

/** Text the agents put in place of the user's prompt after their own compaction. */
export const CONTINUATION_RE = /continued from a previous conversation|continue the conversation from where|pick up where we left off/i;
/** The agents' own compaction requests (Claude Code's and Codex's summarization prompts). */
export const COMPACTION_REQUEST_RE =
  /(create|write|provide) (a )?(detailed |concise )?summary of the conversation|your summary|context checkpoint compaction|handoff summary|summariz(e|ing) the conversation/i;

/** The turn a fresh prompt selects: the first whose `match` tests it, else the first default. */
export function turnForPrompt(script: Script, prompt: string): number {
  const matched = script.turns.findIndex((t) => t.match?.test(prompt));
  if (matched >= 0) return matched;
  const dflt = script.turns.findIndex((t) => !t.match);
  return dflt >= 0 ? dflt : 0;
}

/** The step after `cursor`, or undefined when the turn is over. */
export function nextCursor(script: Script, cursor: Cursor): Cursor | undefined {
  const turn = script.turns[cursor.turn];
  if (!turn || cursor.step + 1 >= turn.steps.length) return undefined;
  return { turn: cursor.turn, step: cursor.step + 1 };
}

export function stepAt(script: Script, cursor: Cursor): Step | undefined {
  return script.turns[cursor.turn]?.steps[cursor.step];
}

/** Options of {@link codingTask}. */
export interface CodingTaskOptions {
  /** Lines each verbose build prints. Default 400. */
  readonly buildLines?: number;
  /** How many verbose builds run before the failing command. Default 3. */
  readonly builds?: number;
  /** See {@link Script.recallOnce}. Default false. */
  readonly recallOnce?: boolean;
}

/**
 * The standard scripted coding task, run inside a workspace made by {@link writeCodingWorkspace}:
 * read a file, several verbose builds, a failing test, an edit, a passing re-run, a final
 * answer. A second turn (prompt matching /status|continue|next/) answers in one text step
 * after one cheap command, so a resumed or forked session can prove it completes a turn.
 */
export function codingTask(opts: CodingTaskOptions = {}): Script {
  const builds = opts.builds ?? 3;
  const steps: Step[] = [{ text: 'Reading the calculator first.', action: { kind: 'read', path: 'src/calc.txt' } }];
  for (let i = 0; i < builds; i++) steps.push({ text: `Running build ${i + 1}.`, action: { kind: 'shell', command: `sh build.sh ${i + 1}` } });
  steps.push(
    { text: 'Running the tests.', action: { kind: 'shell', command: 'sh test.sh' } },
    { text: 'The test expects 4; fixing the operator.', action: { kind: 'edit', path: 'src/calc.txt', oldText: 'result = a - b', newText: 'result = a + b' } },
    { text: 'Re-running the tests.', action: { kind: 'shell', command: 'sh test.sh' } },
    { text: 'Fixed: src/calc.txt now adds; the tests pass.' },
  );
  return {
    turns: [
      { match: /status|continue|next step/i, steps: [{ text: 'Checking the tests once more.', action: { kind: 'shell', command: 'sh test.sh' } }, { text: 'All done: the tests still pass.' }] },
      { steps },
    ],
    summary: 'Summary: the user asked to fix the calculator so the tests pass. The operator in src/calc.txt was changed from minus to plus and the tests pass.',
    sideReply: 'ok',
    ...(opts.recallOnce ? { recallOnce: true } : {}),
  };
}

/** Files the coding task expects in its workspace (relative path → content). */
export function codingWorkspaceFiles(buildLines = 400): Record<string, string> {
  return {
    'src/calc.txt': 'def add(a, b):\n    result = a - b\n    return result\n',
    'build.sh': `#!/bin/sh\ni=0\nwhile [ $i -lt ${buildLines} ]; do echo "[build $1] compiling module_$i.c -> build/obj/module_$i.o (cc -O2 -Wall -Iinclude -DLEVEL=$((i % 7)))"; i=$((i+1)); done\necho "build $1 ok"\n`,
    'test.sh': '#!/bin/sh\nif grep -q "a + b" src/calc.txt; then echo "test_add PASSED"; else echo "test_add FAILED: expected 4, got 0" >&2; echo "Traceback: calc.add(2, 2) returned 0" >&2; exit 1; fi\n',
    'vendor/lib.txt': 'third-party code: do not edit\n',
  };
}
