"""Stdlib-only JSON-RPC 2.0 client for the contextd daemon's Unix socket (Python >= 3.10).

One JSON object per line, UTF-8. Usable by any Python agent, not only hermes::

    from contextd.client import ContextdClient
    with ContextdClient(timeout=2.0) as c:        # $CONTEXTD_SOCKET, then the default paths
        c.subscribe(transcript_path="/abs/session.jsonl")
        for method, params in c.poll_notifications(wait=1.0):
            if method == "compaction.proposed": ...   # apply params["edits"], then c.ack(...)

Requests are synchronous; notifications the daemon pushes meanwhile are queued and returned by
``poll_notifications``. Every call has a bounded timeout; after a timeout the connection is
closed (a late reply would be taken for the next one's) and the next call reconnects.
"""

from __future__ import annotations

import collections
import json
import os
import select
import socket
import tempfile
import time
from typing import Any, Deque, Dict, Iterable, List, Optional, Tuple

__all__ = [
    "ContextdClient",
    "ContextdError",
    "ContextdRpcError",
    "ContextdUnavailable",
    "candidate_socket_paths",
    "find_socket_path",
]

PROTOCOL_VERSION = 1
SOCKET_FILE_NAME = "contextd.sock"
#: Largest line accepted from the daemon.
MAX_LINE_BYTES = 64 * 1024 * 1024
#: Notifications kept while nobody polls; the oldest are dropped beyond this.
MAX_QUEUED_NOTIFICATIONS = 256

# contextd's own JSON-RPC error codes (docs/protocol.md).
UNKNOWN_SESSION = -32001
PLAN_EXPIRED = -32002
UNKNOWN_HANDLE = -32003


class ContextdError(Exception):
    """Base of every error this client raises."""


class ContextdUnavailable(ContextdError):
    """The daemon cannot be reached, hung up, or did not answer within the timeout."""


class ContextdRpcError(ContextdError):
    """The daemon refused a request (a JSON-RPC error object)."""

    def __init__(self, code: int, message: str, data: Any = None) -> None:
        super().__init__(f"{message} ({code})")
        self.code = code
        self.message = message
        self.data = data


def candidate_socket_paths(env: Optional[Dict[str, str]] = None) -> List[str]:
    """Where to look, in order: ``$CONTEXTD_SOCKET``, ``$XDG_RUNTIME_DIR/contextd.sock`` (run by hand),
    ``$XDG_RUNTIME_DIR/contextd/contextd.sock`` (systemd user unit), the per-user temp dir."""
    env = os.environ if env is None else env
    out: List[str] = []
    explicit = env.get("CONTEXTD_SOCKET", "")
    if explicit:
        out.append(explicit)
    runtime = env.get("XDG_RUNTIME_DIR", "")
    if runtime:
        out.append(os.path.join(runtime, SOCKET_FILE_NAME))
        out.append(os.path.join(runtime, "contextd", SOCKET_FILE_NAME))
    uid = os.getuid() if hasattr(os, "getuid") else 0
    out.append(os.path.join(tempfile.gettempdir(), f"contextd-{uid}", SOCKET_FILE_NAME))
    return out


def find_socket_path(env: Optional[Dict[str, str]] = None) -> str:
    """The first candidate socket that exists, else the first candidate."""
    candidates = candidate_socket_paths(env)
    for path in candidates:
        if os.path.exists(path):
            return path
    return candidates[0]


