import { describe, expect, it } from 'vitest';
import fc from 'fast-check';
import {
  assertionLines,
  countFrames,
  countFramesJoined,
  exitStatusOf,
  extractConfigValues,
  extractPaths,
  isFrameLine,
  jsonResultText,
  patchGists,
  searchTerms,
  stripDanglingRefs,
  verdictFailed,
  verdictLines,
} from '../../src/text/index.js';

describe('text rules', () => {
  it('takes no prose or code fragments for paths', () => {
    const t = 'Served as text/lyrics from the X/Twitter embed, and/or cached; edited src/a.ts, lib/core/util and /etc/hosts.';
    expect(extractPaths(t)).toEqual(['src/a.ts', 'lib/core/util', '/etc/hosts']);
  });

  it('takes comparisons for code, not config values', () => {
    expect(extractConfigValues('if (parts.length === 3) return;\nwhile (i <= n) i++;\nretries=3')).toEqual([{ key: 'retries', text: 'retries=3' }]);
  });

  it('does not read numbered grep output as a stack trace', () => {
    expect(isFrameLine('208:      const modelData = [')).toBe(false);
    expect(isFrameLine('   3: core::panicking::panic_fmt')).toBe(true);
  });

  it('reads a stack frame of each runtime, however indented', () => {
    const frames = [
      '    at Pool.acquire (/app/src/pool.ts:42:7)',
      'at /app/src/index.js:3:1',
      '  File "/app/main.py", line 12, in <module>',
      '\tat com.acme.Pool.acquire(Pool.java:42)',
      '   3: core::panicking::panic_fmt',
      "\u00a0 from /app/lib/pool.rb:42:in `acquire'",
      '#3  0x00005555 in main () at src/main.c:12',
    ];
    for (const f of frames) expect(isFrameLine(f), f).toBe(true);
    for (const l of ['', 'Error: boom', '  something at /app/x.ts:1:1', 'From the top', ' # heading']) expect(isFrameLine(l), l).toBe(false);
  });

  it('counts the frame lines of a text as isFrameLine of each line does', () => {
    const line = fc.oneof(
      fc.string({ maxLength: 20 }),
      fc.constantFrom('    at Pool.acquire (/app/src/pool.ts:42:7)', '  File "/app/main.py", line 12, in <module>', '   3: core::panicking::panic_fmt', '\u3000 from /app/lib/pool.rb:42:in', '#3  0x1 in main () at src/main.c:12', '\tat x (a.js:1:2)\r', 'at', '', ' ', 'at\u00a0f (b.js:3:4)', 'atx (b.js:3:4)', 'from a.rb:1', 'fromage a.rb:1', 'File "x", line 3', 'File x', '#12 f at a.c:9', '#x', ' 7: a::b', '12\tconst x = 1', '  3→import a', '3:x::y', '3: x::y', '10:\u00a0a::b', '#3x at a.c:1', '#3\tf at a.c:1', '# 3 f at a.c:1', '42 passed', '7:'),
    );
    fc.assert(
      fc.property(fc.array(line, { maxLength: 30 }), fc.boolean(), (lines, trailing) => {
        const text = lines.join('\n') + (trailing ? '\n' : '');
        expect(countFrames(text)).toBe(text.split('\n').filter(isFrameLine).length);
      }),
      { numRuns: 500 },
    );
  });

  it('counts the frames of two texts joined by a space as countFrames of the joined text, without joining them', () => {
    const piece = fc.oneof(
      fc.string({ maxLength: 12 }),
      fc.constantFrom('Bash', 'at', 'at ', ' at', 'File', 'File "', 'from', '#', '#1', '7', '\u3000', '\n', '', ' ', '{"command":"ls"}', '    at f (a.js:1:2)', '(/app/a.ts:3:4)', '"x", line 2'),
    );
    const text = fc.array(piece, { maxLength: 6 }).map((p) => p.join(''));
    fc.assert(
      fc.property(text, fc.array(text, { maxLength: 6 }), (head, tailLines) => {
        const tail = tailLines.join('\n');
        expect(countFramesJoined(head, tail)).toBe(countFrames(`${head} ${tail}`));
      }),
      { numRuns: 2000 },
    );
    expect(countFramesJoined('at', 'f (a.js:1:2)\n  at g (b.js:3:4)')).toBe(2);
    expect(countFramesJoined('Bash', '    at f (a.js:1:2)\n  at g (b.js:3:4)')).toBe(1);
  });

  it('reads verdicts, assertions and exit statuses', () => {
    const out = ' ✓ a.test.ts (3 tests)\n Test Files  1 failed | 2 passed (3)\n      Tests  1 failed | 244 passed (245)\nAssertionError: expected \'\' to be \'??\'';
    expect(verdictLines(out)[0]).toBe('Tests 1 failed | 244 passed (245)');
    expect(verdictFailed('Tests 1 failed | 244 passed (245)')).toBe(true);
    expect(verdictFailed('Tests 245 passed (245)')).toBe(false);
    expect(verdictLines('===== 2 failed, 10 passed in 0.51s =====')).toEqual(['===== 2 failed, 10 passed in 0.51s =====']);
    expect(assertionLines(out)).toEqual(["AssertionError: expected '' to be '??'"]);
    expect(exitStatusOf('Exit code 2\nboom')).toBe(2);
    expect(exitStatusOf('all fine')).toBeUndefined();
  });

  it('unwraps JSON tool results into lines', () => {
    const t = jsonResultText(JSON.stringify({ status: 'error', error: 'Traceback\nImportError: x', exit_code: 1 }));
    expect(t.split('\n')).toContain('ImportError: x');
    expect(t).toContain('exit_code: 1');
    expect(jsonResultText('plain')).toBe('plain');
  });

  it('reads the gist of a patch', () => {
    const g = patchGists('*** Begin Patch\n*** Update File: src/a.ts\n@@ function run()\n-  const n = 1;\n+  const n = 2;\n+  const retryBudget = n;\n*** Add File: src/b.ts\n+export const b = 1;\n*** End Patch');
    expect(g).toEqual([
      { path: 'src/a.ts', action: 'update', hunks: ['function run()'], added: 2, removed: 1, identifiers: ['retryBudget'] },
      { path: 'src/b.ts', action: 'add', hunks: [], added: 1, removed: 0, identifiers: [] },
    ]);
  });

  it('drops references to text the reader no longer has', () => {
    expect(stripDanglingRefs('ELIFECYCLE Test failed. See above for more details.')).toBe('ELIFECYCLE Test failed.');
    expect(stripDanglingRefs('The error (see above) repeats')).toBe('The error repeats');
    expect(stripDanglingRefs('Tests failed (see above) ; retrying')).toBe('Tests failed; retrying');
    // a space before a dot or a comma is text, not a gap left by a cut reference
    expect(stripDanglingRefs('find . -name "renderer.py" , then git add .claude/CLAUDE.md .gitignore')).toBe('find . -name "renderer.py" , then git add .claude/CLAUDE.md .gitignore');
    expect(stripDanglingRefs("transform='matrix(.57 0 0 .57 187 256)'")).toBe("transform='matrix(.57 0 0 .57 187 256)'");
  });

  it('keeps template search terms as before (fingerprints depend on them)', () => {
    expect(searchTerms("Don't fix the Parser, fix it NOW 42 via the API")).toEqual(['don', 'fix', 'parser', 'via', 'api']);
  });
});
