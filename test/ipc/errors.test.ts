import { describe, expect, it } from 'vitest';
import { CONTEXTD_TO_RPC, RpcError, RpcErrorCode, isRpcError, toRpcError, unknownSession } from '../../src/ipc/errors.js';
import { ContextdError, ErrorCode } from '../../src/util/errors.js';

describe('RpcError', () => {
  it('serializes code, message and data only', () => {
    const e = new RpcError(-32001, 'unknown session "a"', { sessionId: 'a' });
    expect(JSON.parse(JSON.stringify(e))).toEqual({ code: -32001, message: 'unknown session "a"', data: { sessionId: 'a' } });
    expect(new RpcError(-32603, 'x').toJSON()).toEqual({ code: -32603, message: 'x' });
    expect(RpcError.fromJSON(e.toJSON())).toMatchObject({ code: -32001, data: { sessionId: 'a' } });
    expect(isRpcError(e, -32001)).toBe(true);
    expect(isRpcError(e, -32002)).toBe(false);
  });

  it('gives actionable canonical messages', () => {
    expect(unknownSession('abc').message).toBe('unknown session "abc": subscribe to a session listed by daemon.status');
  });
});

describe('toRpcError', () => {
  it('maps the session, plan, handle and store codes', () => {
    const cases: Array<[ErrorCode, number]> = [
      [ErrorCode.UNKNOWN_SESSION, RpcErrorCode.UNKNOWN_SESSION],
      [ErrorCode.PLAN_EXPIRED, RpcErrorCode.PLAN_EXPIRED],
      [ErrorCode.UNKNOWN_HANDLE, RpcErrorCode.UNKNOWN_HANDLE],
      [ErrorCode.STORE_FULL, RpcErrorCode.UNAVAILABLE],
      [ErrorCode.LINE_TOO_LONG, RpcErrorCode.REQUEST_TOO_LARGE],
      [ErrorCode.BUDGET_UNREACHABLE, RpcErrorCode.BUDGET_UNREACHABLE],
      [ErrorCode.TAIL_FILE_GONE, RpcErrorCode.INVALID_PARAMS],
    ];
    for (const [local, wire] of cases) {
      const mapped = toRpcError(new ContextdError(local, `problem ${local}: do X`));
      expect(mapped.code).toBe(wire);
      expect(mapped.message).toBe(`problem ${local}: do X`);
      expect(CONTEXTD_TO_RPC[local]).toBe(wire);
    }
  });

  it('uses the canonical message when the id is in the details', () => {
    const e = toRpcError(new ContextdError(ErrorCode.UNKNOWN_SESSION, 'no such session', { sessionId: 'zz' }));
    expect(e.message).toBe('unknown session "zz": subscribe to a session listed by daemon.status');
    expect(toRpcError(new ContextdError(ErrorCode.PLAN_EXPIRED, 'x', { planId: 'p1' })).message).toMatch(/session\.compact/);
  });

  it('never passes local codes, nested details, causes or stacks to the peer', () => {
    const cause = new Error('EACCES /root/secret');
    const e = toRpcError(new ContextdError(ErrorCode.STORE_FULL, 'disk full: free space', { bytes: 10, inner: { p: '/x' } }, { cause }));
    const wire = JSON.stringify(e);
    expect(wire).not.toContain('STORE_FULL');
    expect(wire).not.toContain('secret');
    expect(wire).not.toContain('inner');
    expect(e.data).toEqual({ bytes: 10 });
  });

  it('hides unexpected errors behind -32603 with a log reference', () => {
    const plain = toRpcError(new TypeError("Cannot read properties of undefined (reading 'x')"), 'c3/7');
    expect(plain.code).toBe(-32603);
    expect(plain.message).toBe('internal error in contextd (ref c3/7): see the daemon log');
    expect(toRpcError('a string').code).toBe(-32603);
    const unmapped = toRpcError(new ContextdError(ErrorCode.SOCKET_IN_USE, '/run/x.sock busy'));
    expect(unmapped.code).toBe(-32603);
    expect(unmapped.message).not.toContain('/run/x.sock');
  });
});