class ContextdClient:
    """A connection to contextd. Connects lazily on the first call; not thread-safe."""

    def __init__(
        self,
        socket_path: Optional[str] = None,
        *,
        timeout: float = 2.0,
        client_name: str = "contextd-python",
        client_version: str = "0.1.0",
        apply_edits: bool = True,
    ) -> None:
        self.socket_path = socket_path or find_socket_path()
        self.timeout = timeout
        self._client_info = {"name": client_name, "version": client_version}
        self._apply_edits = apply_edits
        self._sock: Optional[socket.socket] = None
        self._buf = b""
        self._next_id = 1
        self._notes: Deque[Tuple[str, Any]] = collections.deque(maxlen=MAX_QUEUED_NOTIFICATIONS)
        self.server: Optional[Dict[str, Any]] = None

    # ------------------------------------------------------------------ connection

    @property
    def connected(self) -> bool:
        return self._sock is not None

    def connect(self) -> Dict[str, Any]:
        """Open the socket and send ``initialize``. Raises ContextdUnavailable."""
        self.close()
        sock = socket.socket(socket.AF_UNIX, socket.SOCK_STREAM)
        sock.settimeout(self.timeout)
        try:
            sock.connect(self.socket_path)
        except OSError as err:
            sock.close()
            raise ContextdUnavailable(f"cannot reach contextd at {self.socket_path}: {err}") from err
        self._sock = sock
        self._buf = b""
        self.server = self._call("initialize", {"client": self._client_info, "capabilities": {"applyEdits": self._apply_edits}})
        return self.server

    def close(self) -> None:
        if self._sock is not None:
            try:
                self._sock.close()
            finally:
                self._sock = None
                self._buf = b""

    def __enter__(self) -> "ContextdClient":
        if not self.connected:
            self.connect()
        return self

    def __exit__(self, *exc: Any) -> None:
        self.close()

    # ------------------------------------------------------------------ framing

    def _send(self, obj: Dict[str, Any]) -> None:
        assert self._sock is not None
        data = (json.dumps(obj, ensure_ascii=False, separators=(",", ":")) + "\n").encode("utf-8")
        try:
            self._sock.sendall(data)
        except OSError as err:
            self.close()
            raise ContextdUnavailable(f"lost the connection to contextd: {err}") from err

    def _read_line(self, timeout: Optional[float]) -> Optional[bytes]:
        """One line, or None when nothing arrived within ``timeout`` (0 = do not wait)."""
        assert self._sock is not None
        while b"\n" not in self._buf:
            if len(self._buf) > MAX_LINE_BYTES:
                self.close()
                raise ContextdUnavailable(f"contextd sent a line over {MAX_LINE_BYTES} bytes")
            if timeout is not None:
                ready, _, _ = select.select([self._sock], [], [], max(timeout, 0))
                if not ready:
                    return None
            try:
                chunk = self._sock.recv(65536)
            except socket.timeout:
                return None
            except OSError as err:
                self.close()
                raise ContextdUnavailable(f"lost the connection to contextd: {err}") from err
            if not chunk:
                self.close()
                raise ContextdUnavailable("contextd closed the connection")
            self._buf += chunk
        line, _, self._buf = self._buf.partition(b"\n")
        return line.rstrip(b"\r")

    def _call(self, method: str, params: Dict[str, Any], timeout: Optional[float] = None) -> Any:
        assert self._sock is not None
        rid = self._next_id
        self._next_id += 1
        self._send({"jsonrpc": "2.0", "id": rid, "method": method, "params": params})
        budget = self.timeout if timeout is None else timeout
        deadline = _now() + budget
        while True:
            left = deadline - _now()
            line = self._read_line(left) if left > 0 else None
            if line is None:
                self.close()
                raise ContextdUnavailable(f"contextd did not answer {method} within {budget:.3g} s")
            try:
                msg = json.loads(line.decode("utf-8"))
            except ValueError:
                continue  # not ours to understand; the daemon never sends this
            if not isinstance(msg, dict):
                continue
            if "id" not in msg and "method" in msg:
                self._notes.append((msg["method"], msg.get("params")))
                continue
            if msg.get("id") != rid:
                continue
            if "error" in msg:
                err = msg["error"] or {}
                raise ContextdRpcError(int(err.get("code", -32603)), str(err.get("message", "error")), err.get("data"))
            return msg.get("result")

    # ------------------------------------------------------------------ requests

    def request(self, method: str, params: Optional[Dict[str, Any]] = None, timeout: Optional[float] = None) -> Any:
        """Send any request (connecting first when needed) and return its result."""
        if self._sock is None:
            self.connect()
        return self._call(method, params or {}, timeout)

    def poll_notifications(self, wait: float = 0.0) -> List[Tuple[str, Any]]:
        """Notifications received so far, plus any arriving within ``wait`` seconds."""
        if self._sock is not None:
            deadline = _now() + wait
            while True:
                line = self._read_line(max(deadline - _now(), 0))
                if line is None:
                    break
                try:
                    msg = json.loads(line.decode("utf-8"))
                except ValueError:
                    continue
                if isinstance(msg, dict) and "method" in msg and "id" not in msg:
                    self._notes.append((msg["method"], msg.get("params")))
        out = list(self._notes)
        self._notes.clear()
        return out

    def subscribe(self, session_id: Optional[str] = None, transcript_path: Optional[str] = None) -> Dict[str, Any]:
        params: Dict[str, Any] = {}
        if session_id is not None:
            params["sessionId"] = session_id
        if transcript_path is not None:
            params["transcriptPath"] = transcript_path
        return self.request("session.subscribe", params)

    def sync(self, session_id: str, messages: Iterable[Dict[str, Any]], budget_tokens: Optional[int] = None) -> Dict[str, Any]:
        """Hand over the OpenAI-format list about to be sent; plans then index into it."""
        params: Dict[str, Any] = {"sessionId": session_id, "messages": list(messages)}
        if budget_tokens:
            params["budgetTokens"] = int(budget_tokens)
        return self.request("session.sync", params)

    def headroom(self, session_id: str) -> Dict[str, Any]:
        return self.request("session.headroom", {"sessionId": session_id})

    def compact(self, session_id: str, target_headroom: Optional[float] = None, dry_run: bool = False) -> Dict[str, Any]:
        params: Dict[str, Any] = {"sessionId": session_id}
        if target_headroom is not None:
            params["targetHeadroom"] = target_headroom
        if dry_run:
            params["dryRun"] = True
        return self.request("session.compact", params)

    def ack(self, plan_id: str, applied: bool, edit_ids: Optional[List[str]] = None, reason: Optional[str] = None) -> Dict[str, Any]:
        params: Dict[str, Any] = {"planId": plan_id, "applied": applied}
        if edit_ids is not None:
            params["editIds"] = edit_ids
        if reason:
            params["reason"] = reason
        return self.request("compaction.ack", params)

    def recall(self, session_id: str, handle: str) -> Dict[str, Any]:
        return self.request("section.recall", {"sessionId": session_id, "handle": handle})

    def search(self, query: str, session_id: Optional[str] = None, limit: int = 5) -> Dict[str, Any]:
        params: Dict[str, Any] = {"query": query, "limit": limit}
        if session_id is not None:
            params["sessionId"] = session_id
        return self.request("archive.search", params)

    def end_session(self, session_id: str, outcome: str = "unknown") -> Dict[str, Any]:
        return self.request("session.end", {"sessionId": session_id, "outcome": outcome})

    def bootstrap(self, task: str, repo: Optional[str] = None, budget_tokens: int = 2000) -> Dict[str, Any]:
        params: Dict[str, Any] = {"task": task, "budgetTokens": int(budget_tokens)}
        if repo:
            params["repo"] = repo
        return self.request("warm.bootstrap", params)

    def status(self) -> Dict[str, Any]:
        return self.request("daemon.status", {})


def _now() -> float:
    return time.monotonic()
