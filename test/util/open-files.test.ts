import { describe, expect, it } from 'vitest';
import { defaultMaxOpenFiles, maxOpenFilesFor, parseOpenFilesLimit } from '../../src/util/open-files.js';
import { resolveTailerOptions } from '../../src/ingest/tailer-options.js';

const limits = (soft: string, hard = '65536'): string =>
  [
    'Limit                     Soft Limit           Hard Limit           Units     ',
    'Max cpu time              unlimited            unlimited            seconds   ',
    `Max open files            ${soft.padEnd(20)} ${hard.padEnd(20)} files     `,
    'Max locked memory         8388608              8388608              bytes     ',
  ].join('\n');

describe('the default bound on open transcript descriptors', () => {
  it('reads the soft open-file limit', () => {
    expect(parseOpenFilesLimit(limits('256'))).toBe(256);
    expect(parseOpenFilesLimit(limits('unlimited', 'unlimited'))).toBe(Number.POSITIVE_INFINITY);
    expect(parseOpenFilesLimit('no such line')).toBeUndefined();
  });

  it('is a quarter of the limit, between 64 and 1024, and 64 where the limit is unknown', () => {
    expect([256, 1024, 20_000, 65_536, Number.POSITIVE_INFINITY, 100].map((n) => maxOpenFilesFor(n))).toEqual([64, 256, 1024, 1024, 1024, 64]);
    expect(maxOpenFilesFor(undefined)).toBe(64);
  });

  it('is what the tailer takes when none is given, and a given one wins', () => {
    expect(resolveTailerOptions({ paths: ['/tmp'] }).maxOpenFiles).toBe(defaultMaxOpenFiles());
    expect(resolveTailerOptions({ paths: ['/tmp'], maxOpenFiles: 8 }).maxOpenFiles).toBe(8);
  });
});
