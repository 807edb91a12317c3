"""Applying contextd plans to an OpenAI-format message list. Pure: no socket, no hermes.

A plan's edits name inclusive ``messageRange``s of the list the daemon was handed by
``session.sync``; each range is replaced by the edit's summary message (which quotes its recall
handle). An edit is applied only when the result stays a valid request:

- ranges do not overlap and lie inside the list;
- no protected message is replaced (system prompts, the latest user message);
- tool pairs stay whole: every tool result in the range has its call in the range, and no
  call in the range has a result outside it.
"""

from __future__ import annotations

import json
from dataclasses import dataclass, field
from typing import Any, Dict, List, Optional, Sequence, Set, Tuple

Message = Dict[str, Any]

#: Rough characters per token, for the fallback when the daemon cannot count.
CHARS_PER_TOKEN = 3.5
#: Per-message overhead of the chat format, in tokens (role, separators).
MESSAGE_OVERHEAD_TOKENS = 4


def fingerprint(message: Message) -> str:
    """A stable key of what a message says (role, content, tool calls, tool call id, name)."""
    return json.dumps(
        [message.get("role"), message.get("content"), message.get("tool_calls"), message.get("tool_call_id"), message.get("name")],
        sort_keys=True,
        ensure_ascii=False,
        default=str,
    )


def call_ids(message: Message) -> List[str]:
    """Ids of the tool calls an assistant message makes."""
    out = []
    for call in message.get("tool_calls") or []:
        if isinstance(call, dict):
            cid = call.get("id") or call.get("call_id")
            if isinstance(cid, str):
                out.append(cid)
    return out


def tool_pair_problems(messages: Sequence[Message]) -> List[str]:
    """What breaks the OpenAI tool-pair rule: results without an earlier call, calls never answered."""
    problems = []
    called: Set[str] = set()
    answered: Set[str] = set()
    for i, m in enumerate(messages):
        if m.get("role") == "assistant":
            called.update(call_ids(m))
        elif m.get("role") == "tool":
            cid = m.get("tool_call_id")
            if cid not in called:
                problems.append(f"message {i}: tool result {cid!r} has no earlier call")
            answered.add(cid)
    for cid in sorted(called - answered):
        problems.append(f"tool call {cid!r} has no result")
    return problems


def protected_indexes(messages: Sequence[Message]) -> Set[int]:
    """System prompts and the latest user message (the current request) are never replaced."""
    out = {i for i, m in enumerate(messages) if m.get("role") in ("system", "developer")}
    for i in range(len(messages) - 1, -1, -1):
        if messages[i].get("role") == "user":
            out.add(i)
            break
    return out


def estimate_tokens(messages: Sequence[Message]) -> int:
    """A rough token count (characters / 3.5 plus a per-message overhead)."""
    total = 0
    for m in messages:
        content = m.get("content")
        text = content if isinstance(content, str) else json.dumps(content, ensure_ascii=False, default=str) if content is not None else ""
        calls = json.dumps(m.get("tool_calls"), ensure_ascii=False, default=str) if m.get("tool_calls") else ""
        total += int((len(text) + len(calls)) / CHARS_PER_TOKEN) + MESSAGE_OVERHEAD_TOKENS
    return total


@dataclass
class Applied:
    """The outcome of applying one plan."""

    messages: List[Message]
    applied: List[str] = field(default_factory=list)
    skipped: List[Tuple[str, str]] = field(default_factory=list)
    #: (fingerprints of the replaced messages, the summary message) per applied edit.
    replacements: List[Tuple[Tuple[str, ...], Message]] = field(default_factory=list)


def _range_problem(messages: Sequence[Message], start: int, end: int, protected: Set[int]) -> Optional[str]:
    if start < 0 or end < start or end >= len(messages):
        return f"range {start}..{end} is outside the {len(messages)} messages"
    hit = sorted(i for i in protected if start <= i <= end)
    if hit:
        return f"range {start}..{end} covers protected message {hit[0]}"
    inside_calls: Set[str] = set()
    for m in messages[start : end + 1]:
        if m.get("role") == "assistant":
            inside_calls.update(call_ids(m))
    for i in range(start, end + 1):
        m = messages[i]
        if m.get("role") == "tool" and m.get("tool_call_id") not in inside_calls:
            return f"range {start}..{end} would orphan the call of tool result {i}"
    for i, m in enumerate(messages):
        if (i < start or i > end) and m.get("role") == "tool" and m.get("tool_call_id") in inside_calls:
            return f"range {start}..{end} would orphan tool result {i}"
    return None


