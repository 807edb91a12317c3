import * as path from 'node:path';
import { afterEach, describe, expect, it } from 'vitest';
import { ContextdClient } from '../../src/ipc/client.js';
import { RpcError, unknownSession } from '../../src/ipc/errors.js';
import { defineHandlers } from '../../src/ipc/handlers.js';
import { RESULT_SCHEMAS, type WirePlan } from '../../src/ipc/results.js';
import { RpcServer } from '../../src/ipc/server.js';
import { isContextdError } from '../../src/util/errors.js';
import { Resources, waitEvent, waitUntil } from './helpers.js';
import { HEADROOM, SECTIONS, SESSION, TRANSCRIPT, makePlan, stubHandlers } from './stubs.js';

const res = new Resources();
afterEach(() => res.closeAll());

const clientInfo = { name: 'test-agent', version: '1.2.3' };

async function setup(): Promise<{ server: RpcServer; client: ContextdClient; socketPath: string; state: ReturnType<typeof stubHandlers>['state'] }> {
  const socketPath = path.join(res.tmpDir(), 'contextd.sock');
  const { handlers, state } = stubHandlers();
  const server = res.server({ socketPath, handlers, serverInfo: { name: 'contextd', version: '9.9.9' } });
  await server.listen();
  const client = res.client({ socketPath, clientInfo, capabilities: { applyEdits: true }, backoff: { initialMs: 10, maxMs: 50 } });
  await client.connect();
  return { server, client, socketPath, state };
}

