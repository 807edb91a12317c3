"""The contextd context engine for hermes-agent.

hermes hands its engine the message list itself (``compress``, ``select_context``), so the engine
hands that list to contextd with ``session.sync``; contextd scores it, plans against the window,
archives the originals of every edit under a recall handle, and the engine applies the plan to
the very list it synced, keeping tool pairs whole and the system prompt and current request
untouched, then acks what it applied. When the daemon is down or slow, nothing is raised into
the agent: ``select_context`` leaves the request alone, ``compress`` falls back to a plain
oldest-first trim that fits, and the outage is logged once.
"""

from __future__ import annotations

import json
import logging
import os
import time
from typing import Any, Callable, Dict, List, Optional, TypeVar

from agent.context_engine import ContextEngine

from .client import ContextdClient, ContextdError, ContextdRpcError, ContextdUnavailable, PLAN_EXPIRED, UNKNOWN_HANDLE, UNKNOWN_SESSION
from .plan import Overlay, apply_plan, estimate_tokens, plain_fallback, tool_pair_problems

__all__ = ["ContextdEngine"]

logger = logging.getLogger("contextd.hermes")

T = TypeVar("T")

#: Context window assumed until hermes says (update_model / budget_tokens).
DEFAULT_CONTEXT_LENGTH = 128_000
#: Seconds each daemon call may take (override with $CONTEXTD_HERMES_TIMEOUT).
DEFAULT_TIMEOUT_S = 2.0
#: After a failed connection, calls skip the daemon for this long instead of waiting on it again.
RETRY_AFTER_S = 5.0
#: Share of the window the warm bootstrap may use on the first request (at most 2000 tokens).
BOOTSTRAP_SHARE = 0.05

RECALL_TOOL = "contextd_recall"
SEARCH_TOOL = "contextd_search"


