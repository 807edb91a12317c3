/**
 * A shell command line read as the shell reads it, as far as "which files does it name" needs:
 * the simple commands it runs (their words, quotes removed) and their redirections.
 *
 * Quoting is honoured, so a `>` or `;` inside `'…'`, `"…"` (with its backslash escapes), `$'…'`
 * or after a backslash is text, not an operator: `python -c 'assert n >= 0'` redirects nothing.
 * Redirections are told apart by kind: `>`, `>|`, `&>` write a file; `>>`, `&>>` append to
 * one; `2>&1`, `>&2`, `<&-` only duplicate or close descriptors; `<<` / `<<-` start a here-document
 * (its body is skipped, up to the delimiter line); `<<<` is a here-string. A process
 * substitution `>(…)` / `<(…)` is no file: the commands inside it are read as commands, as are
 * those of a command substitution `$(…)` / `` `…` ``. Arithmetic (`((…))`, `$((…))`) and the
 * comparisons of `[[ … ]]` redirect nothing, and a comment ends at its line.
 *
 * Best effort and total: any text gives a result (an unterminated quote runs to the end);
 * variables, globs and aliases are left as written.
 */

/** How a redirection uses its target. */
export type ShellRedirectKind = 'write' | 'append' | 'read' | 'readwrite' | 'dup' | 'heredoc' | 'herestring';

export interface ShellRedirect {
  readonly kind: ShellRedirectKind;
  /**
   * The target word, quotes removed: a path for `write`, `append`, `read` and `readwrite`; a
   * descriptor (or `-`) for `dup`; the delimiter for `heredoc`; the text for `herestring`.
   */
  readonly target: string;
}

/** One simple command: its words (quotes removed; process substitutions left out) and redirections. */
export interface ShellCommand {
  readonly words: readonly string[];
  readonly redirects: readonly ShellRedirect[];
}

/** Every simple command of a command line, those inside substitutions included. */
export function shellCommands(script: string): ShellCommand[] {
  const commands: ShellCommand[] = [];
  new Scanner(script, 0, commands, []).list(false);
  return commands;
}

/**
 * Where a simple command's name is among its words: past the reserved words that may stand
 * before a command (`if`, `then`, `!`, …: `BEFORE_COMMAND`) and `NAME=value` assignments.
 * `words.length` when there is none.
 */
export function commandNameAt(words: readonly string[]): number {
  let i = 0;
  while (i < words.length && (BEFORE_COMMAND.has(words[i] as string) || ASSIGNMENT.test(words[i] as string))) i++;
  return i;
}

