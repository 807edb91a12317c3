/**
 * What the socket handlers may ask of the daemon, and the status it reports. Kept apart
 * from daemon.ts (which implements it) and handlers.ts (which uses it) so neither imports
 * the other.
 */
import type { Archive } from '../store/index.js';
import type { SessionManager } from './sessions.js';
import type { WarmService } from './warm-service.js';

/** What the socket handlers may ask of the daemon. */
export interface DaemonApi {
  sessions(): SessionManager;
  warm(): WarmService;
  archive(): Archive;
  subscribe(connectionId: string, sessionId: string): void;
  /** Sessions a connection subscribed to. */
  subscribedSessions(connectionId: string): readonly string[];
  status(): DaemonStatus;
}

/** `daemon.status` result as the daemon builds it. */
export interface DaemonStatus {
  server: { name: string; version: string };
  pid: number;
  uptimeSeconds: number;
  socket: string;
  watch: string[];
  reserveRatio: number;
  softWatermark: number;
  sessions: {
    sessionId: string;
    file: string;
    format: string;
    tokens: number;
    total: number;
    headroom: number;
    sections: number;
    reportedTokens: number | null;
    lastActivityAt: number;
    openPlans: number;
    lastEdit: { reason: string; at: number; planId: string } | null;
    subscribers: number;
  }[];
}
