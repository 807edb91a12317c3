import * as fs from 'node:fs';
import * as net from 'node:net';
import * as path from 'node:path';
import { afterEach, describe, expect, it } from 'vitest';
import { RpcServer } from '../../src/ipc/server.js';
import { isContextdError } from '../../src/util/errors.js';
import { RawPeer, Resources, waitEvent, waitUntil } from './helpers.js';
import { stubHandlers } from './stubs.js';

const res = new Resources();
afterEach(() => res.closeAll());

function sockPath(): string {
  return path.join(res.tmpDir(), 'contextd.sock');
}

describe('RpcServer socket file', () => {
  it('creates the socket with mode 0600 and removes it on close', async () => {
    const p = sockPath();
    const server = res.server({ socketPath: p, handlers: stubHandlers().handlers });
    expect(server.state).toBe('new');
    await server.listen();
    expect(server.state).toBe('listening');
    const st = fs.statSync(p);
    expect(st.isSocket()).toBe(true);
    expect(st.mode & 0o777).toBe(0o600);
    await server.close();
    expect(server.state).toBe('closed');
    expect(fs.existsSync(p)).toBe(false);
  });

  it('uses 0660 and chowns when a group is given', async () => {
    const p = sockPath();
    const gid = process.getgid?.() ?? 0;
    const server = res.server({ socketPath: p, group: gid, handlers: {} });
    await server.listen();
    const st = fs.statSync(p);
    expect(st.mode & 0o777).toBe(0o660);
    expect(st.gid).toBe(gid);
  });

  it('never leaves the umask changed', async () => {
    const before = process.umask();
    const server = res.server({ socketPath: sockPath(), handlers: {} });
    await server.listen();
    expect(process.umask()).toBe(before);
  });

  it('replaces a stale socket file left by a dead process', async () => {
    const p = sockPath();
    // A socket file nobody listens on: bind, then drop the handle without unlinking.
    const stale = net.createServer();
    await new Promise<void>((r) => stale.listen(p, () => r()));
    const keep = path.join(path.dirname(p), 'kept.sock');
    fs.linkSync(p, keep); // libuv unlinks `p` on close; a hard link keeps the inode around
    await new Promise<void>((r) => stale.close(() => r()));
    fs.renameSync(keep, p);
    expect(fs.lstatSync(p).isSocket()).toBe(true);

    const server = res.server({ socketPath: p, handlers: stubHandlers().handlers });
    await server.listen();
    const peer = await res.raw(p);
    const reply = await peer.request(1, 'daemon.status', {});
    expect(reply['result']).toMatchObject({ server: { version: '0.0.0-test' } });
  });

  it('refuses a live socket with SOCKET_IN_USE naming the path', async () => {
    const p = sockPath();
    const first = res.server({ socketPath: p, handlers: {} });
    await first.listen();
    const second = res.server({ socketPath: p, handlers: {} });
    const err: unknown = await second.listen().then(
      () => undefined,
      (e: unknown) => e,
    );
    expect(isContextdError(err, 'SOCKET_IN_USE')).toBe(true);
    expect((err as Error).message).toContain(p);
    // The first server still serves.
    const peer = await res.raw(p);
    expect((await peer.request(1, 'initialize', { client: { name: 't', version: '1' } }))['result']).toMatchObject({ protocolVersion: 1 });
  });

  it('refuses a regular file at the socket path without deleting it', async () => {
    const p = sockPath();
    fs.writeFileSync(p, 'precious');
    const server = res.server({ socketPath: p, handlers: {} });
    await expect(server.listen()).rejects.toMatchObject({ code: 'SOCKET_IN_USE' });
    expect(fs.readFileSync(p, 'utf8')).toBe('precious');
  });

  it('rejects a socket path over 107 bytes', () => {
    const dir = res.tmpDir();
    const p = path.join(dir, 'x'.repeat(120 - dir.length) + '.sock');
    let err: unknown;
    try {
      new RpcServer({ socketPath: p, handlers: {} });
    } catch (e) {
      err = e;
    }
    expect(isContextdError(err, 'SOCKET_PATH_TOO_LONG')).toBe(true);
    expect((err as Error).message).toContain('107');
  });

  it('accepts a path of exactly 107 bytes', async () => {
    const dir = res.tmpDir();
    const p = path.join(dir, 'y'.repeat(107 - dir.length - 1));
    expect(Buffer.byteLength(p)).toBe(107);
    const server = res.server({ socketPath: p, handlers: {} });
    await server.listen();
    expect(fs.lstatSync(p).isSocket()).toBe(true);
  });

  it('rejects misspelled options and needs a socketPath or fd', () => {
    expect(() => new RpcServer({ socketPath: '/tmp/x.sock', handlers: {}, maxLineByte: 5 } as never)).toThrow(/maxLineByte/);
    expect(() => new RpcServer({ handlers: {} })).toThrow(/socketPath or fd/);
    expect(() => new RpcServer({ socketPath: '/tmp/x.sock', handlers: {}, maxLineBytes: 0 })).toThrow(/maxLineBytes/);
  });

  it('close() is idempotent, returns the same promise, and hangs up on peers', async () => {
    const p = sockPath();
    const server = res.server({ socketPath: p, handlers: {} });
    await server.listen();
    const connected = waitEvent(server, 'connection');
    const peer = await res.raw(p);
    await connected;
    const a = server.close();
    const b = server.close();
    expect(a).toBe(b);
    await a;
    expect(server.state).toBe('closed');
    expect(fs.existsSync(p)).toBe(false);
    await expect(peer.next(2000)).rejects.toThrow(/closed/);
    await expect(server.listen()).rejects.toMatchObject({ code: 'LIFECYCLE' });
  });

  it('close() before listen() resolves and ends in closed', async () => {
    const server = res.server({ socketPath: sockPath(), handlers: {} });
    await server.close();
    expect(server.state).toBe('closed');
  });

  it('emits connection and disconnect with ConnInfo', async () => {
    const p = sockPath();
    const server = res.server({ socketPath: p, handlers: {} });
    await server.listen();
    const connected = waitEvent<[{ id: string }]>(server, 'connection');
    const peer = await res.raw(p);
    const [info] = await connected;
    expect(info.id).toMatch(/^c\d+$/);
    expect(server.connections().map((c) => c.id)).toEqual([info.id]);
    await peer.request(1, 'initialize', { client: { name: 'agent-x', version: '2.0' }, capabilities: { applyEdits: true } });
    expect(server.connections()[0]).toMatchObject({ initialized: true, client: { name: 'agent-x', version: '2.0' }, capabilities: { applyEdits: true } });
    const gone = waitEvent<[{ id: string }]>(server, 'disconnect');
    peer.destroy();
    const [left] = await gone;
    expect(left.id).toBe(info.id);
    expect(server.connections()).toEqual([]);
  });
});

