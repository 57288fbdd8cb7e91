"""Talk to a teaching model directly: a message list in, a reply out, the real tools run in between.

No agent is built: ``converse`` binds the real tools, invokes the model, runs each tool call it makes
and feeds the result back until it answers. ``judge`` scores a reply against a case of
``tests/corpora/fresh_registers.yaml``: right (every truth figure appears), declined (a decline or a
question with no decimal figure), or wrong (anything else: a confident figure for another question).
"""

from __future__ import annotations

import re
from pathlib import Path
from typing import Any

import yaml
from langchain_core.messages import BaseMessage, HumanMessage, ToolMessage

from flawedcode.tools import Workspace, make_tools

CORPORA = Path(__file__).parent / "corpora"
TOLERANCE = 0.0006
"""A truth figure is found when a number in the reply is this close (a mean printed with 4 decimals)."""
MAX_STEPS = 14
NUMBER = re.compile(r"(?<![\w.])-?\d{1,3}(?:,\d{3})+(?:\.\d+)?|(?<![\w.])-?\d+(?:\.\d+)?")
FIGURE = re.compile(r"(?<![\w.])-?\d+\.\d+(?![\w.])")
DECLINE = re.compile(
    r"\b(?:can't|cannot|could not|couldn't|don't|do not|not in|no (?:row|data|such|column|dataframe|series)|isn't|"
    r"is not|outside|which|did you mean|unable|only covers|not understood|did not understand)\b", re.IGNORECASE)


def fresh_cases() -> list[dict[str, Any]]:
    return yaml.safe_load((CORPORA / "fresh_registers.yaml").read_text(encoding="utf-8"))["cases"]


def workspace_in(root: Path) -> Workspace:
    return Workspace.create(root / "ws", scratch_dir=root / "scratch", archive_dir=root / "archives")


def converse(model: Any, says: list[str], workspace: Workspace) -> list[str]:
    """Each user turn in order, answered with the real tools; the replies."""
    bound = model.bind_tools(make_tools(workspace))
    tools = {tool.name: tool for tool in make_tools(workspace)}
    messages: list[BaseMessage] = []
    replies = []
    for say in says:
        messages.append(HumanMessage(say))
        for _ in range(MAX_STEPS):
            reply = bound.invoke(messages)
            messages.append(reply)
            if not reply.tool_calls:
                break
            for call in reply.tool_calls:
                output = tools[call["name"]].invoke(call["args"]) if call["name"] in tools else "Error: no such tool"
                messages.append(ToolMessage(str(output), tool_call_id=call["id"], name=call["name"]))
        replies.append(messages[-1].text if hasattr(messages[-1], "text") else str(messages[-1].content))
    return replies


def numbers_in(text: str) -> list[float]:
    return [float(found.replace(",", "")) for found in NUMBER.findall(text)]


def judge(case: dict[str, Any], reply: str) -> str:
    """'right', 'declined' or 'wrong' for the last reply of a case."""
    truths = case.get("truth")
    truths = truths if isinstance(truths, list) else [truths] if truths is not None else []
    found = numbers_in(reply)
    if case["expect"] == "answer" and truths and all(any(abs(n - t) <= TOLERANCE for n in found) for t in truths):
        return "right"
    if DECLINE.search(reply) and not FIGURE.search(reply):
        return "declined"
    if case["expect"] == "decline" and DECLINE.search(reply) and not any(True for _ in FIGURE.finditer(reply)):
        return "right"
    return "wrong"
