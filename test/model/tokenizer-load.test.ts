/**
 * The tokenizer loads on the first count; a load that fails under descriptor pressure (EMFILE,
 * as in the first scan of many transcripts: test/e2e/fd-burst.test.ts) is tried again at the
 * next count. (It was not, found by an audit: Node had remembered tiktoken's package.json as
 * missing, so every later count threw MODULE_NOT_FOUND until a restart.) A real child process
 * under a real descriptor limit (prlimit) runs the built module (dist/, built by the global setup).
 */
import { describe, expect, it } from 'vitest';
import { execFileSync } from 'node:child_process';
import { existsSync } from 'node:fs';
import { fileURLToPath } from 'node:url';
import { createTokenCounter } from '../../src/model/tokens.js';

const TOKENS_JS = fileURLToPath(new URL('../../dist/src/model/tokens.js', import.meta.url));

/** Fill the descriptor table, count (fails), free it, count with the same counter and a new one. */
const SCRIPT = `
import { openSync, closeSync } from 'node:fs';
const { createTokenCounter } = await import(process.argv[1]);
const counter = createTokenCounter('o200k_base');
const held = [];
let starved = false;
try { for (;;) held.push(openSync('/dev/null', 'r')); } catch (e) { starved = e.code === 'EMFILE'; }
const attempt = (c) => { try { return { count: c.count('hello tokenizer world') }; } catch (e) { return { code: e.code ?? null }; } };
const first = attempt(counter);
for (const fd of held.splice(0)) closeSync(fd);
const again = attempt(counter);
const fresh = attempt(createTokenCounter('o200k_base'));
process.stdout.write(JSON.stringify({ starved, first, again, fresh }));
`;

describe('tokenizer load under descriptor pressure', () => {
  it('a load that failed with EMFILE succeeds at the next count, once descriptors are free', () => {
    expect(existsSync(TOKENS_JS), `${TOKENS_JS} missing: the global setup builds it`).toBe(true);
    const out = execFileSync('prlimit', ['--nofile=64:64', '--', process.execPath, '--input-type=module', '-e', SCRIPT, TOKENS_JS], { encoding: 'utf8' });
    const r = JSON.parse(out) as { starved: boolean; first: { count?: number; code?: string | null }; again: { count?: number; code?: string | null }; fresh: { count?: number; code?: string | null } };
    const expected = createTokenCounter('o200k_base').count('hello tokenizer world');
    expect(r.starved).toBe(true);
    expect(r.again).toEqual({ count: expected });
    expect(r.fresh).toEqual({ count: expected });
    // The load really failed while starved (the count above is a retry, not a first load).
    expect(r.first).toEqual({ code: 'EMFILE' });
  });
});
