"""The contextd engine loaded the way hermes loads user engines, driven against the real daemon."""

import json
import logging
import os
import re
import socket
import sys
import threading
import unittest
from pathlib import Path

from support import FACT, INSTRUCTION, SYSTEM, Daemon, TempDir, hermes_session, request_of, require_cli, restore_env, run_cli

import hermes_loader
from agent.context_engine import ContextEngine

BUDGET = 6000
RESERVE = 0.15


def texts(messages):
    return "\n".join(m["content"] for m in messages if isinstance(m.get("content"), str))


def last_user(messages):
    return next(m for m in reversed(messages) if m["role"] == "user")


class EngineAgainstTheDaemon(unittest.TestCase):
    @classmethod
    def setUpClass(cls):
        require_cli(cls)
        cls.tmp = TempDir()
        cls.daemon = Daemon(cls.tmp.path)
        cls.home = cls.tmp.path / "hermes"
        r = run_cli("install", "hermes", "--hermes-home", str(cls.home))
        assert r.returncode == 0, r.stderr
        assert "context.engine: contextd" in r.stdout, r.stdout
        cls.saved_socket = os.environ.get("CONTEXTD_SOCKET")
        os.environ["CONTEXTD_SOCKET"] = cls.daemon.socket
        # These tests check behaviour, not latency: a loaded CI machine may take longer than the
        # engine's 2 s default to answer, and a timed-out engine falls back to no client.
        cls.saved_timeout = os.environ.get("CONTEXTD_HERMES_TIMEOUT")
        os.environ["CONTEXTD_HERMES_TIMEOUT"] = "20"

    @classmethod
    def tearDownClass(cls):
        restore_env("CONTEXTD_SOCKET", cls.saved_socket)
        restore_env("CONTEXTD_HERMES_TIMEOUT", cls.saved_timeout)
        cls.daemon.stop()
        cls.tmp.cleanup()

    def engine(self):
        engine = hermes_loader.find_user_engine(self.home, "contextd")
        self.assertIsNotNone(engine, "hermes' loader found no engine in plugins/contextd")
        return engine

    def plan_module(self, engine):
        return sys.modules[type(engine).__module__.rsplit(".", 1)[0] + ".plan"]

    def daemon_tokens(self, engine, messages):
        """The daemon's own count of a list, through a throwaway session."""
        client = engine._daemon()
        res = client.sync(f"probe-{id(messages)}", messages, BUDGET)
        return res["headroom"]["tokens"]

    def test_loads_through_hermes_conventions(self):
        plugin = self.home / "plugins" / "contextd"
        self.assertTrue(hermes_loader.is_context_engine_dir(plugin))
        yaml = (plugin / "plugin.yaml").read_text()
        for field in ("name: contextd", "description:", "version:", "author:"):
            self.assertIn(field, yaml)
        by_register = hermes_loader.load_engine(plugin, use_register=True)
        by_subclass = hermes_loader.load_engine(plugin, use_register=False)
        for engine in (by_register, by_subclass):
            self.assertIsInstance(engine, ContextEngine)
            self.assertEqual(engine.name, "contextd")
        self.assertEqual([t["name"] for t in by_register.get_tool_schemas()], ["contextd_recall", "contextd_search"])
        self.assertTrue(by_register.is_available())

    def test_install_and_uninstall(self):
        home = self.tmp.path / "other-home"
        r = run_cli("install", "hermes", "--json", env={"HERMES_HOME": str(home)})
        self.assertEqual(r.returncode, 0, r.stderr)
        info = json.loads(r.stdout)
        self.assertEqual(info["configLine"], "context.engine: contextd")
        self.assertEqual(sorted(info["files"]), ["__init__.py", "client.py", "engine.py", "plan.py", "plugin.yaml"])
        self.assertTrue((home / "plugins" / "contextd" / "engine.py").exists())
        r = run_cli("uninstall", "hermes", "--hermes-home", str(home))
        self.assertEqual(r.returncode, 0, r.stderr)
        self.assertFalse((home / "plugins" / "contextd").exists())
        foreign = home / "plugins" / "contextd"
        foreign.mkdir(parents=True)
        (foreign / "plugin.yaml").write_text("name: someone-else\n")
        r = run_cli("install", "hermes", "--hermes-home", str(home))
        self.assertEqual(r.returncode, 2, r.stdout)
        self.assertIn("another plugin", r.stderr)
        self.assertEqual(run_cli("install", "vim").returncode, 2)

    def test_a_session_stays_within_budget_with_valid_pairs_and_its_instructions(self):
        engine = self.engine()
        plan = self.plan_module(engine)
        engine.update_model("test-model", BUDGET)
        self.assertEqual(engine.context_length, BUDGET)
        sid = "20260105_090000_abcdef"
        engine.on_session_start(sid, hermes_home=str(self.home), platform="cli", model="test-model")
        history = hermes_session()
        original_tool_texts = {m["content"] for m in history if m["role"] == "tool"}

        # Requests as the session grows: select_context may replace each one, never breaking it.
        cuts = [i + 1 for i, m in enumerate(history) if m["role"] == "assistant" and not m.get("tool_calls")]
        for cut in cuts[::3] + [len(history)]:
            hist = history[:cut]
            req = request_of(hist)
            selected = engine.select_context(req, conversation_messages=hist, incoming_message=last_user(hist), budget_tokens=BUDGET)
            final = selected if selected is not None else req
            self.assertEqual(plan.tool_pair_problems(final), [], f"select_context broke tool pairs at cut {cut}")
            self.assertEqual(final[0], {"role": "system", "content": SYSTEM})
            self.assertTrue(INSTRUCTION in texts(final), "the user's instruction is missing")
            self.assertEqual(last_user(final)["content"], last_user(hist)["content"])
            engine.update_from_response({"prompt_tokens": plan.estimate_tokens(final), "completion_tokens": 40, "total_tokens": plan.estimate_tokens(final) + 40})
        self.assertGreater(engine.last_prompt_tokens, 0)
        # The whole session is far over the window: contextd's zones say compress.
        self.assertGreater(self.daemon_tokens(engine, request_of(history)), BUDGET)
        self.assertTrue(engine.should_compress(engine.last_prompt_tokens) or engine.should_compress(BUDGET))
        self.assertTrue(engine.should_compress(BUDGET))
        self.assertFalse(engine.should_compress(BUDGET // 10) and engine._daemon_zone != "reserve")

        compressed = engine.compress(history, current_tokens=engine.last_prompt_tokens)
        self.assertEqual(engine.last_outcome.get("via"), "contextd", engine.last_outcome)
        # contextd's plans alone reached the budget (applied now, or acked by earlier select_context calls).
        self.assertNotIn("fallbackDropped", engine.last_outcome)
        self.assertTrue(engine.last_outcome.get("applied") or len(engine._overlay) > 0, engine.last_outcome)
        self.assertEqual(engine.compression_count, 1)
        self.assertEqual(plan.tool_pair_problems(compressed), [])
        self.assertTrue(INSTRUCTION in texts(compressed), "compress dropped the user's instruction")
        self.assertEqual(compressed[-1], history[-1])
        self.assertLessEqual(self.daemon_tokens(engine, request_of(compressed)), BUDGET)
        self.assertLessEqual(self.daemon_tokens(engine, compressed), int(BUDGET * (1 - RESERVE)))
        self.assertNotIn("see above", texts(compressed).lower())

        handles = re.findall(r"\[contextd recall (h_[0-9a-f]+)\]", texts(compressed))
        self.assertTrue(handles, "summaries quote recall handles")
        recalled = json.loads(engine.handle_tool_call("contextd_recall", {"handle": handles[0]}))
        self.assertNotIn("error", recalled, recalled)
        self.assertTrue(recalled["messages"])
        joined = "\n".join(m["content"] for m in recalled["messages"])
        self.assertTrue(any(t in joined for t in original_tool_texts) or any(m["content"] and m["content"] in joined for m in history))
        # A handle quoted the way summaries quote it works too.
        again = json.loads(engine.handle_tool_call("contextd_recall", {"handle": f"[contextd recall {handles[0]}]"}))
        self.assertEqual(again["messages"], recalled["messages"])
        self.assertIn("error", json.loads(engine.handle_tool_call("contextd_recall", {"handle": "h_0000000000000000"})))

        # The fact's original tool output left the context; search finds it by what it is about.
        fact_output = next(m["content"] for m in history if m["role"] == "tool" and FACT in m["content"])
        self.assertFalse(fact_output in texts(compressed), 'the fact output was not compacted')
        found = json.loads(engine.handle_tool_call("contextd_search", {"query": "rounding tolerance agreed with finance (LEDGER_EPSILON)?"}))
        self.assertNotIn("error", found, found)
        self.assertTrue(any(FACT in m["content"] for h in found["hits"] for m in h["messages"]), found)
        self.assertTrue(all(h["handle"].startswith("h_") for h in found["hits"]))

        # Later requests start from the compressed history and stay valid.
        later = compressed + [{"role": "assistant", "content": "Done; pytest passes."}, {"role": "user", "content": "Thanks. Anything left?"}]
        sel = engine.select_context(request_of(later), conversation_messages=later, incoming_message=later[-1], budget_tokens=BUDGET)
        final = sel if sel is not None else request_of(later)
        self.assertEqual(plan.tool_pair_problems(final), [])
        self.assertTrue(INSTRUCTION in texts(final), "the user's instruction is missing")
        self.assertEqual(json.loads(engine.handle_tool_call("nope", {})).get("error"), "Unknown context engine tool: nope")
        engine.on_session_end(sid, later)


class _SilentServer:
    """A socket that accepts and reads but never answers: a hung daemon."""

    def __init__(self, path):
        self.sock = socket.socket(socket.AF_UNIX, socket.SOCK_STREAM)
        self.sock.bind(path)
        self.sock.listen(8)
        self.conns = []
        self.thread = threading.Thread(target=self._run, daemon=True)
        self.thread.start()

    def _run(self):
        while True:
            try:
                conn, _ = self.sock.accept()
            except OSError:
                return
            self.conns.append(conn)

    def close(self):
        for c in self.conns:
            c.close()
        self.sock.close()


class WithoutTheDaemon(unittest.TestCase):
    """Daemon down or hung: the agent keeps working, nothing is raised, one warning is logged."""

    def setUp(self):
        self.tmp = TempDir()
        home = self.tmp.path / "hermes"
        plugin = home / "plugins" / "contextd"
        plugin.mkdir(parents=True)
        from support import PLUGIN_SRC
        for f in PLUGIN_SRC.iterdir():
            if f.suffix == ".py" or f.name == "plugin.yaml":
                (plugin / f.name).write_bytes(f.read_bytes())
        self.home = home
        self.saved = os.environ.get("CONTEXTD_SOCKET")

    def tearDown(self):
        restore_env("CONTEXTD_SOCKET", self.saved)
        self.tmp.cleanup()

    def drive(self, engine):
        plan = sys.modules[type(engine).__module__.rsplit(".", 1)[0] + ".plan"]
        engine.update_model("m", BUDGET)
        engine.on_session_start("s-down", hermes_home=str(self.home))
        history = hermes_session()
        req = request_of(history)
        self.assertIsNone(engine.select_context(req, conversation_messages=history, incoming_message=history[-1], budget_tokens=BUDGET))
        out = engine.compress(history)
        self.assertEqual(engine.last_outcome.get("via"), "fallback")
        self.assertEqual(plan.tool_pair_problems(out), [])
        self.assertTrue(INSTRUCTION in texts(out), "the fallback dropped the user's instruction")
        self.assertEqual(out[-1], history[-1])
        self.assertLessEqual(plan.estimate_tokens(out), int(BUDGET * (1 - RESERVE)))
        self.assertIn("error", json.loads(engine.handle_tool_call("contextd_recall", {"handle": "h_1"})))
        self.assertIn("error", json.loads(engine.handle_tool_call("contextd_search", {"query": "ledger"})))
        engine.on_session_end("s-down", out)
        return out

    def test_daemon_down_never_raises_and_logs_once(self):
        os.environ["CONTEXTD_SOCKET"] = str(self.tmp.path / "nobody-listens.sock")
        engine = hermes_loader.find_user_engine(self.home, "contextd")
        self.assertFalse(engine.is_available())
        with self.assertLogs("contextd.hermes", level="WARNING") as logs:
            self.drive(engine)
        self.assertEqual(len([r for r in logs.records if r.levelno >= logging.WARNING]), 1, logs.output)

    def test_daemon_hung_times_out_and_never_raises(self):
        path = str(self.tmp.path / "hung.sock")
        server = _SilentServer(path)
        try:
            os.environ["CONTEXTD_SOCKET"] = path
            os.environ["CONTEXTD_HERMES_TIMEOUT"] = "0.2"
            engine = hermes_loader.find_user_engine(self.home, "contextd")
            with self.assertLogs("contextd.hermes", level="WARNING") as logs:
                self.drive(engine)
            self.assertIn("did not answer", "\n".join(logs.output))
        finally:
            os.environ.pop("CONTEXTD_HERMES_TIMEOUT", None)
            server.close()


if __name__ == "__main__":
    unittest.main()
