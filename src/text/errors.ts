/**
 * Stack traces, error lines, exit statuses and test verdicts in tool output and prose. Pure.
 * One set of rules for the model (section kinds), compaction (detectors, summaries, the
 * survival check) and harvest (error signatures).
 */
import { uniq } from './prose.js';
import { isDigitCode, isSpaceCode } from './chars.js';

const EXCEPTION_RE =
  /^\s*(?:Traceback \(most recent call last\)|(?:[A-Za-z_$][\w$.]*\.)?[A-Z][\w$]*(?:Error|Exception|Fault|Panic|Failure)\b(?::|\s*\(|$)|(?:Uncaught |Unhandled )?(?:Error|error|ERROR|fatal|FATAL|panic|FAIL(?:ED)?|E\s{2,}\S|npm ERR!|error\[E\d+\]|error TS\d+)[:!\s])/;
const NONZERO_EXIT_RE = /\b(?:exit code|exit status|exited with(?: code| status)?|non-zero exit status)\s*:?\s*[1-9]\d*/i;

/** Lines that state an exception, error or failure (or a non-zero exit). */
export function extractErrorLines(text: string): string[] {
  const out: string[] = [];
  for (const line of text.split('\n')) {
    if (line.length > 400) continue;
    if (EXCEPTION_RE.test(line) && !/^\s*Traceback/.test(line)) out.push(line.trim());
    else if (NONZERO_EXIT_RE.test(line)) out.push(line.trim());
  }
  return uniq(out);
}

const FRAME_RES = [
  /^\s*at\s+(?:.*?\()?((?:[A-Za-z]:)?[^\s()]+?):\d+(?::\d+)?\)?\s*$/, // JS
  /^\s*File "([^"]+)", line \d+/, // Python
  /^\s*at\s+[\w$.<>]+\(([\w$.-]+):\d+\)\s*$/, // Java
  /^\s*\d+:\s+(?:0x[0-9a-f]+\s+-\s+)?[\w:<>]+::[\w:<>{}]+/, // Rust backtrace (`  3: core::panicking::panic`)
  /^\s*from\s+([^\s:]+):\d+/, // Ruby
  /^\s*#\d+\s+.*?\s+at\s+(\S+):\d+/, // gdb-style
];

/**
 * What every FRAME_RES pattern starts with: after leading white space, `a`t, `F`ile, `f`rom,
 * `#` or a digit. A line that does not is no frame, and most lines of a text are not: one
 * test instead of six.
 */
