/**
 * proxy/: the HTTP proxy between agents and their model providers — forwarding, request ↔
 * conversation matching, and plans applied to requests. Depends on model/ and compact/ only;
 * the daemon hands it an archive and a logger.
 */
export { ProxyServer, routeOf } from './server.js';
export type { ProxyDeps, ProxyEvents, ProxyState, ProxyTotals } from './server.js';
export { Conversation } from './conversation.js';
export type { Prepared, ConversationStats } from './conversation.js';
export { proxyConfigSchema, resolveProxyOptions, parseListen, isLoopback, DEFAULT_UPSTREAMS, PROXY_DEFAULTS } from './options.js';
export type { ProxyConfig, ProxyOptions } from './options.js';
export { anthropicFormat } from './formats/anthropic.js';
export { openaiChatFormat } from './formats/openai-chat.js';
export { openaiResponsesFormat } from './formats/openai-responses.js';
export { sessionHint, sessionFromUserId } from './match.js';
export { errorBody, PROXY_ERRORS } from './errors.js';
export type { ProviderFormat, ParsedRequest, RequestItem, ItemEdit, ProviderFormatName } from './request.js';
export type { ArchiveSink, OriginalsFilter } from './types.js';
