"""Questions about the conversation itself, answered only from what the model sees (issue 41, stage 4): the original goal (a visible summary's goal
line, else the first visible request when nothing fell out of the window, else "I don't know"), the last tool call, the previous request, how full
the window is, the offload stubs, the archive files named, the tools called, and help. Replies: ``session.toml`` [say]."""

from __future__ import annotations

import re
from collections import Counter, namedtuple

from langchain_core.messages import AIMessage, HumanMessage, SystemMessage, ToolMessage

from flawedcode.formats import ARCHIVE_LINE, COMPACTED_PREFIX, GOAL_LINE, STUB_PREFIX, SUMMARY_PREFIX
from flawedcode.models.teaching.summary import SAY, call_text, goal_in, is_summary

ARCHIVE_FILE = re.compile(r"archives/[\w./-]+?\.(?:jsonl|md)")
Seen = namedtuple("Seen", "earlier system truncated input_tokens window_tokens example", defaults=((), False, 0, 0, "money_markets/sofr"))
"""What the model sees before the question: the messages, its leading data, whether older ones fell out, its input and window."""


def answer(kind: str, seen: Seen) -> str:
    """The reply to a question of ``kind`` (goal, last_action, previous_request, context_window, offloaded, archived, tool_calls, help)."""
    count, earlier = len(seen.earlier) + 1, seen.earlier
    summaries = sum(isinstance(m, HumanMessage) and is_summary(m.text) for m in earlier)  # the agent's summaries and turn digests in view
    told = SAY["seen"].format(count=count, s="s" * (count > 1), cut=SAY["seen_cut" if seen.truncated else "seen_summarized" if summaries else
                                                                         "seen_whole"].format(summaries=summaries))
    requests = [m.text.strip() for m in earlier if isinstance(m, HumanMessage) and not is_summary(m.text)]
    calls = [call for m in earlier if isinstance(m, AIMessage) for call in m.tool_calls]
    if kind == "goal":
        for message in [*reversed(earlier), *seen.system]:
            kept = is_summary(message.text) or isinstance(message, SystemMessage) and GOAL_LINE in message.text
            if kept and isinstance(message, (HumanMessage, SystemMessage)) and (found := goal_in(message.text)):
                return SAY["goal_from_summary"].format(goal=found)
        return SAY["goal_cut"] if seen.truncated else SAY["goal_from_first"].format(goal=requests[0]) if requests else SAY["goal_none"]
    if kind == "last_action":
        if not calls:
            return SAY["no_tool_call"]  # else the last call, and the first line of its result
        result = next((m.text for m in earlier if isinstance(m, ToolMessage) and m.tool_call_id == calls[-1].get("id")), None)
        said = "" if result is None else f"; it returned: {next((line for line in result.splitlines() if line.strip()), '(empty)')[:300]}"
        return SAY["last_action"].format(call=call_text(calls[-1]["name"], calls[-1]["args"]), result=said)
    if kind == "previous_request":
        where = "it fell out of my window" if seen.truncated else "this is the first request I can see"  # or the request before, word for word
        return SAY["previous"].format(request=requests[-1], seen=told) if requests else SAY["no_previous"].format(where=where, seen=told)
    if kind == "context_window":
        used = seen.input_tokens / seen.window_tokens if seen.window_tokens else 0.0
        return SAY["context_window"].format(tokens=seen.input_tokens, window=seen.window_tokens, used=used, seen=told)
    if kind == "offloaded":
        stubs = [m.text.strip().splitlines()[0] for m in earlier if isinstance(m, ToolMessage) and m.text.lstrip().startswith(STUB_PREFIX)]
        named = [p for m in earlier if isinstance(m, HumanMessage) and is_summary(m.text) for p in re.findall(r"scratch/[\w./-]+\w", m.text)]
        listed = "\n".join(f"- {stub.strip().removeprefix(STUB_PREFIX).rstrip(']')}" for stub in stubs)
        if named and not stubs:  # a stub summarized away, its path still named by a summary or digest in view
            return SAY["stubs_named"].format(listed="\n".join(f"- {path}" for path in dict.fromkeys(named)), seen=told)
        return SAY["stubs"].format(count=len(stubs), s="s" * (len(stubs) > 1), were="were" if len(stubs) > 1 else "was", listed=listed,
                                   seen=told) if stubs else SAY["no_stub"].format(seen=told)
    if kind == "archived":
        named = [path for m in earlier if m.text.startswith((SUMMARY_PREFIX, COMPACTED_PREFIX)) or ARCHIVE_LINE in m.text
                 for path in ARCHIVE_FILE.findall(m.text)]
        listed = "\n".join(f"- {path}" for path in dict.fromkeys(named))
        return SAY["archives"].format(listed=listed, seen=told) if named else SAY["no_archive"].format(seen=told)
    if kind == "tool_calls" and calls:
        last = {call["name"]: ", ".join(f"{key}={value!r}" for key, value in call["args"].items()) for call in calls}
        listed = "\n".join(f"- {name} x{count} (last with {last[name] if len(last[name]) <= 120 else last[name][:117] + '...'})"
                           for name, count in Counter(call["name"] for call in calls).items())
        return SAY["calls"].format(count=len(calls), s="s" * (len(calls) > 1), listed=listed, seen=told)
    return SAY["no_calls"].format(seen=told) if kind == "tool_calls" else SAY["help"].format(example=seen.example)
