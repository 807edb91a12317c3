/**
 * The paths a shell command reads and writes, read with the shell's quoting: a `>` inside
 * quoted code is text, not a redirect to a file named `=` or `b)`.
 */
import fc from 'fast-check';
import { describe, expect, it } from 'vitest';
import { toolAction } from '../../src/model/toolargs.js';
import { shellCommands, shellQuote } from '../../src/model/shell.js';

const bash = (command: string) => toolAction({ id: 'c', name: 'Bash', arguments: JSON.stringify({ command }) });

/** Command line → the paths it writes. */
const WRITES: readonly (readonly [string, readonly string[]])[] = [
  // ordinary redirects
  ['echo x > out.txt', ['out.txt']],
  ['echo x >out.txt', ['out.txt']],
  ['cmd >> log', ['log']],
  ['npm test > out.log 2>&1', ['out.log']],
  ['make 2> err.log', ['err.log']],
  ['make &> all.log', ['all.log']],
  ['make &>> all.log', ['all.log']],
  ['set -o noclobber; date >| stamp.txt', ['stamp.txt']],
  ['make >& build.log', ['build.log']],
  ["echo hi > 'my file.txt'", ['my file.txt']],
  ['echo hi > "dir/with space.txt"', ['dir/with space.txt']],
  ['cd /w/app && npm run build > build.log && echo done', ['build.log']],
  ['echo a > /dev/null; echo b 2>/dev/null', []],
  ['tee a.txt < in.txt', ['a.txt']],
  ["sed -i 's/x/y/' c.ts && echo hi > out.log", ['c.ts', 'out.log']],
  ["sed -i 's/a b/c d/' c.ts", ['c.ts']],
  // quoted code: no redirect
  ["python -c 'import x; assert n >= 0'", []],
  ["python3 -c 'import sys; print(1 if len(sys.argv) > 1 else 0)' > result.txt", ['result.txt']],
  ['node -e "if (a > b) console.log(1)"', []],
  ['node -e "console.log(\\"a > b\\")" > said.txt', ['said.txt']],
  ["awk '{ print $1 > \"col.txt\" }' data.tsv", []],
  ["echo $'tab\\t> not a file'", []],
  ['echo a \\> b', []],
  ['echo "$(date) > when"', []],
  // descriptors, here-strings, here-documents, process substitutions
  ['echo oops >&2', []],
  ['ls missing 2>&1 | tee ls.log', ['ls.log']],
  ['exec 3>&-', []],
  ['grep x <<< "a > b"', []],
  ["cat <<'EOF' > f.txt\nif a > b; then x; fi\nEOF", ['f.txt']],
  ['cat <<EOF >> notes.md\nline > other\nEOF\necho ok > tail.txt', ['notes.md', 'tail.txt']],
  ['cat <<-END > g.txt\n\tx > y\n\tEND', ['g.txt']],
  ['tee >(gzip > out.gz) copy.txt < in.txt', ['out.gz', 'copy.txt']],
  ['make > >(tee build.log)', ['build.log']],
  ['diff <(sort a.txt) <(sort b.txt)', []],
  // arithmetic, tests, comments
  ['(( n > 3 )) && echo big', []],
  ['echo $(( a > b ))', []],
  ['for ((i = 9; i > 0; i--)); do echo $i; done', []],
  ['[[ $a > $b ]] && echo later', []],
  ['[[ $a > $b ]] > cmp.log; echo x > after.txt', ['cmp.log', 'after.txt']],
  // `[[` after a reserved word still opens a test
  ['if [[ $a > $b ]]; then echo hi; fi', []],
  ['while [[ "$x" > "$y" ]]; do x=1; done', []],
  ['! [[ a > b ]] && echo ok', []],
  ['if true; then [[ a < b ]] || echo x > elif.txt; fi', ['elif.txt']],
  ['echo if [[ a > b.txt', ['b.txt']],
  ['echo hi # > not-written.txt', []],
];

describe('shell command → written paths', () => {
  for (const [command, writes] of WRITES) {
    it(JSON.stringify(command), () => {
      expect(bash(command).writes).toEqual(writes);
    });
  }
});

