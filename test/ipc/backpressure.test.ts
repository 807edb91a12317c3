import * as net from 'node:net';
import * as path from 'node:path';
import { Writable } from 'node:stream';
import { pino } from 'pino';
import { afterEach, describe, expect, it } from 'vitest';
import { Resources, waitEvent, waitUntil } from './helpers.js';
import { SESSION, stubHandlers } from './stubs.js';

const res = new Resources();
afterEach(() => res.closeAll());

/** A pino logger whose NDJSON lines we can parse. */
function captureLogger(): { logger: pino.Logger; lines: () => Array<Record<string, unknown>> } {
  const chunks: string[] = [];
  const stream = new Writable({
    write(chunk: Buffer, _enc, cb) {
      chunks.push(chunk.toString('utf8'));
      cb();
    },
  });
  const logger = pino({ level: 'info' }, stream);
  return {
    logger,
    lines: () =>
      chunks
        .join('')
        .split('\n')
        .filter((l) => l !== '')
        .map((l) => JSON.parse(l) as Record<string, unknown>),
  };
}

/** A peer that connects and never reads what it is sent. */
function deafPeer(socketPath: string): Promise<net.Socket> {
  return new Promise((resolve, reject) => {
    const s = net.connect(socketPath);
    s.pause();
    s.on('error', () => undefined);
    s.once('connect', () => resolve(s));
    s.once('error', reject);
    res.add(() => void s.destroy());
  });
}

const CAP = 256 * 1024;

describe('backpressure', () => {
  it('drops a connection that never reads instead of buffering pushes without bound', async () => {
    const socketPath = path.join(res.tmpDir(), 'bp.sock');
    const log = captureLogger();
    const server = res.server({ socketPath, handlers: stubHandlers().handlers, maxPendingWriteBytes: CAP, logger: log.logger });
    await server.listen();
    const connected = waitEvent<[{ id: string }]>(server, 'connection');
    await deafPeer(socketPath);
    const [{ id }] = await connected;

    const gone = waitEvent(server, 'disconnect');
    const payload = { sessionId: SESSION, blob: 'x'.repeat(32 * 1024) };
    let sent = 0;
    // 64 MiB worth of pushes if nothing stopped it; the cap must stop it long before.
    while (sent < 2048 && server.notify(id, 'compaction.proposed', payload)) {
      sent++;
      expect(server.peakPendingBytes(id) ?? 0).toBeLessThanOrEqual(CAP);
    }
    expect(sent).toBeLessThan(2048);
    await gone;
    expect(server.connections()).toEqual([]);
    expect(server.notify(id, 'compaction.proposed', payload)).toBe(false);
    const drop = log.lines().find((l) => l['msg'] === 'dropping slow consumer: it is not reading its socket');
    expect(drop).toMatchObject({ component: 'ipc', connectionId: id, maxPendingWriteBytes: CAP });
    expect(drop?.['pendingBytes'] as number).toBeLessThanOrEqual(CAP);
  });

  it('drops a peer that floods requests without reading replies, and keeps serving others', async () => {
    const socketPath = path.join(res.tmpDir(), 'bp.sock');
    const server = res.server({ socketPath, handlers: stubHandlers().handlers, maxPendingWriteBytes: CAP });
    await server.listen();
    const deaf = await deafPeer(socketPath);
    const gone = waitEvent(server, 'disconnect');
    const line = JSON.stringify({ jsonrpc: '2.0', id: 1, method: 'session.sections', params: { sessionId: SESSION } }) + '\n';
    const burst = line.repeat(500);
    let writes = 0;
    // Keep sending until the server hangs up; each reply is ~1 KB, so ~4 MB of replies max.
    while (!deaf.destroyed && writes < 8) {
      deaf.write(burst);
      writes++;
      await new Promise<void>((r) => setImmediate(r));
    }
    await gone;
    const peer = await res.raw(socketPath);
    const ok = await peer.request(2, 'session.headroom', { sessionId: SESSION });
    expect(ok['result']).toMatchObject({ total: 128_000 });
  });

  it('pauses reading while too many requests are in flight, then resumes', async () => {
    const socketPath = path.join(res.tmpDir(), 'bp.sock');
    const releases: Array<() => void> = [];
    let started = 0;
    const server = res.server({
      socketPath,
      maxInFlightPerConnection: 4,
      handlers: {
        fast: () => 'ok',
        slow: () =>
          new Promise<number>((resolve) => {
            started++;
            releases.push(() => resolve(started));
          }),
      },
    });
    await server.listen();
    const peer = await res.raw(socketPath);
    for (let i = 1; i <= 10; i++) peer.send({ jsonrpc: '2.0', id: i, method: 'slow' });
    await waitUntil(() => started >= 4, 5000, 'four handlers started');
    // A round trip on another connection lets the server's loop turn over several times;
    // it still must not have started a fifth request of the first peer.
    const other = await res.raw(socketPath);
    expect((await other.request(1, 'fast'))['result']).toBe('ok');
    expect(started).toBe(4);
    while (releases.length > 0) releases.shift()?.();
    await waitUntil(
      () => {
        while (releases.length > 0) releases.shift()?.();
        return started === 10;
      },
      5000,
      'all ten handlers',
    );
    while (releases.length > 0) releases.shift()?.();
    const ids: unknown[] = [];
    for (let i = 0; i < 10; i++) ids.push((await peer.next())['id']);
    expect(ids).toEqual([1, 2, 3, 4, 5, 6, 7, 8, 9, 10]);
  });
});