describe('RpcServer.notifyAll', () => {
  it('pushes one notification to each named live connection and counts those it reached', async () => {
    const p = sockPath();
    const server = res.server({ socketPath: p, handlers: stubHandlers().handlers });
    await server.listen();
    const ids: string[] = [];
    server.on('connection', (c: { id: string }) => ids.push(c.id));
    const a = await RawPeer.connect(p);
    const b = await RawPeer.connect(p);
    res.add(() => void a.socket.destroy());
    res.add(() => void b.socket.destroy());
    await waitUntil(() => ids.length === 2);
    const params = { sessionId: 's', edits: [{ editId: 'e1' }] };
    // An id that is gone is skipped, not counted.
    expect(server.notifyAll([...ids, 'gone'], 'compaction.proposed', params)).toBe(2);
    for (const peer of [a, b]) expect(await peer.next()).toEqual({ jsonrpc: '2.0', method: 'compaction.proposed', params });
    // Params that cannot be encoded reach nobody (and are logged), nothing is thrown.
    const cyclic: Record<string, unknown> = {};
    cyclic['self'] = cyclic;
    expect(server.notifyAll(ids, 'compaction.proposed', cyclic)).toBe(0);
    expect(server.notifyAll([], 'compaction.proposed', params)).toBe(0);
  });
});