class ContextdEngine(ContextEngine):
    """Context engine whose compaction is planned by the contextd daemon."""

    def __init__(self, socket_path: Optional[str] = None, timeout_s: Optional[float] = None, client_factory: Optional[Callable[..., ContextdClient]] = None) -> None:
        env_timeout = os.environ.get("CONTEXTD_HERMES_TIMEOUT")
        self._timeout = timeout_s if timeout_s is not None else float(env_timeout) if env_timeout else DEFAULT_TIMEOUT_S
        self._socket_path = socket_path
        self._client_factory = client_factory or ContextdClient
        self._client: Optional[ContextdClient] = None
        self._down_since: Optional[float] = None
        self._warned = False
        self._session_id: Optional[str] = None
        self._hermes_home: Optional[str] = None
        self._overlay = Overlay()
        self._bootstrap: Optional[List[Dict[str, Any]]] = None
        self._bootstrap_pending = False
        self._reserve_ratio = 0.15
        self._soft_watermark = 0.60
        self._daemon_zone = "ok"
        self.context_length = 0
        self.threshold_tokens = 0
        self.last_prompt_tokens = 0
        self.last_completion_tokens = 0
        self.last_total_tokens = 0
        self.compression_count = 0
        #: What the last compress/select_context did (for logs and tests).
        self.last_outcome: Dict[str, Any] = {}

    # ------------------------------------------------------------------ identity

    @property
    def name(self) -> str:
        return "contextd"

    def is_available(self) -> bool:
        """True when a contextd socket is there to talk to (the engine works without, degraded)."""
        path = self._socket_path or ContextdClient(timeout=self._timeout).socket_path
        return os.path.exists(path)

    # ------------------------------------------------------------------ daemon access

    def _daemon(self) -> Optional[ContextdClient]:
        """A connected client, or None while the daemon is unreachable (retried every few seconds)."""
        if self._client is not None and self._client.connected:
            return self._client
        if self._down_since is not None and time.monotonic() - self._down_since < RETRY_AFTER_S:
            return None
        client = self._client_factory(self._socket_path, timeout=self._timeout, client_name="hermes-contextd")
        try:
            client.connect()
        except ContextdError as err:
            self._went_down(err)
            return None
        self._client = client
        if self._down_since is not None:
            logger.info("contextd is reachable again at %s", client.socket_path)
        self._down_since = None
        self._warned = False
        return client

    def _went_down(self, err: BaseException) -> None:
        self._down_since = time.monotonic()
        if self._client is not None:
            self._client.close()
        if not self._warned:
            self._warned = True
            logger.warning("contextd unavailable, hermes continues without it: %s", err)

    def _try(self, what: str, fn: Callable[[ContextdClient], T]) -> Optional[T]:
        """Run ``fn`` against the daemon; None (never an exception) when it is down, slow or refuses."""
        client = self._daemon()
        if client is None:
            return None
        try:
            return fn(client)
        except ContextdUnavailable as err:
            self._went_down(err)
        except ContextdRpcError as err:
            logger.info("contextd refused %s: %s", what, err)
        except Exception as err:  # never into the agent
            logger.warning("contextd %s failed: %s", what, err)
        return None

    # ------------------------------------------------------------------ session lifecycle

    def on_session_start(self, session_id: str, **kwargs: Any) -> None:
        self._session_id = session_id
        home = kwargs.get("hermes_home") or os.environ.get("HERMES_HOME") or os.path.join(os.path.expanduser("~"), ".hermes")
        self._hermes_home = str(home)
        self._overlay.clear()
        self._bootstrap = None
        self._bootstrap_pending = True
        self._daemon_zone = "ok"
        transcript = os.path.join(self._hermes_home, "sessions", f"{session_id}.jsonl")

        def start(c: ContextdClient) -> None:
            try:
                c.subscribe(transcript_path=os.path.abspath(transcript))
            except ContextdRpcError as err:
                if err.code != UNKNOWN_SESSION:
                    raise
                # Not tailed (hermes' CLI writes no JSONL, or the daemon does not watch it):
                # the first session.sync opens the session and subscribes this connection.

        self._try("session start", start)

    def on_session_reset(self) -> None:
        super().on_session_reset()
        self._overlay.clear()

    def on_session_end(self, session_id: str, messages: List[Dict[str, Any]]) -> None:
        outcome = _outcome_of(messages)

        def end(c: ContextdClient) -> None:
            c.sync(session_id, self._wire(self._overlay.apply(messages)), self._budget(0))
            c.end_session(session_id, outcome)

        self._try("session end", end)
        if session_id == self._session_id:
            self._session_id = None
        if self._client is not None:
            self._client.close()  # the next session reconnects

    # ------------------------------------------------------------------ token state

    def update_from_response(self, usage: Dict[str, Any]) -> None:
        usage = usage or {}
        prompt = usage.get("prompt_tokens", usage.get("input_tokens"))
        completion = usage.get("completion_tokens", usage.get("output_tokens"))
        if isinstance(prompt, (int, float)):
            self.last_prompt_tokens = int(prompt)
        if isinstance(completion, (int, float)):
            self.last_completion_tokens = int(completion)
        total = usage.get("total_tokens")
        self.last_total_tokens = int(total) if isinstance(total, (int, float)) else self.last_prompt_tokens + self.last_completion_tokens

    def update_model(self, model: str, context_length: int, base_url: str = "", api_key: str = "", provider: str = "", api_mode: str = "") -> None:
        self.context_length = int(context_length or 0)
        self._recompute_threshold()

    def _recompute_threshold(self) -> None:
        self.threshold_tokens = int(self.context_length * (1 - self._reserve_ratio)) if self.context_length else 0

    def should_compress(self, prompt_tokens: Optional[int] = None) -> bool:
        """Compress inside contextd's reserve: by hermes' own count, or by the daemon's last word."""
        tokens = prompt_tokens if prompt_tokens is not None else self.last_prompt_tokens
        if self.context_length and tokens and tokens > 0 and 1 - tokens / self.context_length < self._reserve_ratio:
            return True
        return self._daemon_zone == "reserve"

    # ------------------------------------------------------------------ compaction

    def _budget(self, budget_tokens: int) -> int:
        return int(budget_tokens or self.context_length or DEFAULT_CONTEXT_LENGTH)

    def _wire(self, messages: List[Dict[str, Any]]) -> List[Dict[str, Any]]:
        """Messages as sent to session.sync: the OpenAI fields, our own summaries marked."""
        out = []
        for m in messages:
            w = {k: m[k] for k in ("role", "content", "tool_calls", "tool_call_id", "name", "reasoning") if k in m}
            if self._overlay.is_summary(m):
                w["isSummary"] = True
            out.append(w)
        return out

    def _sync(self, c: ContextdClient, messages: List[Dict[str, Any]], budget: int) -> Dict[str, Any]:
        res = c.sync(self._session_id or "hermes", self._wire(messages), budget)
        marks = res.get("watermarks") or {}
        self._reserve_ratio = float(marks.get("reserveRatio", self._reserve_ratio))
        self._soft_watermark = float(marks.get("softWatermark", self._soft_watermark))
        self._daemon_zone = str(res.get("zone", "ok"))
        self._recompute_threshold()
        return res

    @staticmethod
    def _decline(c: ContextdClient, plan_id: str, reason: str) -> None:
        """Tell the daemon a plan was not applied; one already superseded needs no answer."""
        try:
            c.ack(plan_id, False, reason=reason)
        except ContextdRpcError as err:
            if err.code != PLAN_EXPIRED:
                raise

    def _apply(self, c: ContextdClient, messages: List[Dict[str, Any]], plan: Dict[str, Any]) -> Optional[List[Dict[str, Any]]]:
        """Apply what can be applied of ``plan`` to ``messages``, ack it, return the new list (None: nothing applied)."""
        if not plan.get("edits") or plan.get("dryRun"):
            return None
        result = apply_plan(messages, plan)
        problems = tool_pair_problems(result.messages) if result.applied else []
        if problems:  # belt and braces: never hand hermes a broken list
            self._decline(c, plan["planId"], f"result would break tool pairs: {problems[0]}")
            return None
        reason = "; ".join(f"{eid}: {why}" for eid, why in result.skipped) or None
        if not result.applied:
            self._decline(c, plan["planId"], reason or "no edit applicable")
            return None
        try:
            ack = c.ack(plan["planId"], True, result.applied, reason)
        except ContextdRpcError as err:
            if err.code == PLAN_EXPIRED:
                return None  # a newer list superseded it: the caller asks again next time
            raise
        self._overlay.add(result.replacements)
        self.last_outcome.update(planId=plan["planId"], applied=result.applied, skipped=result.skipped, headroom=ack.get("headroom"))
        return result.messages

    def _pushed_plan(self, c: ContextdClient) -> Optional[Dict[str, Any]]:
        """The newest compaction.proposed for this session, if the daemon pushed one."""
        newest = None
        for method, params in c.poll_notifications():
            if method == "compaction.proposed" and isinstance(params, dict) and params.get("sessionId") == self._session_id:
                newest = params
        return newest

    def _plan_and_apply(self, c: ContextdClient, messages: List[Dict[str, Any]], budget: int, force: bool) -> List[Dict[str, Any]]:
        res = self._sync(c, messages, budget)
        out = messages
        pushed = self._pushed_plan(c)
        if pushed is not None:
            applied = self._apply(c, out, pushed)
            if applied is not None:
                out = applied
                res = self._sync(c, out, budget)
        if force or res.get("zone") == "reserve":
            plan = c.compact(self._session_id or "hermes")
            applied = self._apply(c, out, plan)
            if applied is not None:
                out = applied
        return out

    def compress(self, messages: List[Dict[str, Any]], current_tokens: Optional[int] = None, focus_topic: Optional[str] = None, force: bool = False, memory_context: str = "") -> List[Dict[str, Any]]:
        """Compact the persisted history to contextd's reserve; a plain trim that fits when it is down."""
        budget = self._budget(0)
        target = int(budget * (1 - self._reserve_ratio))
        base = self._overlay.apply(messages)
        self.last_outcome = {"via": "contextd"}
        out = self._try("compress", lambda c: self._plan_and_apply(c, base, budget, True))
        if out is None:
            out, dropped = plain_fallback(base, target)
            self.last_outcome = {"via": "fallback", "dropped": dropped}
        else:
            headroom = self._try("headroom", lambda c: c.headroom(self._session_id or "hermes"))
            if headroom and headroom.get("tokens", 0) > target:
                # contextd could not reach the target (anchors in the way): trim what is left.
                out, dropped = plain_fallback(out, target)
                self.last_outcome.update(fallbackDropped=dropped)
        self.compression_count += 1
        self.last_prompt_tokens = estimate_tokens(out)
        return out

    def select_context(self, request_messages: List[Dict[str, Any]], *, conversation_messages: Optional[List[Dict[str, Any]]] = None, incoming_message: Optional[Dict[str, Any]] = None, budget_tokens: int = 0) -> Optional[List[Dict[str, Any]]]:
        """This request's context: acked summaries in place, the warm bootstrap on top, and contextd's
        plan applied when the list is past a watermark. None when nothing changes."""
        if self._session_id is None or not request_messages:
            return None
        budget = self._budget(budget_tokens)
        base = self._overlay.apply(request_messages)
        base = self._with_bootstrap(base, incoming_message, budget)
        self.last_outcome = {"via": "contextd"}
        out = self._try("select_context", lambda c: self._plan_and_apply(c, base, budget, False))
        if out is None:
            out = base
            self.last_outcome = {"via": "unchanged"}
        return None if out == list(request_messages) else out

    # ------------------------------------------------------------------ warm bootstrap

    def _with_bootstrap(self, messages: List[Dict[str, Any]], incoming: Optional[Dict[str, Any]], budget: int) -> List[Dict[str, Any]]:
        if self._bootstrap_pending:
            self._bootstrap_pending = False
            task = _text_of(incoming) if incoming else ""
            if not task:
                task = next((_text_of(m) for m in reversed(messages) if m.get("role") == "user"), "")
            if task:
                boot = self._try("warm.bootstrap", lambda c: c.bootstrap(task[:2000], budget_tokens=max(1, min(2000, int(budget * BOOTSTRAP_SHARE)))))
                msgs = (boot or {}).get("messages") or []
                if msgs:
                    text = "\n\n".join(str(m.get("content", "")) for m in msgs if m.get("content"))
                    self._bootstrap = [{"role": "system", "content": text}] if text else None
        if not self._bootstrap:
            return messages
        at = 0
        while at < len(messages) and messages[at].get("role") in ("system", "developer"):
            at += 1
        return messages[:at] + [dict(m) for m in self._bootstrap] + messages[at:]

    # ------------------------------------------------------------------ agent tools

    def get_tool_schemas(self) -> List[Dict[str, Any]]:
        return [
            {
                "name": RECALL_TOOL,
                "description": "Return the original messages that a contextd summary replaced. Summaries quote their handle as [contextd recall h_...].",
                "parameters": {"type": "object", "properties": {"handle": {"type": "string", "description": "the handle quoted in the summary, e.g. h_3f2a9c..."}}, "required": ["handle"]},
            },
            {
                "name": SEARCH_TOOL,
                "description": "Search the originals contextd compacted out of this conversation by what they are about; returns handles and the matching messages.",
                "parameters": {
                    "type": "object",
                    "properties": {"query": {"type": "string", "description": "words describing what you are looking for"}, "limit": {"type": "integer", "minimum": 1, "maximum": 20}},
                    "required": ["query"],
                },
            },
        ]

    def handle_tool_call(self, name: str, args: Dict[str, Any], **kwargs: Any) -> str:
        args = args or {}
        if name == RECALL_TOOL:
            handle = str(args.get("handle", "")).strip().strip("[]")
            if handle.startswith("contextd recall "):
                handle = handle[len("contextd recall ") :]
            if not handle:
                return json.dumps({"error": "give the handle quoted in the summary, e.g. h_3f2a9c..."})
            return self._tool("recall", lambda c: _recalled(c.recall(self._session_id or "", handle)), handle=handle)
        if name == SEARCH_TOOL:
            query = str(args.get("query", "")).strip()
            if not query:
                return json.dumps({"error": "give a query"})
            limit = args.get("limit", 5)
            limit = max(1, min(20, int(limit))) if isinstance(limit, (int, float)) else 5
            return self._tool("search", lambda c: _found(c.search(query, self._session_id, limit)))
        return json.dumps({"error": f"Unknown context engine tool: {name}"})

    def _tool(self, what: str, fn: Callable[[ContextdClient], Dict[str, Any]], handle: str = "") -> str:
        client = self._daemon()
        if client is None:
            return json.dumps({"error": "contextd is not running, so archived originals cannot be read right now"})
        try:
            return json.dumps(fn(client), ensure_ascii=False)
        except ContextdUnavailable as err:
            self._went_down(err)
            return json.dumps({"error": f"contextd did not answer: {err}"})
        except ContextdRpcError as err:
            if err.code == UNKNOWN_HANDLE:
                return json.dumps({"error": f"no archived originals under {handle!r} in this session"})
            return json.dumps({"error": err.message})
        except Exception as err:
            logger.warning("contextd %s failed: %s", what, err)
            return json.dumps({"error": f"contextd {what} failed: {err}"})


