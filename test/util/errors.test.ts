import { describe, expect, it } from 'vitest';
import { describeError } from '../../src/util/errors.js';

describe('describeError', () => {
  it('gives a message for an Error, an error object from elsewhere, a plain object and a primitive', () => {
    expect(describeError(new Error('disk full'))).toBe('disk full');
    // what a worker's failure can arrive as: an object with a message, not an Error
    expect(describeError({ message: 'database or disk is full', code: 'SQLITE_FULL' })).toBe('database or disk is full');
    expect(describeError({ code: 'SQLITE_FULL', errno: 13 })).toBe('{"code":"SQLITE_FULL","errno":13}');
    const cyclic: Record<string, unknown> = {};
    cyclic['self'] = cyclic;
    expect(describeError(cyclic)).toBe('[object Object]');
    expect(describeError('plain')).toBe('plain');
    expect(describeError(undefined)).toBe('undefined');
  });
});