const FRAME_START = /^\s*[aFf#\d]/;
/** FRAME_START's character after the white space. */
const FRAME_START_CHAR = /[aFf#\d]/;

/** True when the line is one stack frame. */
export function isFrameLine(line: string): boolean {
  return FRAME_START.test(line) && FRAME_RES.some((re) => re.test(line));
}

/** The file a frame line points at ('' if unknown). */
export function frameFile(line: string): string {
  for (const re of FRAME_RES) {
    const m = re.exec(line);
    if (m) return m[1] ?? '';
  }
  return '';
}

const FOREIGN_FRAME_RE = /node_modules|site-packages|dist-packages|node:internal|\binternal\/|<frozen|\/usr\/lib\/|\/lib\/python\d|^java\.|^sun\.|^jdk\.|\.cargo\/registry|\/rustc\/|<anonymous>|^native$/;

/** True when the frame is in project code (not a dependency, the runtime or the stdlib). */
export function isProjectFrame(line: string): boolean {
  const file = frameFile(line);
  if (!file) return false;
  return !FOREIGN_FRAME_RE.test(file) && !FOREIGN_FRAME_RE.test(line);
}

/**
 * Number of stack-frame lines in the text (`isFrameLine` of each line). A line is cut out of
 * the text only when it starts as a frame does (FRAME_START, read from the character codes):
 * most lines are passed over without a string of their own.
 */
export function countFrames(text: string): number {
  return countFramesFrom(text, 0);
}

/**
 * `countFrames(head + ' ' + tail)` (a tool call's name and arguments, as the detectors read
 * them) without joining the two: only the joined first line can differ from `tail`'s own, and
 * it is built only when `head` starts as a frame may (its first non-white-space character is
 * one FRAME_START allows). A tool name never does, so a call's arguments are read in place.
 */
export function countFramesJoined(head: string, tail: string): number {
  let i = 0;
  while (i < head.length && isSpaceCode(head.charCodeAt(i))) i++;
  if (i === head.length || head.includes('\n') || FRAME_START_CHAR.test(head.charAt(i))) return countFrames(`${head} ${tail}`);
  // the joined first line starts as `head` does: no frame; the rest are `tail`'s own lines
  const nl = tail.indexOf('\n');
  return nl < 0 ? 0 : countFramesFrom(tail, nl + 1);
}

/** `countFrames` of the lines of `text` from offset `start` (a line's first character) on. */
function countFramesFrom(text: string, start: number): number {
  let n = 0;
  while (start <= text.length) {
    let end = text.indexOf('\n', start);
    if (end < 0) end = text.length;
    let i = start;
    while (i < end && isSpaceCode(text.charCodeAt(i))) i++;
    if (i < end && startsLikeFrame(text, i, end) && FRAME_RES.some((re) => re.test(text.slice(start, end)))) n++;
    start = end + 1;
  }
  return n;
}

/**
 * Whether `text[i, end)` (a line from its first non-white-space character) starts as some
 * FRAME_RES pattern requires: `at` + white space, `File "`, `from` + white space, `#` + digits
 * + white space, or digits + `:` + white space. Lines that start with a number but not so
 * (a file read's line numbers, counts in test output) are common: they are passed over here.
 */
function startsLikeFrame(text: string, i: number, end: number): boolean {
  const c = text.charCodeAt(i);
  if (isDigitCode(c)) {
    const k = digitsEnd(text, i + 1, end);
    return k < end && text.charCodeAt(k) === 58 /* : */ && spaceAt(text, k + 1, end);
  }
  switch (c) {
    case 97: // a
      return text.startsWith('at', i) && spaceAt(text, i + 2, end);
    case 70: // F
      return text.startsWith('File "', i);
    case 102: // f
      return text.startsWith('from', i) && spaceAt(text, i + 4, end);
    case 35: {
      // #
      const k = digitsEnd(text, i + 1, end);
      return k > i + 1 && spaceAt(text, k, end);
    }
    default:
      return false;
  }
}

// startsLikeFrame's steps are functions of their own, not closures: it runs on most lines of
// every tool output a plan reads, and a closure made per call was most of what a cold plan's
// trace detector allocated.

/** Whether `text[k]` is white space before `end`. */
function spaceAt(text: string, k: number, end: number): boolean {
  return k < end && isSpaceCode(text.charCodeAt(k));
}

/** The offset after the digits of `text` from `k` on (before `end`). */
function digitsEnd(text: string, k: number, end: number): number {
  while (k < end && isDigitCode(text.charCodeAt(k))) k++;
  return k;
}

const TRACE_HEADER = /Traceback \(most recent call last\)|^panic: |^Exception in thread |^\s*(?:Uncaught |Unhandled )?[A-Z]\w*(?:Error|Exception)(?: \[\w+\])?: |npm ERR!|^error(?:\[E\d+\])?: /m;
const TRACE_FRAME = /^\s+at .+[(:]\d+|^\s+File ".+", line \d+|^\s+\d+: 0x[0-9a-f]+|^goroutine \d+ \[/gm;

/** True when `text` looks like an exception or stack trace (a header line, or ≥ 2 stack frames). */
export function looksLikeStackTrace(text: string): boolean {
  const head = text.length > 50_000 ? text.slice(0, 25_000) + text.slice(-25_000) : text;
  if (TRACE_HEADER.test(head)) return true;
  const frames = head.match(TRACE_FRAME);
  return frames !== null && frames.length >= 2;
}

/** Normalize a line for comparison: paths, quoted strings, hex and numbers folded. */
export function normalizeSignature(line: string): string {
  return line
    .replace(/\x1b\[[0-9;]*m/g, '')
    .replace(/(["'`]).{0,200}?\1/g, '<s>')
    .replace(/(?:[A-Za-z]:)?(?:[~.]{0,2}\/)?(?:[\w.@-]+\/)+[\w.@-]*/g, '<path>')
    .replace(/\b[0-9a-f]{7,}\b/gi, '<hex>')
    .replace(/\d+(?:\.\d+)*/g, 'N')
    .replace(/(?:<s>[,\s]*){2,}/g, '<s> ')
    .replace(/\s+/g, ' ')
    .trim()
    .toLowerCase()
    .slice(0, 120);
}

/**
 * A tool result saying the call was declined before it ran: the user rejected or interrupted
 * it, or denied its permission (Claude Code's "The user doesn't want to proceed with this tool
 * use. The tool use was rejected (…)", "[Request interrupted by user for tool use]").
 */
const REJECTED_RESULT_RE =
  /^(?:The user doesn't want to proceed|\[Request interrupted|User rejected|The user rejected|(?:The )?tool use was rejected|Permission to use .* (?:was )?denied by the user)/i;

/** True when a tool result says the call was rejected or interrupted, so it never ran. */
export function isRejectedResult(text: string): boolean {
  return REJECTED_RESULT_RE.test(text.trimStart());
}

/** A line with any of these words may describe a failure (loose: for error signatures). */
export const FAILURE_WORDS_RE =
  /(error|exception|failed|failure|not found|no such|denied|cannot|can't|unable|invalid|refused|timed? ?out|exit code|traceback|fatal|panic|unexpected|missing|undefined|not allowed|conflict|already exists|must be|found \d+ matches)/i;

/** Strip ANSI colour codes. */
export function stripAnsi(text: string): string {
  return text.replace(/\x1b\[[0-9;]*[A-Za-z]/g, '');
}

/** The exit status a tool result states (`Exit code: 1`, `exited with code 2`, `exit status 0`), if any. */
export function exitStatusOf(text: string): number | undefined {
  const m = /\b(?:exit code|exit status|exited with(?: code| status)?|process exited with code|exit_code"?)\s*[:=]?\s*(-?\d+)/i.exec(text.length > 4000 ? text.slice(0, 2000) + text.slice(-2000) : text);
  return m?.[1] !== undefined ? Number(m[1]) : undefined;
}

/** A test-run verdict line: counts of passed/failed tests (vitest, jest, pytest, mocha, cargo, go, tsc). */
const VERDICT_RES = [
  /^\s*(?:Tests?|Test Files|Test Suites)\s*:?\s+(?:\d+\s+(?:failed|passed|skipped|todo|pending)\b[\s|,]*)+(?:\(\d+\)|,?\s*\d+\s+total)?/i, // vitest / jest
  /^=+\s*(?:\d+\s+(?:failed|passed|errors?|skipped|xfailed|xpassed|warnings?|deselected)[, ]*)+(?:in\s+[\d.]+s)?[^=]*=+$/, // pytest
  /^\s*\d+\s+(?:passing|failing|pending)\b/, // mocha
  /^\s*test result:\s+(?:ok|FAILED)\.\s+\d+\s+passed/, // cargo
  /^(?:ok|FAIL|---\s+FAIL:)\s+\S+/, // go test
  /^\s*Found\s+\d+\s+errors?\b/, // tsc --watch / tsc
  /^\s*Ran\s+\d+\s+tests?\s+in\b/, // unittest
  /^\s*(?:OK|FAILED)\s*(?:\((?:failures|errors|skipped)=\d+(?:,\s*\w+=\d+)*\))?\s*$/, // unittest verdict
  /^\s*(?:Tests|Examples):\s*\d+/, // misc
  /^\s*\d+\s+examples?,\s+\d+\s+failures?/, // rspec
];

/** The verdict lines of a test or build run, last first (the final verdict). */
export function verdictLines(text: string): string[] {
  const out: string[] = [];
  const lines = stripAnsi(text).split('\n');
  for (let i = lines.length - 1; i >= 0 && out.length < 4; i--) {
    const l = lines[i] ?? '';
    if (l.length > 300) continue;
    if (VERDICT_RES.some((re) => re.test(l))) out.push(l.trim().replace(/\s{2,}/g, ' '));
  }
  return uniq(out);
}

/** True when a verdict line reports failures (`3 failed`, `FAILED`, `2 failing`, `Found 1 error`). */
export function verdictFailed(line: string): boolean {
  return /\b[1-9]\d*\s+(?:failed|failing|errors?|failures?)\b|\bFAILED\b|^FAIL\b|---\s+FAIL/.test(line);
}

/** Assertion messages of a failed test (`expected '' to be '??'`, `AssertionError: …`, pytest `E   assert …`). */
const ASSERTION_RES = [
  /^\s*(?:[×✗✕]\s+)?(?:AssertionError|AssertError)\b.*$/,
  /^\s*(?:→\s*)?expected\s.+\s(?:to\s(?:be|equal|have|contain|match|throw|deeply)|not\sto)\b.*$/i,
  /^\s*Expected:?\s+.+$/,
  /^\s*Received:?\s+.+$/,
  /^E\s+(?:assert|AssertionError|\w+Error)\b.*$/,
  /^\s*assert(?:ion)?\s+.+\s+(?:failed|==|!=)\s*.*$/i,
];

/** Assertion lines of a test failure, in order, at most `max`. */
export function assertionLines(text: string, max = 4): string[] {
  const out: string[] = [];
  for (const l of stripAnsi(text).split('\n')) {
    if (l.length > 400) continue;
    if (ASSERTION_RES.some((re) => re.test(l))) out.push(l.trim());
    if (out.length >= max * 2) break;
  }
  return uniq(out).slice(0, max);
}

/** Words every failure says; a signature needs two others to mean something. */
const GENERIC_WORDS = new Set(['exit', 'code', 'error', 'errors', 'failed', 'failure', 'command', 'status', 'with', 'returned', 'non', 'zero', 'the', 'and', 'process', 'exited']);

/** The error text inside a JSON tool result (`error`, `stderr`, `output`, `message`, `content`). */
function errorTextOf(text: string): string {
  const t = text.trim();
  if (!t.startsWith('{')) return text;
  try {
    const v = JSON.parse(t) as Record<string, unknown>;
    for (const k of ['error', 'stderr', 'message', 'output', 'content', 'result']) {
      const f = v[k];
      if (typeof f === 'string' && f.trim().length > 0) return f;
      if (typeof f === 'object' && f !== null && typeof (f as Record<string, unknown>)['message'] === 'string') return (f as Record<string, string>)['message'] ?? '';
    }
    return '';
  } catch {
    return text;
  }
}

/**
 * The normalized first error line of a failed call's output, or undefined when there is none
 * or it says too little (fewer than two real words once paths, strings and numbers are folded).
 */
export function errorSignature(text: string | undefined): string | undefined {
  if (text === undefined) return undefined;
  const lines = errorTextOf(text).split('\n').map((l) => l.trim()).filter((l) => l.length > 0).slice(0, 60);
  // The first error line that says something: Claude Code puts a bare `Exit code 1` first,
  // the assertion or exception that names the problem comes after it.
  for (const line of lines) {
    if (!FAILURE_WORDS_RE.test(line)) continue;
    const sig = normalizeSignature(line);
    const words = (sig.replace(/<(?:s|path|hex)>/g, ' ').match(/[a-z]{3,}/g) ?? []).filter((w) => !GENERIC_WORDS.has(w));
    if (words.length >= 2) return sig;
  }
  return undefined;
}
