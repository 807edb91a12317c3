import { describe, expect, it } from 'vitest';
import { spawnSync } from 'node:child_process';
import { fileURLToPath } from 'node:url';

const HERE = fileURLToPath(new URL('./hermes/', import.meta.url));

/**
 * The hermes plugin's Python tests (unittest, stdlib only), run against the built CLI. hermes-agent
 * itself cannot be installed here, so they use a test double of its ContextEngine base class and
 * of its plugin loader (test/integrations/hermes/agent, hermes_loader.py).
 */
describe('hermes context-engine plugin (python3 -m unittest)', () => {
  it('passes its unittest suite against the real daemon', () => {
    const r = spawnSync('python3', ['-m', 'unittest', 'discover', '-s', HERE, '-p', 'test_*.py', '-v'], {
      cwd: HERE,
      encoding: 'utf8',
      timeout: 240_000,
      env: { ...process.env, PYTHONDONTWRITEBYTECODE: '1' },
    });
    if (r.error) throw r.error;
    const out = `${r.stdout}\n${r.stderr}`;
    expect(r.status, out.slice(-6000)).toBe(0);
    expect(out).toMatch(/\nOK( \(skipped=0\))?\s*$/);
    expect(out).not.toMatch(/skipped '/);
  }, 300_000);
});