def apply_plan(messages: Sequence[Message], plan: Dict[str, Any], protected: Optional[Set[int]] = None) -> Applied:
    """Replace each acceptable edit's range by its summary; report what was skipped and why."""
    protected = protected_indexes(messages) if protected is None else protected
    edits = sorted(plan.get("edits") or [], key=lambda e: int((e.get("messageRange") or {}).get("start", -1)))
    chosen: List[Tuple[int, int, Dict[str, Any]]] = []
    last_end = -1
    result = Applied(messages=list(messages))
    for e in edits:
        rng = e.get("messageRange") or {}
        start, end = int(rng.get("start", -1)), int(rng.get("end", -1))
        summary = e.get("summary") or {}
        problem = _range_problem(messages, start, end, protected)
        if problem is None and start <= last_end:
            problem = f"range {start}..{end} overlaps an earlier edit"
        if problem is None and not isinstance(summary.get("content"), str):
            problem = "the edit has no summary text"
        if problem is not None:
            result.skipped.append((str(e.get("editId")), problem))
            continue
        chosen.append((start, end, e))
        last_end = end
    out: List[Message] = []
    cursor = 0
    for start, end, e in chosen:
        out.extend(messages[cursor:start])
        role = e["summary"].get("role")
        summary_msg: Message = {"role": role if role in ("user", "assistant", "system") else "user", "content": e["summary"]["content"]}
        out.append(summary_msg)
        result.replacements.append((tuple(fingerprint(m) for m in messages[start : end + 1]), summary_msg))
        result.applied.append(str(e.get("editId")))
        cursor = end + 1
    out.extend(messages[cursor:])
    result.messages = out
    return result


class Overlay:
    """Edits acked for this session, re-applied to each new request list.

    ``select_context`` returns a request-only list: hermes keeps its full history, so the next
    request brings the replaced messages back. The overlay finds each replaced run again (by
    fingerprint) and puts the same summary in its place, so the daemon sees the list it agreed to.
    """

    def __init__(self) -> None:
        self._entries: List[Tuple[Tuple[str, ...], Message]] = []
        self.summary_keys: Set[str] = set()

    def __len__(self) -> int:
        return len(self._entries)

    def add(self, replacements: Sequence[Tuple[Tuple[str, ...], Message]]) -> None:
        for keys, summary in replacements:
            self._entries.append((keys, summary))
            self.summary_keys.add(fingerprint(summary))

    def clear(self) -> None:
        self._entries.clear()
        self.summary_keys.clear()

    def is_summary(self, message: Message) -> bool:
        content = message.get("content")
        # Every summary quotes its recall handle: only those are worth fingerprinting.
        if not self.summary_keys or not isinstance(content, str) or "[contextd recall " not in content:
            return False
        return fingerprint(message) in self.summary_keys

    def apply(self, messages: Sequence[Message]) -> List[Message]:
        out = list(messages)
        if not self._entries:
            return out
        prints = [fingerprint(m) for m in out]
        for keys, summary in self._entries:
            n = len(keys)
            if n == 0 or n > len(out):
                continue
            for i in range(len(out) - n + 1):
                if prints[i] == keys[0] and tuple(prints[i : i + n]) == keys:
                    out[i : i + n] = [dict(summary)]
                    prints[i : i + n] = [fingerprint(summary)]
                    break
        return out


def plain_fallback(messages: Sequence[Message], budget_tokens: int) -> Tuple[List[Message], int]:
    """Without the daemon: drop the oldest messages (a tool call with its results as one group;
    never a system prompt, the first or the latest user message) until the rough count fits
    ``budget_tokens``; a note says how many were left out.
    Returns the list and the number of messages dropped (0: returned unchanged)."""
    if budget_tokens <= 0 or estimate_tokens(messages) <= budget_tokens:
        return list(messages), 0
    protected = protected_indexes(messages)
    # The plain trim cannot tell instructions from chat: it keeps the first user message too.
    first_user = next((i for i, m in enumerate(messages) if m.get("role") == "user"), None)
    if first_user is not None:
        protected.add(first_user)
    groups: List[List[int]] = []
    owner: Dict[str, int] = {}
    for i, m in enumerate(messages):
        if m.get("role") == "tool" and m.get("tool_call_id") in owner:
            groups[owner[m["tool_call_id"]]].append(i)
            continue
        groups.append([i])
        for cid in call_ids(m):
            owner[cid] = len(groups) - 1
    dropped: Set[int] = set()
    note: Message = {"role": "user", "content": ""}

    def current() -> List[Message]:
        kept = [m for i, m in enumerate(messages) if i not in dropped]
        if dropped:
            note["content"] = f"[contextd: {len(dropped)} earlier messages were left out of this request to fit the context window]"
            first_free = next((k for k, m in enumerate(kept) if m.get("role") not in ("system", "developer")), len(kept))
            kept.insert(first_free, note)
        return kept

    # Keep the tail: drop from the oldest group forward, never a protected group.
    for g in groups:
        if estimate_tokens(current()) <= budget_tokens:
            break
        if any(i in protected for i in g):
            continue
        dropped.update(g)
    return current(), len(dropped)
