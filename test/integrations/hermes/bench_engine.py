"""Per-call overhead of the contextd hermes engine with the daemon up (stdlib only; prints JSON).

    npm run build && python3 test/integrations/hermes/bench_engine.py [--rounds 40] [--iterations 200]

Spawns `contextd daemon` on a private socket, loads the engine the way hermes does (test double of
hermes' loader, see hermes_loader.py) and times:
- select_context on a growing session, one message appended per call, with the window large
  enough that no plan is needed (the steady per-request cost: sync + overlay);
- select_context at a small window, where plans are applied and acked as the session grows;
- compress of the whole history at a small window, a fresh session each call (plan + apply + ack).
"""

import argparse
import json
import os
import statistics
import sys
import time

sys.path.insert(0, os.path.dirname(os.path.abspath(__file__)))

from support import CLI, Daemon, TempDir, hermes_session, request_of, run_cli  # noqa: E402

import hermes_loader  # noqa: E402


def pct(values, p):
    values = sorted(values)
    k = max(0, min(len(values) - 1, int(round(p / 100 * (len(values) - 1)))))
    return values[k]


def summary(ms):
    return {"calls": len(ms), "p50_ms": round(pct(ms, 50), 2), "p99_ms": round(pct(ms, 99), 2), "mean_ms": round(statistics.fmean(ms), 2), "max_ms": round(max(ms), 2)}


def main():
    ap = argparse.ArgumentParser()
    ap.add_argument("--rounds", type=int, default=40)
    ap.add_argument("--iterations", type=int, default=200)
    ap.add_argument("--compress-iterations", type=int, default=30)
    ap.add_argument("--small-window", type=int, default=8000)
    args = ap.parse_args()
    if not CLI.exists():
        sys.exit(f"{CLI} is missing: run `npm run build` first")
    tmp = TempDir()
    daemon = Daemon(tmp.path)
    try:
        home = tmp.path / "hermes"
        r = run_cli("install", "hermes", "--hermes-home", str(home))
        assert r.returncode == 0, r.stderr
        os.environ["CONTEXTD_SOCKET"] = daemon.socket
        history = hermes_session(args.rounds)
        out = {"rounds": args.rounds, "messages": len(history)}

        def grow(engine, window, sid):
            engine.update_model("bench", window)
            engine.on_session_start(sid, hermes_home=str(home))
            times = []
            base = history[: len(history) - args.iterations] if len(history) > args.iterations else history[:2]
            hist = list(base)
            extra = 0
            for i in range(args.iterations):
                msg = history[len(hist)] if len(hist) < len(history) else {"role": "assistant", "content": f"note {extra}: still working on the refund path."}
                extra += 1
                hist.append(msg)
                if msg.get("tool_calls"):
                    continue  # a request never ends on an unanswered call
                req = request_of(hist)
                t0 = time.perf_counter()
                engine.select_context(req, conversation_messages=hist, incoming_message=None, budget_tokens=window)
                times.append((time.perf_counter() - t0) * 1000)
            engine.on_session_end(sid, hist)
            return times

        engine = hermes_loader.find_user_engine(home, "contextd")
        out["select_context_no_plan"] = summary(grow(engine, 1_000_000, "bench-large"))
        out["select_context_planning"] = summary(grow(engine, args.small_window, "bench-small"))
        comp = []
        for i in range(args.compress_iterations):
            engine.update_model("bench", args.small_window)
            engine.on_session_start(f"bench-compress-{i}", hermes_home=str(home))
            t0 = time.perf_counter()
            engine.compress(history)
            comp.append((time.perf_counter() - t0) * 1000)
            assert engine.last_outcome.get("via") == "contextd", engine.last_outcome
        out["compress"] = summary(comp)
        out["window_small"] = args.small_window
        print(json.dumps(out, indent=2))
    finally:
        daemon.stop()
        tmp.cleanup()


if __name__ == "__main__":
    main()
