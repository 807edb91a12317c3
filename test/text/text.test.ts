import { describe, expect, it } from 'vitest';
import { extractConfigValues, extractConstraints, extractErrorLines, extractPaths, extractUrls, fnv1a64, isProjectFrame } from '../../src/text/index.js';
import { toolAction } from '../../src/model/toolargs.js';
import { keyFacts, ensureSurvival } from '../../src/compact/survival.js';
import { repairPairs, renderText } from '../../src/compact/render.js';
import { createTokenCounter } from '../../src/model/tokens.js';

describe('fact extraction', () => {
  it('finds paths but not URLs, versions or dates', () => {
    const t = 'Edited src/server/pool.ts and ./lib/a.py; see https://x.dev/a/b.html, v1.2.3 on 2025/11/17, README.md.';
    expect(extractPaths(t)).toEqual(['src/server/pool.ts', './lib/a.py', 'README.md']);
    expect(extractUrls(t)).toEqual(['https://x.dev/a/b.html']);
  });

  it('finds config values in lines and inline, not prose', () => {
    const t = ['max_connections: 250', 'idle_timeout_ms = 30000', 'Note: see below for details', 'run with RETRIES=3 and --fast'].join('\n');
    expect(extractConfigValues(t).map((v) => v.text)).toEqual(['max_connections: 250', 'idle_timeout_ms = 30000', 'RETRIES=3']);
  });

  it('finds error lines and constraint sentences', () => {
    expect(extractErrorLines('ok\nTypeError: x is not a function\n  at f (a.js:1:1)\nnpm ERR! code 1\nProcess exited with code 2')).toEqual([
      'TypeError: x is not a function',
      'npm ERR! code 1',
      'Process exited with code 2',
    ]);
    expect(extractConstraints('Fix it. You must never touch prod. Be quick. Always run tests first.')).toEqual(['You must never touch prod.', 'Always run tests first.']);
  });

  it('tells project frames from dependency and runtime frames', () => {
    expect(isProjectFrame('    at f (src/a.ts:1:2)')).toBe(true);
    expect(isProjectFrame('    at f (node_modules/x/a.js:1:2)')).toBe(false);
    expect(isProjectFrame('    at process (node:internal/process/task_queues:95:5)')).toBe(false);
    expect(isProjectFrame('  File "/app/svc/handler.py", line 3, in run')).toBe(true);
    expect(isProjectFrame('  File "/usr/lib/python3.11/site-packages/x.py", line 3, in run')).toBe(false);
  });

  it('hashes deterministically', () => {
    expect(fnv1a64('abc')).toBe(fnv1a64('abc'));
    expect(fnv1a64('abc')).not.toBe(fnv1a64('abd'));
    expect(fnv1a64('')).toBe('cbf29ce484222325');
  });

  it('fnv1a64 is 64-bit FNV-1a over UTF-16 code units: the published vectors, and the BigInt definition on mixed text', () => {
    expect(fnv1a64('a')).toBe('af63dc4c8601ec8c');
    expect(fnv1a64('foobar')).toBe('85944171f73967e8');
    const byDefinition = (text: string): string => {
      let h = 0xcbf29ce484222325n;
      for (let i = 0; i < text.length; i++) h = ((h ^ BigInt(text.charCodeAt(i))) * 0x100000001b3n) & 0xffffffffffffffffn;
      return h.toString(16).padStart(16, '0');
    };
    let text = '';
    for (let i = 0; i < 400; i++) {
      text += String.fromCharCode((i * 7919) % 0xffff) + (i % 3 === 0 ? 'édit ✓ 𝄞' : 'h_');
      expect(fnv1a64(text)).toBe(byDefinition(text));
    }
  });
});

describe('toolAction', () => {
  const call = (name: string, args: unknown) => ({ id: 'x', name, arguments: typeof args === 'string' ? args : JSON.stringify(args) });
  it('reads paths from the common tool shapes', () => {
    expect(toolAction(call('Read', { file_path: '/r/a.ts' })).reads).toEqual(['/r/a.ts']);
    expect(toolAction(call('Edit', { file_path: '/r/a.ts', old_string: 'a', new_string: 'b' })).writes).toEqual(['/r/a.ts']);
    expect(toolAction(call('str_replace_editor', { command: 'view', path: '/r/b.py' })).reads).toEqual(['/r/b.py']);
    expect(toolAction(call('str_replace_editor', { command: 'str_replace', path: '/r/b.py' })).writes).toEqual(['/r/b.py']);
    expect(toolAction(call('shell', { command: ['bash', '-lc', 'cat a.txt | head -5 && sed -n 1,20p b.ts'] })).reads).toEqual(['a.txt', 'b.ts']);
    expect(toolAction(call('Bash', { command: "sed -i 's/x/y/' c.ts && echo hi > out.log" })).writes).toEqual(['c.ts', 'out.log']);
    expect(toolAction(call('apply_patch', '*** Begin Patch\n*** Add File: n.ts\n+x\n*** Update File: m.ts\n*** End Patch')).writes).toEqual(['n.ts', 'm.ts']);
  });
  it('keys identical invocations alike', () => {
    expect(toolAction(call('Bash', { command: 'npm test' })).key).toBe(toolAction(call('Bash', { command: 'npm test' })).key);
    expect(toolAction(call('Bash', { command: 'npm test' })).key).not.toBe(toolAction(call('Bash', { command: 'npm run lint' })).key);
  });
});

describe('survival', () => {
  it('re-injects exactly the missing facts', () => {
    const facts = keyFacts(
      [
        { id: '1', role: 'user', text: 'Use port=8080. You must never restart the db.' },
        { id: '2', role: 'assistant', text: '', toolCalls: [{ id: 'c', name: 'Edit', arguments: JSON.stringify({ file_path: 'src/db.ts' }) }] },
        { id: '3', role: 'tool', text: 'Error: connection refused', toolCallId: 'c', isError: true },
      ],
      ['restart', 'database'],
      [],
    );
    expect(facts.paths).toEqual(['src/db.ts']);
    expect(facts.values).toEqual(['port=8080']);
    expect(facts.errors).toEqual(['Error: connection refused']);
    expect(facts.taskWords).toEqual(['restart']);
    const r = ensureSurvival('[contextd recall h_1] edited src/db.ts', facts);
    expect(r.missing.sort()).toEqual(['Error: connection refused', 'You must never restart the db.', 'port=8080', 'restart'].sort());
    for (const m of r.missing) expect(r.content).toContain(m);
    expect(ensureSurvival(r.content, facts).missing).toEqual([]);
  });
});

describe('repairPairs', () => {
  it('drops orphan results and unanswered calls but keeps a pending tail', () => {
    const c = createTokenCounter();
    const call = (id: string) => ({ chat: { role: 'assistant' as const, content: '', tool_calls: [{ id, type: 'function' as const, function: { name: 'Bash', arguments: '{}' } }] }, tokens: 10 });
    const res = (id: string) => ({ chat: { role: 'tool' as const, content: 'r', tool_call_id: id }, tokens: 5 });
    const out = repairPairs([renderText('user', 'hi', c), res('ghost'), call('a'), renderText('user', 'interrupt', c), call('b'), res('b'), call('z')], c);
    expect(out.map((r) => r.chat.tool_call_id ?? r.chat.tool_calls?.[0]?.id ?? r.chat.content)).toEqual(['hi', 'interrupt', 'b', 'b', 'z']);
  });
});
