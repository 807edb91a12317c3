"""Plan application, the overlay and the plain fallback, without a daemon (pure functions)."""

import importlib.util
import sys
import unittest

from support import PLUGIN_SRC

spec = importlib.util.spec_from_file_location("contextd_plan_under_test", PLUGIN_SRC / "plan.py")
plan = importlib.util.module_from_spec(spec)
sys.modules[spec.name] = plan
spec.loader.exec_module(plan)


def call(cid):
    return {"id": cid, "type": "function", "function": {"name": "read_file", "arguments": "{}"}}


MSGS = [
    {"role": "system", "content": "sys"},
    {"role": "user", "content": "do the thing; never touch prod"},
    {"role": "assistant", "content": "", "tool_calls": [call("a"), call("b")]},
    {"role": "tool", "tool_call_id": "a", "content": "A" * 400},
    {"role": "tool", "tool_call_id": "b", "content": "B" * 400},
    {"role": "assistant", "content": "read both"},
    {"role": "user", "content": "now finish"},
]


def edit(eid, start, end, text="[summary] [contextd recall h_1]"):
    return {"editId": eid, "messageRange": {"start": start, "end": end}, "summary": {"role": "assistant", "content": text}}


class ApplyPlan(unittest.TestCase):
    def test_applies_a_whole_tool_group_and_keeps_pairs(self):
        r = plan.apply_plan(MSGS, {"planId": "p", "edits": [edit("e1", 2, 4)]})
        self.assertEqual(r.applied, ["e1"])
        self.assertEqual(len(r.messages), 5)
        self.assertEqual(r.messages[2]["content"], "[summary] [contextd recall h_1]")
        self.assertEqual(plan.tool_pair_problems(r.messages), [])

    def test_skips_edits_that_would_orphan_a_call_or_result(self):
        r = plan.apply_plan(MSGS, {"planId": "p", "edits": [edit("half", 2, 3), edit("result", 4, 4)]})
        self.assertEqual(r.applied, [])
        self.assertEqual([eid for eid, _ in r.skipped], ["half", "result"])
        self.assertIn("orphan", r.skipped[0][1])
        self.assertEqual(r.messages, MSGS)

    def test_never_replaces_the_system_prompt_or_the_latest_request(self):
        r = plan.apply_plan(MSGS, {"planId": "p", "edits": [edit("sys", 0, 1), edit("last", 5, 6)]})
        self.assertEqual(r.applied, [])
        self.assertTrue(all("protected" in why for _, why in r.skipped))

    def test_skips_overlaps_and_out_of_range(self):
        r = plan.apply_plan(MSGS, {"planId": "p", "edits": [edit("a", 2, 4), edit("b", 4, 5), edit("c", 9, 12)]})
        self.assertEqual(r.applied, ["a"])
        self.assertEqual(sorted(eid for eid, _ in r.skipped), ["b", "c"])

    def test_overlay_puts_acked_summaries_back_into_a_longer_list(self):
        r = plan.apply_plan(MSGS, {"planId": "p", "edits": [edit("e1", 2, 4)]})
        overlay = plan.Overlay()
        overlay.add(r.replacements)
        longer = MSGS + [{"role": "assistant", "content": "done"}]
        again = overlay.apply(longer)
        self.assertEqual(again[:-1], r.messages)
        self.assertTrue(overlay.is_summary(again[2]))
        self.assertEqual(overlay.apply(r.messages), r.messages)  # nothing left to replace

    def test_plain_fallback_fits_keeps_pairs_and_both_user_messages(self):
        big = [MSGS[0], MSGS[1]] + [m for k in range(10) for m in (
            {"role": "assistant", "content": "", "tool_calls": [call(f"c{k}")]},
            {"role": "tool", "tool_call_id": f"c{k}", "content": "x" * 700},
        )] + [MSGS[-1]]
        out, dropped = plan.plain_fallback(big, 600)
        self.assertGreater(dropped, 0)
        self.assertLessEqual(plan.estimate_tokens(out), 600)
        self.assertEqual(plan.tool_pair_problems(out), [])
        self.assertEqual(out[0], MSGS[0])
        self.assertIn(MSGS[1], out)
        self.assertEqual(out[-1], MSGS[-1])
        self.assertIn("left out", out[1]["content"])
        same, none = plan.plain_fallback(MSGS, 100_000)
        self.assertEqual((same, none), (MSGS, 0))


if __name__ == "__main__":
    unittest.main()
