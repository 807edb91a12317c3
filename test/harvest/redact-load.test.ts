// secretlint's packages load on first use; a failed load is tried again on the next call.
// The failure is a module mock (vi.doMock): an EMFILE during import() cannot be caused on demand.
import { afterEach, describe, expect, it, vi } from 'vitest';

const KEY = 'AKIA' + 'Q3EGRKZ7XW5N2TPL';

describe('redactAll when secretlint fails to load', () => {
  afterEach(() => {
    vi.doUnmock('@secretlint/profiler');
    vi.resetModules();
  });

  it('rejects that call, and the next call loads it again', async () => {
    vi.resetModules();
    vi.doMock('@secretlint/profiler', () => {
      throw new Error('EMFILE: too many open files');
    });
    const { redactAll } = await import('../../src/harvest/redact.js');
    await expect(redactAll([`key ${KEY}`])).rejects.toThrow();
    vi.doUnmock('@secretlint/profiler');
    const out = await redactAll([`key ${KEY}`]);
    expect(out.texts[0]).not.toContain(KEY);
    expect(out.findings.length).toBeGreaterThan(0);
  });
});