def _plain(m: Dict[str, Any]) -> Dict[str, Any]:
    out: Dict[str, Any] = {"role": m.get("role"), "content": m.get("text", "")}
    if m.get("toolName"):
        out["tool"] = m["toolName"]
    if m.get("toolCalls"):
        out["tool_calls"] = [{"name": c.get("name"), "arguments": c.get("arguments")} for c in m["toolCalls"]]
    return out


def _recalled(res: Dict[str, Any]) -> Dict[str, Any]:
    return {"handle": res.get("handle"), "messages": [_plain(m) for m in res.get("messages") or []]}


def _found(res: Dict[str, Any]) -> Dict[str, Any]:
    return {"hits": [{"handle": h.get("handle"), "score": round(float(h.get("score", 0)), 3), "messages": [_plain(m) for m in h.get("messages") or []]} for h in res.get("hits") or []]}


def _text_of(m: Optional[Dict[str, Any]]) -> str:
    if not m:
        return ""
    content = m.get("content")
    if isinstance(content, str):
        return content
    if isinstance(content, list):
        return "\n".join(str(p.get("text", "")) for p in content if isinstance(p, dict) and p.get("type") == "text")
    return ""


def _outcome_of(messages: List[Dict[str, Any]]) -> str:
    """hermes does not say how a session went; a last assistant turn that finished is a success."""
    for m in reversed(messages or []):
        if m.get("role") == "assistant":
            return "success" if m.get("finish_reason") == "stop" or (m.get("content") and not m.get("tool_calls")) else "unknown"
    return "unknown"
