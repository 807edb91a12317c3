/**
 * Handler plumbing: the server is handed a map of handlers (by the daemon); each validates its
 * own params with the protocol's zod schema via `defineHandler`, so the server core stays
 * method-agnostic and handlers receive typed, defaulted params.
 */
import type { z } from 'zod';
import { RpcError, RpcErrorCode } from './errors.js';
import { PARAMS_SCHEMAS, type MethodName, type ParamsOf } from './protocol.js';
import type { ResultOf } from './results.js';

/** What a handler learns about the call besides its params. */
export interface HandlerContext {
  /** The connection the request arrived on; pass it to `RpcServer.notify` to push to it. */
  readonly connectionId: string;
  /** The wire method name. */
  readonly method: string;
}

/** A request handler. Params are unvalidated `unknown`; wrap with `defineHandler` to validate. */
export type Handler = (params: unknown, ctx: HandlerContext) => unknown;

/** Render zod issues as one line naming each offending field, e.g. `sessionId: expected string`. */
export function formatIssues(issues: readonly z.core.$ZodIssue[]): string {
  return issues
    .slice(0, 5)
    .map((issue) => {
      const where = issue.path.length > 0 ? issue.path.map(String).join('.') : '(params)';
      return `${where}: ${issue.message}`;
    })
    .join('; ');
}

/**
 * Validate params with `schema` before calling `fn`. A failure becomes -32602 whose message
 * names the fields (zod issue paths), e.g. `invalid params: sessionId: Invalid input: expected
 * string, received undefined`.
 */
export function defineHandler<S extends z.ZodType, R>(
  schema: S,
  fn: (params: z.output<S>, ctx: HandlerContext) => R | Promise<R>,
): Handler {
  return (params: unknown, ctx: HandlerContext) => {
    const parsed = schema.safeParse(params);
    if (!parsed.success) {
      throw new RpcError(RpcErrorCode.INVALID_PARAMS, `invalid params for ${ctx.method}: ${formatIssues(parsed.error.issues)}`, {
        issues: parsed.error.issues.map((i) => ({ path: i.path.map(String), message: i.message })),
      });
    }
    return fn(parsed.data, ctx);
  };
}

/** Typed implementations of protocol methods, keyed by wire name. */
export type MethodImpls = {
  [M in MethodName]?: (params: ParamsOf<M>, ctx: HandlerContext) => ResultOf<M> | Promise<ResultOf<M>>;
};

/**
 * Wrap typed implementations of protocol methods with the protocol's own params schemas.
 * `defineHandlers({'session.headroom': ({sessionId}) => ...})`.
 */
export function defineHandlers(impls: MethodImpls): Record<string, Handler> {
  const out: Record<string, Handler> = {};
  for (const method of Object.keys(impls) as MethodName[]) {
    const fn = impls[method] as ((params: unknown, ctx: HandlerContext) => unknown) | undefined;
    if (fn) out[method] = defineHandler(PARAMS_SCHEMAS[method] as z.ZodType, fn);
  }
  return out;
}
