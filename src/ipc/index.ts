/** contextd's socket protocol: wire schemas, errors, the server and the client. */
export * from './protocol.js';
export * from './results.js';
export {
  RpcError,
  RpcErrorCode,
  CONTEXTD_TO_RPC,
  isRpcError,
  toRpcError,
  unknownSession,
  planExpired,
  unknownHandle,
  methodNotFound,
} from './errors.js';
export { defineHandler, defineHandlers, formatIssues, type Handler, type HandlerContext, type MethodImpls } from './handlers.js';
export { Dispatcher, type DispatchConnection, type DispatcherOptions } from './dispatch.js';
export {
  RpcServer,
  resolveServerOptions,
  type RpcServerOptions,
  type ResolvedRpcServerOptions,
  type RpcServerState,
  type RpcServerEvents,
  type ConnInfo,
} from './server.js';
export { ContextdClient, type ContextdClientOptions, type ContextdClientEvents, type ClientState } from './client.js';
export {
  MAX_SOCKET_PATH_BYTES,
  SOCKET_FILE_NAME,
  checkSocketPathLength,
  defaultSocketPath,
  candidateSocketPaths,
  findSocketPath,
  fallbackSocketDir,
  ensurePrivateDir,
  resolveGroupId,
} from './paths.js';