describe('ContextdClient ↔ RpcServer', () => {
  it('round-trips every method', async () => {
    const { client, server, state } = await setup();
    expect(client.state).toBe('connected');
    expect(client.server).toEqual({ server: { name: 'contextd', version: '9.9.9' }, protocolVersion: 1 });
    expect(server.connections()[0]).toMatchObject({ client: clientInfo, capabilities: { applyEdits: true } });

    const sub = await client.subscribe({ transcriptPath: TRANSCRIPT });
    expect(sub).toEqual({ sessionId: SESSION, headroom: HEADROOM });
    expect(await client.headroom(SESSION)).toEqual(HEADROOM);
    expect(await client.sections(SESSION)).toEqual(SECTIONS);
    const dry = await client.compact(SESSION, { dryRun: true, targetHeadroom: 0.3 });
    expect(dry).toEqual(makePlan('p1', true));
    const plan = await client.compact(SESSION);
    expect(plan.planId).toBe('p2');
    expect(await client.ack({ planId: plan.planId, applied: true, editIds: ['e1'] })).toEqual({ ok: true });
    const recalled = await client.recall(SESSION, 'h-1');
    expect(recalled.messages.map((m) => m.id)).toEqual(['m1', 'm2']);
    const boot = await client.bootstrap({ task: 'fix the flaky test' });
    expect(boot.messages[0]?.content).toBe('tips for fix the flaky test within 2000'); // default budget applied
    const status = await client.status();
    expect(status.sessions[0]?.sessionId).toBe(SESSION);
    expect(await client.endSession(SESSION, 'success')).toEqual({ harvested: 3 });
    expect(client.subscribedSessions()).toEqual([]);
    expect(await client.request('session.headroom', { sessionId: SESSION })).toEqual(HEADROOM);

    // Params reached the handlers exactly as sent (defaults applied server side).
    expect(state.calls.map((c) => c.method)).toEqual([
      'session.subscribe', 'session.headroom', 'session.sections', 'session.compact', 'session.compact',
      'compaction.ack', 'section.recall', 'warm.bootstrap', 'daemon.status', 'session.end', 'session.headroom',
    ]);
    expect(state.calls[3]?.params).toEqual({ sessionId: SESSION, dryRun: true, targetHeadroom: 0.3 });
    expect(state.calls[7]?.params).toEqual({ task: 'fix the flaky test', budgetTokens: 2000 });
    // Results match the documented (loose) result schemas.
    expect(RESULT_SCHEMAS['session.compact'].safeParse(plan).success).toBe(true);
    expect(RESULT_SCHEMAS['daemon.status'].safeParse(status).success).toBe(true);
  });

  it('rejects refusals as RpcError with the wire code', async () => {
    const { client } = await setup();
    const err = await client.headroom('nope').catch((e: unknown) => e);
    expect(err).toBeInstanceOf(RpcError);
    expect((err as RpcError).code).toBe(-32001);
    expect((err as RpcError).message).toContain('"nope"');
    const expired = await client.ack({ planId: 'p404', applied: false, reason: 'user declined' }).catch((e: unknown) => e);
    expect((expired as RpcError).code).toBe(-32002);
  });

  it('delivers notifications only to the target connection', async () => {
    const { client, server, socketPath, state } = await setup();
    const other = res.client({ socketPath, clientInfo: { name: 'other', version: '1' } });
    await other.connect();
    await client.subscribe({ sessionId: SESSION });
    const target = [...state.subscribers.keys()];
    expect(target).toHaveLength(1);
    const otherGot: string[] = [];
    other.on('notification', (m) => otherGot.push(m));

    const proposed = waitEvent<[WirePlan]>(client, 'compaction.proposed');
    const headroom = waitEvent<[unknown]>(client, 'session.headroom');
    expect(server.notify(target[0] as string, 'compaction.proposed', makePlan('p9'))).toBe(true);
    expect(server.notify(target[0] as string, 'session.headroom', { sessionId: SESSION, ...HEADROOM, zone: 'reserve' })).toBe(true);
    const [plan] = await proposed;
    expect(plan.planId).toBe('p9');
    const [hr] = await headroom;
    expect(hr).toMatchObject({ sessionId: SESSION, zone: 'reserve' });
    // A round trip on `other` after the pushes proves nothing was queued for it.
    await other.status();
    expect(otherGot).toEqual([]);
    expect(server.notify('c-unknown', 'compaction.proposed', {})).toBe(false);
  });

  it('rejects pending requests when the connection drops, and refuses new ones while down', async () => {
    const socketPath = path.join(res.tmpDir(), 'contextd.sock');
    let started!: () => void;
    const inHandler = new Promise<void>((r) => (started = r));
    const server = res.server({
      socketPath,
      closeGraceMs: 20,
      drainTimeoutMs: 50, // close() waits this long for the reply that never comes, then drops it
      handlers: { hang: () => (started(), new Promise(() => undefined)) },
    });
    await server.listen();
    const client = res.client({ socketPath, clientInfo, reconnect: false });
    await client.connect();
    const pending = client.request('hang', {}).catch((e: unknown) => e);
    await inHandler;
    const dropped = waitEvent(client, 'disconnect');
    await server.close();
    const err = await pending;
    expect(isContextdError(err, 'DAEMON_UNREACHABLE')).toBe(true);
    expect((err as Error).message).toMatch(/closed before the reply to hang/);
    await dropped;
    expect(client.state).toBe('closed');
    await expect(client.status()).rejects.toMatchObject({ code: 'DAEMON_UNREACHABLE' });
  });

  it('times out a request the daemon never answers', async () => {
    const socketPath = path.join(res.tmpDir(), 'contextd.sock');
    const server = res.server({
      drainTimeoutMs: 50, // the handler never answers: close() must not wait for it
      socketPath,
      handlers: { hang: () => new Promise(() => undefined) },
    });
    await server.listen();
    const client = res.client({ socketPath, clientInfo, requestTimeoutMs: 50 });
    await client.connect();
    const err = await client.request('hang', {}).catch((e: unknown) => e);
    expect(isContextdError(err, 'DAEMON_UNREACHABLE')).toBe(true);
    expect((err as Error).message).toMatch(/did not answer hang within 50 ms/);
  });

  it('fails connect() with an actionable DAEMON_UNREACHABLE when nothing listens', async () => {
    const socketPath = path.join(res.tmpDir(), 'absent.sock');
    const client = res.client({ socketPath, clientInfo });
    const err = await client.connect().catch((e: unknown) => e);
    expect(isContextdError(err, 'DAEMON_UNREACHABLE')).toBe(true);
    expect((err as Error).message).toContain(socketPath);
    expect((err as Error).message).toMatch(/contextd daemon/);
    expect(client.state).toBe('new');
  });

  it('reconnects after a server restart, re-initializes and re-subscribes', async () => {
    const { client, server, socketPath } = await setup();
    await client.subscribe({ transcriptPath: TRANSCRIPT });
    const down = waitEvent(client, 'disconnect');
    await server.close();
    await down;
    expect(client.state).toBe('reconnecting');

    const next = stubHandlers();
    const server2 = res.server({ socketPath, handlers: next.handlers });
    const back = waitEvent(client, 'connect');
    await server2.listen();
    await back;
    expect(client.state).toBe('connected');
    expect(server2.connections()[0]).toMatchObject({ initialized: true, client: clientInfo });
    expect(next.state.calls.map((c) => [c.method, c.params])).toEqual([['session.subscribe', { transcriptPath: TRANSCRIPT }]]);
    // Pushes from the new server reach the client.
    const proposed = waitEvent<[WirePlan]>(client, 'compaction.proposed');
    server2.notify(server2.connections()[0]?.id as string, 'compaction.proposed', makePlan('p-after'));
    expect((await proposed)[0].planId).toBe('p-after');
    expect(await client.headroom(SESSION)).toEqual(HEADROOM);
  });

  it('reports a subscription the restarted daemon no longer knows, and drops it', async () => {
    const { client, server, socketPath } = await setup();
    await client.subscribe({ sessionId: SESSION });
    const down = waitEvent(client, 'disconnect');
    await server.close();
    await down;
    const errors: Error[] = [];
    client.on('error', (e) => errors.push(e));
    const server2 = res.server({ socketPath, handlers: {} }); // knows no method at all
    const back = waitEvent(client, 'connect');
    await server2.listen();
    await back;
    expect(errors.map((e) => e.message).join('\n')).toMatch(/was not restored/);
    expect(client.subscribedSessions()).toEqual([]);
  });

  it('close() is idempotent, stops reconnecting and rejects later calls', async () => {
    const { client, server } = await setup();
    const down = waitEvent(client, 'disconnect');
    await server.close();
    await down;
    const a = client.close();
    expect(client.close()).toBe(a);
    await a;
    expect(client.state).toBe('closed');
    await expect(client.status()).rejects.toMatchObject({ code: 'DAEMON_UNREACHABLE' });
    await expect(client.connect()).rejects.toMatchObject({ code: 'LIFECYCLE' });
  });

  it('keeps retrying with exponential backoff until the daemon comes back', async () => {
    const { client, server, socketPath } = await setup(); // backoff 10 → 50 ms
    const delays: number[] = [];
    client.on('reconnecting', (_attempt, delayMs) => delays.push(delayMs));
    const down = waitEvent(client, 'disconnect');
    await server.close();
    await down;
    await waitUntil(() => delays.length >= 5, 5000, 'five reconnect attempts');
    expect(client.state).toBe('reconnecting');
    // 10, 20, 40 (±20% jitter), then capped at 50 (±20%).
    expect(delays[0]).toBeGreaterThanOrEqual(8);
    expect(delays[0]).toBeLessThanOrEqual(12);
    expect(delays[1]).toBeGreaterThan(delays[0] as number);
    expect(delays[2]).toBeGreaterThan(delays[1] as number);
    for (const d of delays) expect(d).toBeLessThanOrEqual(60);
    const server2 = res.server({ socketPath, handlers: stubHandlers().handlers });
    const back = waitEvent(client, 'connect');
    await server2.listen();
    await back;
    expect(await client.status()).toMatchObject({ server: { version: '0.0.0-test' } });
  });

  it('keeps re-subscribing while the restarted daemon has not found the session yet', async () => {
    const { client, server, socketPath } = await setup();
    await client.subscribe({}); // "the most recent session": restored as that session, by id
    const down = waitEvent(client, 'disconnect');
    await server.close();
    await down;
    const calls: unknown[] = [];
    let refusals = 2;
    const server2 = res.server({
      socketPath,
      handlers: defineHandlers({
        'session.subscribe': (p, ctx) => {
          calls.push(p);
          if (refusals-- > 0) throw unknownSession(p.sessionId ?? '?');
          subscribed = ctx.connectionId;
          return { sessionId: SESSION, headroom: HEADROOM };
        },
      }),
    });
    let subscribed: string | undefined;
    const back = waitEvent(client, 'connect');
    await server2.listen();
    await back;
    await waitUntil(() => subscribed !== undefined, 5000, 'the third subscribe');
    expect(calls).toEqual([{ sessionId: SESSION }, { sessionId: SESSION }, { sessionId: SESSION }]);
    const proposed = waitEvent<[WirePlan]>(client, 'compaction.proposed');
    server2.notify(subscribed as string, 'compaction.proposed', makePlan('p-late'));
    expect((await proposed)[0].planId).toBe('p-late');
    expect(client.subscribedSessions()).toEqual([SESSION]);
  });

  it('gives up re-subscribing after restoreAttempts and says so', async () => {
    const socketPath = path.join(res.tmpDir(), 'contextd.sock');
    const server = res.server({ socketPath, handlers: stubHandlers().handlers });
    await server.listen();
    const client = res.client({ socketPath, clientInfo, backoff: { initialMs: 5, maxMs: 10 }, restoreAttempts: 2 });
    await client.connect();
    await client.subscribe({ transcriptPath: TRANSCRIPT });
    const down = waitEvent(client, 'disconnect');
    await server.close();
    await down;
    let calls = 0;
    const server2 = res.server({
      socketPath,
      handlers: defineHandlers({
        'session.subscribe': (p) => {
          calls++;
          throw unknownSession(p.transcriptPath ?? '?');
        },
      }),
    });
    const failed = waitEvent<[Error]>(client, 'error');
    await server2.listen();
    const [err] = await failed;
    expect(err.message).toMatch(/was not restored: the daemon does not know that session/);
    expect(calls).toBe(3); // on reconnect, then two retries
    expect(client.subscribedSessions()).toEqual([]);
  });
});
