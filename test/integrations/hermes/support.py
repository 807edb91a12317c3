"""Shared pieces of the hermes plugin tests: paths, the spawned daemon, generated sessions."""

import json
import os
import shutil
import signal
import socket
import subprocess
import sys
import tempfile
import time
import unittest
from pathlib import Path

HERE = Path(__file__).resolve().parent
REPO = HERE.parents[2]
PLUGIN_SRC = REPO / "integrations" / "hermes" / "contextd"
CLI = Path(os.environ.get("CONTEXTD_CLI", REPO / "dist" / "src" / "cli" / "main.js"))

# The test double of hermes' `agent` package sits beside this file.
if str(HERE) not in sys.path:
    sys.path.insert(0, str(HERE))


def require_cli(test: unittest.TestCase) -> None:
    if not CLI.exists():
        test.skipTest(f"{CLI} is missing: run `npm run build` first (npm test builds it)")


def run_cli(*args: str, env=None) -> subprocess.CompletedProcess:
    return subprocess.run(["node", str(CLI), *args], capture_output=True, text=True, timeout=60, env={**os.environ, **(env or {})})


class Daemon:
    """`contextd daemon` spawned for real on a private socket and state directory."""

    def __init__(self, root: Path, budget: int = 0):
        self.root = root
        self.socket = str(root / "contextd.sock")
        self.state = str(root / "state")
        watch = root / "watched"
        watch.mkdir(exist_ok=True)
        args = ["node", str(CLI), "daemon", "--socket", self.socket, "--state", self.state, "--watch", str(watch)]
        if budget:
            args += ["--budget", str(budget)]
        self.log = open(root / "daemon.log", "wb")
        self.proc = subprocess.Popen(args, stdout=subprocess.DEVNULL, stderr=self.log, env={**os.environ, "CONTEXTD_LOG_LEVEL": "info"})
        # Ready when it answers: the socket file can appear before the server accepts.
        deadline = time.monotonic() + 60
        while not self._answers():
            if self.proc.poll() is not None or time.monotonic() > deadline:
                self.stop()
                raise RuntimeError(f"contextd daemon did not start: {(root / 'daemon.log').read_text(errors='replace')[-2000:]}")
            time.sleep(0.1)

    def _answers(self) -> bool:
        if not os.path.exists(self.socket):
            return False
        s = socket.socket(socket.AF_UNIX, socket.SOCK_STREAM)
        s.settimeout(5)
        try:
            s.connect(self.socket)
            s.sendall(b'{"jsonrpc":"2.0","id":1,"method":"daemon.status","params":{}}\n')
            buf = b""
            while b"\n" not in buf:
                chunk = s.recv(65536)
                if not chunk:
                    return False
                buf += chunk
            return b'"result"' in buf
        except OSError:
            return False
        finally:
            s.close()

    def stop(self) -> None:
        if self.proc.poll() is None:
            self.proc.send_signal(signal.SIGTERM)
            try:
                self.proc.wait(timeout=15)
            except subprocess.TimeoutExpired:
                self.proc.kill()
                self.proc.wait()
        self.log.close()


def restore_env(name: str, value) -> None:
    """Put an environment variable back as it was (None: unset)."""
    if value is None:
        os.environ.pop(name, None)
    else:
        os.environ[name] = value


class TempDir:
    def __init__(self):
        self.path = Path(tempfile.mkdtemp(prefix="contextd-hermes-"))

    def cleanup(self):
        shutil.rmtree(self.path, ignore_errors=True)


SYSTEM = "You are hermes, a coding agent working in /srv/shop. Use the tools to read and edit files."
INSTRUCTION = (
    "Refactor the payments package so refunds reuse the ledger code. Constraint: never change the public "
    "function signatures in payments/api.py, and always run pytest before you say you are done."
)
FACT = "LEDGER_EPSILON = 0.0042  # rounding tolerance agreed with finance in March"


def _file_body(n: int, lines: int = 60) -> str:
    rows = [f"# payments/module_{n}.py"]
    if n == 1:
        rows.append(FACT)
    for i in range(lines):
        rows.append(f"def handler_{n}_{i}(order, amount):  return ledger.post(order.id, amount * {i + 1}, tag='m{n}-{i}')")
    return "\n".join(rows)


def hermes_session(rounds: int = 14):
    """A hermes-format (OpenAI chat) history: an instruction, then rounds of tool calls with large
    results (one round with two parallel calls), then the latest request. No system prompt: hermes
    keeps that outside the persisted history and adds it to each request."""
    history = [{"role": "user", "content": INSTRUCTION}]
    for r in range(1, rounds + 1):
        if r == 3:
            calls = [
                {"id": f"call_{r}_a", "type": "function", "function": {"name": "read_file", "arguments": json.dumps({"path": f"payments/module_{r}.py"})}},
                {"id": f"call_{r}_b", "type": "function", "function": {"name": "read_file", "arguments": json.dumps({"path": f"payments/module_{r}b.py"})}},
            ]
            history.append({"role": "assistant", "content": "Reading two modules at once.", "tool_calls": calls})
            history.append({"role": "tool", "tool_call_id": f"call_{r}_a", "content": _file_body(r)})
            history.append({"role": "tool", "tool_call_id": f"call_{r}_b", "content": _file_body(r + 100)})
        else:
            call = {"id": f"call_{r}", "type": "function", "function": {"name": "read_file", "arguments": json.dumps({"path": f"payments/module_{r}.py"})}}
            history.append({"role": "assistant", "content": "", "tool_calls": [call]})
            history.append({"role": "tool", "tool_call_id": f"call_{r}", "content": _file_body(r)})
        history.append({"role": "assistant", "content": f"module_{r} posts through ledger.post; refunds can reuse handler_{r}_0."})
    history.append({"role": "user", "content": "Now apply the refund change to module_14 and tell me what you changed."})
    return history


def request_of(history):
    return [{"role": "system", "content": SYSTEM}] + [dict(m) for m in history]
