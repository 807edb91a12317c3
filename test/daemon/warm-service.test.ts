/**
 * Harvest reads a tailed session back from its transcript up to the tailer's offset. A file
 * replaced under the same name after the tailer's last read (before the tailer sees it and
 * resets the session) is another session's: it must not be harvested as this one.
 * Real files, a real SQLite store, a real Tailer.
 */
import { mkdirSync, readFileSync, renameSync, statSync, writeFileSync } from 'node:fs';
import { join } from 'node:path';
import { afterEach, describe, expect, it } from 'vitest';
import { WarmService } from '../../src/daemon/warm-service.js';
import { LiveSession } from '../../src/daemon/live-session.js';
import { Tailer } from '../../src/ingest/index.js';
import { SessionModel, createTokenCounter } from '../../src/model/index.js';
import { isContextdError } from '../../src/util/errors.js';
import { silentLogger } from '../../src/util/logger.js';
import { cleanup, codingSession, tempDir, tempStore } from '../harvest/fixtures.js';
import { Recorder } from '../ingest/tailer-helpers.js';

const tailers: Tailer[] = [];
afterEach(async () => {
  await Promise.all(tailers.splice(0).map((t) => t.close()));
  cleanup();
});

/**
 * A coding session's transcript read once by a real Tailer, which is then stopped: what it
 * read (offset and identity), and the window before it could see a later change to the file.
 */
async function tailedOnce(): Promise<{ dir: string; watch: string; file: string; read: number; tailed: ReturnType<Tailer['readIdentityOf']> }> {
  const dir = tempDir();
  const watch = join(dir, 'watch');
  const file = join(watch, 'work.jsonl');
  mkdirSync(watch);
  codingSession().writeTo(file);
  const tailer = new Tailer({ paths: [watch], recheckMs: 40 });
  tailers.push(tailer);
  const rec = new Recorder(tailer);
  await tailer.start();
  await rec.until(() => rec.of('events', file).length > 0, 'the first batch');
  const read = rec.of('events', file).at(-1)?.toOffset ?? 0;
  const tailed = tailer.readIdentityOf(file);
  await tailer.close();
  return { dir, watch, file, read, tailed };
}

describe('WarmService harvest readback', () => {
  it('refuses a transcript replaced since the tailer read it, and harvests it when it is the same file', async () => {
    const { dir, watch, file, read, tailed } = await tailedOnce();
    const tailedIno = tailed?.ino;
    expect(tailedIno).toBe(statSync(file).ino);

    const { db, store } = tempStore(dir);
    const warm = new WarmService(db, { logger: silentLogger(), tokenCounter: createTokenCounter(), tailedFile: (f) => (f === file ? tailed : undefined) });
    const session = (): LiveSession => {
      const s = new LiveSession('work', file, 'openai-chat', new SessionModel({ sessionId: 'work' }), Date.now());
      s.tailOffset = read;
      return s;
    };

    // Another session's transcript takes the name (written beside, renamed over: a new inode).
    const other = join(watch, 'other.tmp');
    codingSession({ task: 'rename the exported helpers in src/lexer.ts and update every import', file: 'src/lexer.ts' }).writeTo(other);
    renameSync(other, file);
    expect(statSync(file).ino).not.toBe(tailedIno);
    await expect(warm.harvest(session(), 'success')).rejects.toSatisfy((e: unknown) => isContextdError(e, 'FILE_REPLACED'));
    expect(store.harvestedSession('work')).toBeUndefined();
    expect(store.count()).toBe(0);

    // A file whose inode is the one read is harvested.
    const same = new WarmService(db, { logger: silentLogger(), tokenCounter: createTokenCounter(), tailedFile: () => ({ ino: statSync(file).ino }) });
    expect((await same.harvest(session(), 'success')).harvested).toBe(1);
    expect(store.list()[0]?.task).toMatch(/lexer/);
  });

  it('refuses a transcript truncated and rewritten in place (the same inode) since the tailer read it: FILE_REPLACED, not harvested as this session', async () => {
    const { dir, file, read, tailed } = await tailedOnce();

    const { db, store } = tempStore(dir);
    const warm = new WarmService(db, { logger: silentLogger(), tokenCounter: createTokenCounter(), tailedFile: (f) => (f === file ? tailed : undefined) });
    const session = new LiveSession('work', file, 'openai-chat', new SessionModel({ sessionId: 'work' }), Date.now());
    session.tailOffset = read;

    // Another session's transcript written over it in place (O_TRUNC): the same inode, longer than what was read.
    const ino = statSync(file).ino;
    const other = join(dir, 'other.jsonl');
    codingSession({ task: 'rename the exported helpers in src/lexer.ts and update every import', file: 'src/lexer.ts' }).writeTo(other);
    writeFileSync(file, Buffer.concat([readFileSync(other), readFileSync(other)]));
    expect(statSync(file).ino).toBe(ino);
    expect(statSync(file).size).toBeGreaterThanOrEqual(read);
    await expect(warm.harvest(session, 'success')).rejects.toSatisfy((e: unknown) => isContextdError(e, 'FILE_REPLACED'));
    expect(store.harvestedSession('work')).toBeUndefined();
    expect(store.count()).toBe(0);
  });
});
