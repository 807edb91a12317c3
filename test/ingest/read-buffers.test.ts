import { describe, expect, it } from 'vitest';
import { ReadBufferPool, ReadBuffers } from '../../src/ingest/read-buffers.js';

describe('ReadBufferPool', () => {
  it('reuses given-back buffers, makes a read wait while all max are borrowed, and keeps only `keep` free', async () => {
    const pool = new ReadBufferPool({ bytes: 16, max: 2, keep: 1 });
    const a = pool.take() as Buffer;
    const b = pool.take() as Buffer;
    const third = pool.take();
    expect(third).toBeInstanceOf(Promise);
    pool.give(a);
    expect(await third).toBe(a); // handed over, not allocated
    pool.give(a);
    pool.give(b); // one free is kept, the other dropped
    expect(pool.take()).toBe(a);
    const fresh = pool.take();
    expect(fresh).not.toBe(b);
    expect(pool.allocated).toBe(3);
  });

  it('serves short reads from the small pool and long ones from the large', () => {
    const buffers = new ReadBuffers(64, 1024);
    expect(buffers.take(10).pool).toBe(buffers.small);
    expect(buffers.take(64).pool).toBe(buffers.small);
    expect(buffers.take(65).pool).toBe(buffers.large);
  });
});
