"""The stdlib client: socket discovery like the TypeScript client, and refusals as typed errors."""

import importlib.util
import os
import sys
import tempfile
import unittest
from pathlib import Path

from support import PLUGIN_SRC, Daemon, TempDir, require_cli

spec = importlib.util.spec_from_file_location("contextd_client_under_test", PLUGIN_SRC / "client.py")
client = importlib.util.module_from_spec(spec)
sys.modules[spec.name] = client
spec.loader.exec_module(client)


class Discovery(unittest.TestCase):
    def test_order_matches_the_typescript_client(self):
        env = {"CONTEXTD_SOCKET": "/x/y.sock", "XDG_RUNTIME_DIR": "/run/user/7"}
        paths = client.candidate_socket_paths(env)
        self.assertEqual(paths[:3], ["/x/y.sock", "/run/user/7/contextd.sock", "/run/user/7/contextd/contextd.sock"])
        self.assertEqual(paths[3], os.path.join(tempfile.gettempdir(), f"contextd-{os.getuid()}", "contextd.sock"))
        self.assertEqual(client.candidate_socket_paths({})[0], paths[3])

    def test_first_existing_wins(self):
        with tempfile.TemporaryDirectory() as d:
            Path(d, "contextd").mkdir()
            Path(d, "contextd", "contextd.sock").touch()
            self.assertEqual(client.find_socket_path({"XDG_RUNTIME_DIR": d}), os.path.join(d, "contextd", "contextd.sock"))

    def test_unreachable_is_a_typed_error(self):
        c = client.ContextdClient("/nonexistent/contextd.sock", timeout=0.5)
        with self.assertRaises(client.ContextdUnavailable):
            c.status()


class AgainstTheDaemon(unittest.TestCase):
    def setUp(self):
        require_cli(self)
        self.tmp = TempDir()
        self.daemon = Daemon(self.tmp.path)

    def tearDown(self):
        self.daemon.stop()
        self.tmp.cleanup()

    def test_requests_refusals_and_notifications(self):
        with client.ContextdClient(self.daemon.socket, timeout=5) as c:
            self.assertEqual(c.server["protocolVersion"], client.PROTOCOL_VERSION)
            msgs = [{"role": "user", "content": "hello"}]
            res = c.sync("py-1", msgs, 32000)
            self.assertEqual((res["sessionId"], res["zone"], res["messages"]), ("py-1", "ok", 1))
            self.assertEqual(c.headroom("py-1")["total"], 32000)
            with self.assertRaises(client.ContextdRpcError) as err:
                c.headroom("no-such-session")
            self.assertEqual(err.exception.code, client.UNKNOWN_SESSION)
            with self.assertRaises(client.ContextdRpcError) as bad:
                c.sync("py-1", [{"role": "session_meta"}])
            self.assertEqual(bad.exception.code, -32602)
            self.assertIn("messages.0.role", bad.exception.message)
            self.assertEqual(c.search("anything at all")["hits"], [])
            # Past the soft watermark the daemon plans on its own and pushes the plan.
            long = [{"role": "user", "content": "summarize the logs; never delete them"}] + [
                m for k in range(30) for m in (
                    {"role": "assistant", "content": "", "tool_calls": [{"id": f"c{k}", "type": "function", "function": {"name": "cat", "arguments": "{}"}}]},
                    {"role": "tool", "tool_call_id": f"c{k}", "content": f"log line {k} " * 80},
                )
            ] + [{"role": "user", "content": "and now?"}]
            c.sync("py-2", long, 8000)
            notes = c.poll_notifications(wait=5.0)
            proposed = [p for m, p in notes if m == "compaction.proposed" and p["sessionId"] == "py-2"]
            self.assertTrue(proposed, notes)
            self.assertTrue(all("messageRange" in e and "[contextd recall" in e["summary"]["content"] for e in proposed[-1]["edits"]))
            self.assertEqual(c.ack(proposed[-1]["planId"], False, reason="test declines")["ok"], True)


if __name__ == "__main__":
    unittest.main()
