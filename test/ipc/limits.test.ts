/**
 * Connection limits (issue 12 case 8) on a real socket: maxClients, the idle timeout (with
 * subscribed connections kept), the partial-line timeout, and a close() that lets replies in
 * flight be written before it hangs up (case 7).
 */
import { afterEach, describe, expect, it } from 'vitest';
import * as path from 'node:path';
import { readdirSync } from 'node:fs';
import { connect, type Socket } from 'node:net';
import { defineHandler } from '../../src/ipc/index.js';
import { z } from 'zod';
import { Resources, waitEvent } from './helpers.js';

const res = new Resources();
afterEach(() => res.closeAll());

function serve(options: { closeGraceMs?: number; maxClients?: number; idleTimeoutMs?: number; partialLineTimeoutMs?: number; keepIdle?: (id: string) => boolean; slowMs?: number }) {
  const socketPath = path.join(res.tmpDir(), 's.sock');
  const { slowMs, ...limits } = options;
  const server = res.server({
    socketPath,
    closeGraceMs: 200,
    ...limits,
    handlers: {
      'test.slow': defineHandler(z.object({}).strict(), async () => {
        await new Promise((r) => setTimeout(r, slowMs ?? 300));
        return { done: true };
      }),
    },
  });
  return { server, socketPath };
}

describe('connection limits', () => {
  it('answers the client past maxClients with -32008 and closes it; the others keep working', async () => {
    const { server, socketPath } = serve({ maxClients: 2 });
    await server.listen();
    const a = await res.raw(socketPath);
    const b = await res.raw(socketPath);
    await expect(a.request(1, 'test.slow', {})).resolves.toMatchObject({ result: { done: true } });
    await expect(b.request(1, 'test.slow', {})).resolves.toMatchObject({ result: { done: true } });
    const c = await res.raw(socketPath);
    const refused = await c.next();
    expect(refused).toMatchObject({ jsonrpc: '2.0', id: null, error: { code: -32008 } });
    expect(String((refused['error'] as { message: string }).message)).toMatch(/maxClients/);
    await waitEvent(c.socket, 'close');
    await expect(a.request(2, 'test.slow', {})).resolves.toMatchObject({ result: { done: true } });
  });

  it('gives a refused connection its descriptor back once the error is written, not when the peer closes', async () => {
    // Peers that never close their side (allowHalfOpen) and a grace period far longer than the
    // test: only closing on the written error keeps the server's descriptors from piling up.
    const { server, socketPath } = serve({ maxClients: 1, closeGraceMs: 60_000 });
    await server.listen();
    const held = await res.raw(socketPath);
    await expect(held.request(1, 'test.slow', {})).resolves.toMatchObject({ result: { done: true } });
    const openFds = (): number => readdirSync('/proc/self/fd').length;
    const before = openFds();
    const refused: Socket[] = [];
    res.add(() => refused.forEach((s) => s.destroy()));
    const answers = Array.from({ length: 30 }, () => {
      const sock = connect({ path: socketPath, allowHalfOpen: true });
      refused.push(sock);
      let got = '';
      sock.on('data', (d: Buffer) => (got += d.toString()));
      return new Promise<string>((r) => sock.once('end', () => r(got)));
    });
    for (const got of await Promise.all(answers)) expect(JSON.parse(got)).toMatchObject({ id: null, error: { code: -32008 } });
    await new Promise((r) => setTimeout(r, 50));
    // 30 client ends stay open in this process; the 30 server ends must be gone (a few spare for
    // whatever else the test process opens meanwhile).
    expect(openFds() - before).toBeLessThan(30 + 8);
  });

  it('closes an idle connection with -32009 unless keepIdle says it waits for pushes', async () => {
    let kept = '';
    const { server, socketPath } = serve({ idleTimeoutMs: 150, keepIdle: (id) => id === kept });
    server.on('connection', (info) => {
      if (!kept) kept = info.id;
    });
    await server.listen();
    const subscribed = await res.raw(socketPath);
    const idle = await res.raw(socketPath);
    const timedOut = await idle.next(3_000);
    expect(timedOut).toMatchObject({ id: null, error: { code: -32009 } });
    await waitEvent(idle.socket, 'close');
    // The kept one outlived several idle periods and still answers.
    await expect(subscribed.request(1, 'test.slow', {})).resolves.toMatchObject({ result: { done: true } });
  });

  it('closes a connection that leaves a line unfinished with -32009', async () => {
    const { server, socketPath } = serve({ partialLineTimeoutMs: 150, idleTimeoutMs: 0 });
    await server.listen();
    const peer = await res.raw(socketPath);
    peer.write('{"jsonrpc":"2.0","id":1,"method":"test.sl');
    expect(await peer.next(3_000)).toMatchObject({ id: null, error: { code: -32009, message: expect.stringMatching(/unfinished/) } });
    await waitEvent(peer.socket, 'close');
  });

  it('close() stops reading but writes the replies in flight before hanging up', async () => {
    const { server, socketPath } = serve({ slowMs: 400 });
    await server.listen();
    const peer = await res.raw(socketPath);
    peer.send({ jsonrpc: '2.0', id: 7, method: 'test.slow', params: {} });
    await new Promise((r) => setTimeout(r, 50)); // the request is being handled
    const closing = server.close();
    expect(await peer.next(3_000)).toMatchObject({ id: 7, result: { done: true } });
    await closing;
  });
});