describe('shell command → read paths', () => {
  it('reads the files of cat/head/sed -n, not the words of quoted code or here-documents', () => {
    expect(bash('cat a.txt | head -5 && sed -n 1,20p b.ts').reads).toEqual(['a.txt', 'b.ts']);
    expect(bash("cat 'my notes.md'").reads).toEqual(['my notes.md']);
    expect(bash('cat < input.txt').reads).toEqual(['input.txt']);
    expect(bash("python -c 'import os; cat = 1; head = 2'").reads).toEqual([]);
    expect(bash("bash -c 'x=1' # ; cat secret.txt").reads).toEqual([]);
    expect(bash('cat <<EOF\ncat other.txt\nEOF').reads).toEqual([]);
    expect(bash('FOO=1 cat x.log').reads).toEqual(['x.log']);
  });
});

describe('an argv run without a shell', () => {
  it('is one argument per element, so a > in it is no redirect', () => {
    const a = toolAction({ id: 'c', name: 'shell', arguments: JSON.stringify({ command: ['python3', '-c', 'assert n >= 0'] }) });
    expect(a.command).toBe("python3 -c 'assert n >= 0'");
    expect(a.writes).toEqual([]);
    const plain = toolAction({ id: 'c', name: 'shell', arguments: JSON.stringify({ command: ['cat', 'src/a.ts'] }) });
    expect(plain.command).toBe('cat src/a.ts');
    expect(plain.reads).toEqual(['src/a.ts']);
  });
});

describe('shellCommands', () => {
  it('splits on operators outside quotes only, and keeps quoted words whole', () => {
    expect(shellCommands(`echo 'a; b' && printf "%s|%s" x y | wc -l`).map((c) => c.words)).toEqual([
      ['echo', 'a; b'],
      ['printf', '%s|%s', 'x', 'y'],
      ['wc', '-l'],
    ]);
  });

  it('tells redirect kinds apart', () => {
    const [c] = shellCommands('cmd < in 2>&1 >> log <<< "s" >& both');
    expect(c?.redirects).toEqual([
      { kind: 'read', target: 'in' },
      { kind: 'dup', target: '1' },
      { kind: 'append', target: 'log' },
      { kind: 'herestring', target: 's' },
      { kind: 'write', target: 'both' },
    ]);
  });

  const shellish = fc.string({ unit: fc.constantFrom(...'ab >&<|;()$`\'"\\#\n{}[]=-0129'.split('')), maxLength: 60 });

  it('reads any text without throwing; single-quoted text is one word and never a redirect', () => {
    fc.assert(
      fc.property(shellish, (text) => {
        shellCommands(text);
        const quoted = text.replace(/'/g, '');
        expect(shellCommands(`echo '${quoted}'`)).toEqual([{ words: ['echo', quoted], redirects: [] }]);
        expect(shellCommands(`echo ${shellQuote(text)}`)).toEqual([{ words: ['echo', text], redirects: [] }]);
      }),
      { seed: 20261127, numRuns: 2000 },
    );
  });

  it('reads hostile nesting without overflowing the stack, and skips what is nested too deep', () => {
    const deep = '$('.repeat(20_000) + 'cat a > b';
    expect(() => shellCommands(deep)).not.toThrow();
    expect(() => shellCommands('echo ' + '`echo \\`'.repeat(5_000))).not.toThrow();
    expect(() => shellCommands('echo <(' + '>('.repeat(20_000))).not.toThrow();
    expect(shellCommands(`echo "$(${'a; '.repeat(200_000)}cat x > y)"`).flatMap((c) => c.redirects)).toEqual([{ kind: 'write', target: 'y' }]);
    // within the bound, a nested redirect is still read
    expect(shellCommands('echo $(echo $(echo hi > inner.txt))').flatMap((c) => c.redirects)).toEqual([{ kind: 'write', target: 'inner.txt' }]);
  });

  it('reads any text to the end: an unterminated quote or substitution runs to it', () => {
    expect(shellCommands("echo 'a > b").map((c) => c.words)).toEqual([['echo', 'a > b']]);
    expect(shellCommands('echo "$(cat x > y').flatMap((c) => c.redirects)).toEqual([{ kind: 'write', target: 'y' }]);
    expect(shellCommands('')).toEqual([]);
  });
});