/** A word as the shell would read it back: as is when it is plain, else single-quoted. */
export function shellQuote(word: string): string {
  return /^[\w@%+=:,./-]+$/.test(word) ? word : `'${word.replace(/'/g, `'\\''`)}'`;
}

/**
 * Substitutions nested deeper than this are skipped, not read: a transcript is untrusted text,
 * and `$($($(…` thousands deep must not overflow the stack.
 */
const MAX_NESTING = 32;

/** Characters that end an unquoted word. */
const METACHARS = new Set([' ', '\t', '\n', ';', '&', '|', '<', '>', '(', ')']);
/**
 * Reserved words a command may follow on its line: `[[` after them still opens a test
 * (`if [[ $a > $b ]]`, `! [[ … ]]`, `time [[ … ]]`).
 */
const BEFORE_COMMAND = new Set(['!', '{', 'if', 'then', 'elif', 'else', 'while', 'until', 'do', 'time']);
/** A variable assignment before a command's name: `LANG=C sort`. */
const ASSIGNMENT = /^[A-Za-z_]\w*=/;
/** An unquoted descriptor before a redirection operator: `2>`, `{fd}>`. */
const FD_PREFIX = /^(?:\d+|\{\w+\})$/;

const OPERATOR_KINDS: Readonly<Record<string, ShellRedirectKind>> = {
  '>': 'write',
  '>|': 'write',
  '>>': 'append',
  '>&': 'dup',
  '<': 'read',
  '<>': 'readwrite',
  '<&': 'dup',
  '<<': 'heredoc',
  '<<-': 'heredoc',
  '<<<': 'herestring',
};

interface Word {
  readonly text: string;
  /** Whether any part of it was quoted or escaped (then it is never a descriptor or `]]`). */
  readonly quoted: boolean;
}

interface PendingHeredoc {
  readonly delimiter: string;
  readonly stripTabs: boolean;
}

class Scanner {
  i = 0;
  constructor(
    private readonly s: string,
    private readonly depth: number,
    /** Where every command read is put, those of substitutions included. */
    private readonly commands: ShellCommand[],
    /** Here-documents started on the current line, their bodies still to skip. */
    private readonly heredocs: PendingHeredoc[],
  ) {}

  /** Read the commands of a substitution whose `(` ends before `this.i`, through its `)`. */
  private nested(): void {
    if (this.depth >= MAX_NESTING) {
      this.i = this.skipParens(this.i, 1);
      return;
    }
    const inner = new Scanner(this.s, this.depth + 1, this.commands, this.heredocs);
    inner.i = this.i;
    inner.list(true);
    this.i = inner.i;
  }

  /**
   * Read commands up to the end, or (`nested`) up to the `)` that closes a substitution (then
   * consumed). Returns at the end of the text either way.
   */
  list(nested: boolean): void {
    const s = this.s;
    let words: string[] = [];
    let redirects: ShellRedirect[] = [];
    let depth = 0;
    // inside `[[ … ]]`, where `<` and `>` compare strings
    let test = false;
    const end = (): void => {
      if (words.length > 0 || redirects.length > 0) this.commands.push({ words, redirects });
      words = [];
      redirects = [];
      test = false;
    };
    while (this.i < s.length) {
      const c = s[this.i] ?? '';
      const next = s[this.i + 1] ?? '';
      if (c === ' ' || c === '\t') {
        this.i++;
      } else if (c === '\\' && next === '\n') {
        this.i += 2;
      } else if (c === '\n') {
        this.i++;
        end();
        this.heredocBodies();
      } else if (c === '#') {
        while (this.i < s.length && s[this.i] !== '\n') this.i++;
      } else if (c === '(' && next === '(') {
        // `(( a > b ))`, `for ((i = 9; i > 0; i--))`: arithmetic, no redirection
        this.i = this.skipParens(this.i + 2, 2);
      } else if (c === '(') {
        this.i++;
        end();
        depth++;
      } else if (c === ')') {
        this.i++;
        end();
        if (depth === 0 && nested) return;
        depth = Math.max(0, depth - 1);
      } else if (c === '&' && next === '>') {
        this.i += 2;
        const append = s[this.i] === '>';
        if (append) this.i++;
        this.target(append ? 'append' : 'write', redirects);
      } else if (c === ';' || c === '&' || c === '|') {
        this.i++;
        end();
      } else if ((c === '<' || c === '>') && test) {
        // `[[ $a > $b ]]` compares strings
        this.i++;
        words.push(c);
      } else if ((c === '<' || c === '>') && next === '(') {
        // a process substitution: a command of its own, and an argument that is no file
        this.i += 2;
        this.nested();
      } else if (c === '<' || c === '>') {
        this.redirect(redirects);
      } else {
        const w = this.word();
        if (!w.quoted && FD_PREFIX.test(w.text) && (s[this.i] === '<' || s[this.i] === '>') && s[this.i + 1] !== '(') this.redirect(redirects);
        else {
          if (w.text === '[[' && !w.quoted && words.every((x) => BEFORE_COMMAND.has(x))) test = true;
          else if (w.text === ']]' && !w.quoted) test = false;
          words.push(w.text);
        }
      }
    }
    end();
  }

  /** Read a redirection operator at `this.i` and its target. */
  private redirect(redirects: ShellRedirect[]): void {
    const s = this.s;
    const op = /^(?:<<<|<<-|<<|<>|<&|<|>>|>\||>&|>)/.exec(s.slice(this.i, this.i + 3))?.[0] ?? '>';
    this.i += op.length;
    const r = this.target(OPERATOR_KINDS[op] ?? 'write', redirects);
    if (!r) return;
    if (r.kind === 'heredoc') this.heredocs.push({ delimiter: r.target, stripTabs: op === '<<-' });
    // `>&2`, `>&-`: a descriptor; `>& file` (bash): the file gets stdout and stderr
    else if (op === '>&' && !/^(?:\d+-?|-)$/.test(r.target)) redirects[redirects.length - 1] = { kind: 'write', target: r.target };
  }

  /** The target word of a redirection (after blanks), recorded; undefined when there is none. */
  private target(kind: ShellRedirectKind, redirects: ShellRedirect[]): ShellRedirect | undefined {
    const s = this.s;
    while (s[this.i] === ' ' || s[this.i] === '\t') this.i++;
    const c = s[this.i];
    if ((c === '<' || c === '>') && s[this.i + 1] === '(') {
      // `> >(tee log)`: the target is a process, not a file
      this.i += 2;
      this.nested();
      return undefined;
    }
    if (c === undefined || METACHARS.has(c)) return undefined;
    const r: ShellRedirect = { kind, target: this.word().text };
    redirects.push(r);
    return r;
  }

  /** Read one word from `this.i` (not at a metacharacter), quotes removed. */
  private word(): Word {
    const s = this.s;
    let text = '';
    let quoted = false;
    while (this.i < s.length) {
      const c = s[this.i] ?? '';
      const next = s[this.i + 1] ?? '';
      if (METACHARS.has(c)) break;
      if (c === '\\') {
        this.i += 2;
        if (next !== '\n') text += next;
        quoted = true;
      } else if (c === "'") {
        const close = s.indexOf("'", this.i + 1);
        const stop = close < 0 ? s.length : close;
        text += s.slice(this.i + 1, stop);
        this.i = stop + 1;
        quoted = true;
      } else if (c === '$' && next === "'") {
        this.i += 2;
        while (this.i < s.length && s[this.i] !== "'") {
          if (s[this.i] === '\\') this.i++;
          text += s[this.i] ?? '';
          this.i++;
        }
        this.i++;
        quoted = true;
      } else if (c === '"') {
        this.i++;
        text += this.doubleQuoted();
        quoted = true;
      } else if (c === '$' || c === '`') {
        text += this.expansion();
      } else {
        text += c;
        this.i++;
      }
    }
    return { text, quoted };
  }

  /** The text of a double-quoted string from after its `"` (consumed with its closing `"`). */
  private doubleQuoted(): string {
    const s = this.s;
    let text = '';
    while (this.i < s.length && s[this.i] !== '"') {
      const c = s[this.i] ?? '';
      const next = s[this.i + 1] ?? '';
      if (c === '\\') {
        this.i += 2;
        if (next === '\n') continue;
        text += '$`"\\'.includes(next) ? next : `\\${next}`;
      } else if (c === '$' || c === '`') {
        text += this.expansion();
      } else {
        text += c;
        this.i++;
      }
    }
    this.i++;
    return text;
  }

  /**
   * An expansion at `this.i` (`$(…)`, `$((…))`, `${…}`, `` `…` ``, or a plain `$`), as written.
   * The commands of a command substitution are read as commands.
   */
  private expansion(): string {
    const s = this.s;
    const start = this.i;
    if (s.startsWith('$((', start)) {
      this.i = this.skipParens(start + 3, 2);
    } else if (s.startsWith('$(', start)) {
      this.i += 2;
      this.nested();
    } else if (s.startsWith('${', start)) {
      const close = s.indexOf('}', start + 2);
      this.i = close < 0 ? s.length : close + 1;
    } else if (s[start] === '`') {
      let j = start + 1;
      let inner = '';
      while (j < s.length && s[j] !== '`') {
        if (s[j] === '\\' && '$`\\'.includes(s[j + 1] ?? '')) j++;
        inner += s[j] ?? '';
        j++;
      }
      this.i = j + 1;
      if (this.depth < MAX_NESTING) new Scanner(inner, this.depth + 1, this.commands, []).list(false);
    } else {
      this.i++;
    }
    return s.slice(start, Math.min(this.i, s.length));
  }

  /** The index after the `)` that brings `depth` open parentheses from `from` back to none. */
  private skipParens(from: number, depth: number): number {
    const s = this.s;
    let j = from;
    let open = depth;
    while (j < s.length && open > 0) {
      if (s[j] === '(') open++;
      else if (s[j] === ')') open--;
      j++;
    }
    return j;
  }

  /** Skip the bodies of the here-documents started on the line just ended. */
  private heredocBodies(): void {
    const s = this.s;
    for (const h of this.heredocs.splice(0)) {
      while (this.i < s.length) {
        const eol = s.indexOf('\n', this.i);
        const stop = eol < 0 ? s.length : eol;
        const line = s.slice(this.i, stop);
        this.i = stop + 1;
        if ((h.stripTabs ? line.replace(/^\t+/, '') : line) === h.delimiter) break;
      }
    }
    this.i = Math.min(this.i, s.length);
  }
}
