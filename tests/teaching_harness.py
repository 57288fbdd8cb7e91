"""Talk to a teaching model directly: a message list in, a reply out, the real tools run in between.

No agent is built: a ``Chat`` (optionally with a system prompt and more tools) binds the real tools, invokes the model, runs each tool call it makes
and feeds the result back until it answers; the next request is appended to the same message list.
``converse`` is one chat, turn by turn. ``judge`` scores a reply against a case of
``tests/corpora/fresh_registers.yaml``: right (every truth figure appears), declined (a decline or a
question with no decimal figure), or wrong (anything else: a confident figure for another question).
A turn written ``<summary>`` or ``<digest>`` is no message: the conversation so far is compacted as the agents
compact it (v2's summary, written by the model itself through ``context.summarize``; v3's turn digests,
``context.stable.turn_digest``), so the next turn is read after a summary or digest.

``offline_model`` is one offline model per setting for the whole test process: a model keeps nothing between
calls but its caches, and building its vocabulary from the catalog costs about 0.05 s, paid once instead of per test.
``tools_for`` is the real tools, likewise made once and pointed at the current test's workspace.

``fast_workspace`` is a workspace whose ``run_python`` runs the model's code in this process (the same
code, the same current folder, the same printed output and exit-code line) instead of starting the
sandbox, which costs about a second a call: the phrase tests make hundreds of calls. While the code runs, this
process's objects are frozen out of the garbage collector (``gc.freeze``): a pytest run here collects garbage as it
ends, and would otherwise walk the whole test process's heap each time, as a fresh Python would not. What the sandbox
enforces is tested in tests/test_tools.py and tests/test_hardening*.py; what an agent adds around the
model (offloading, summaries, memory) in the few end-to-end cases that build one.
"""

from __future__ import annotations

import builtins
import contextlib
import copy
import gc
import io
import os
import re
import sys
import traceback
from functools import cache
from pathlib import Path
from typing import Any

import yaml
from langchain_core.messages import AIMessage, BaseMessage, HumanMessage, SystemMessage, ToolMessage

from flawedcode.infra.sandbox import BoundedCapture, RunResult
from flawedcode.models import OfflineModel
from flawedcode.models.profiles import OFFLINE_WINDOW_TOKENS
from flawedcode.tools import Workspace, make_tools

CORPORA = Path(__file__).parent / "corpora"
TOLERANCE = 0.0006
"""A truth figure is found when a number in the reply is this close (a mean printed with 4 decimals)."""
MAX_STEPS = 14
NUMBER = re.compile(r"(?<![\w.])-?\d{1,3}(?:,\d{3})+(?:\.\d+)?|(?<![\w.])-?\d+(?:\.\d+)?")
DAY = re.compile(r"(?<![\w.-])\d{4}-\d{2}-\d{2}(?![\w-]|\.\d)")
FIGURE = re.compile(r"(?<![\w.])-?\d+\.\d+(?![\w.])")
DECLINE = re.compile(
    r"\b(?:can't|cannot|could not|couldn't|don't|do not|not in|no (?:row|data|such|column|dataframe|series)|isn't|"
    r"is not|outside|which|did you mean|unable|only covers|not understood|did not understand|computed nothing|"
    r"offline teaching model)\b", re.IGNORECASE)  # 'offline teaching model': its help text, no answer


def fresh_cases(name: str = "fresh_registers") -> list[dict[str, Any]]:
    """A corpus's cases: a fresh copy of the file read once per process (each parametrized case looks its own case up
    by id, so the file was parsed again for every test: 0.03-0.3 s each, a quarter of test_teaching_answers.py's time)."""
    return copy.deepcopy(_fresh_cases(name))


@cache
def _fresh_cases(name: str) -> list[dict[str, Any]]:
    loader = getattr(yaml, "CSafeLoader", yaml.SafeLoader)  # libyaml's safe loader where it is built in: the same cases
    return yaml.load((CORPORA / f"{name}.yaml").read_text(encoding="utf-8"), Loader=loader)["cases"]


def offline_model(max_input_tokens: int = OFFLINE_WINDOW_TOKENS, overflow: str = "truncate") -> OfflineModel:
    """The offline model with these settings, built once per process (see the module docstring)."""
    return _offline_model(max_input_tokens, overflow)


@cache
def _offline_model(max_input_tokens: int, overflow: str) -> OfflineModel:
    return OfflineModel(max_input_tokens=max_input_tokens, overflow=overflow)


def workspace_in(root: Path) -> Workspace:
    return Workspace.create(root / "ws", scratch_dir=root / "scratch", archive_dir=root / "archives")


def fast_workspace(root: Path) -> Workspace:
    """A workspace in ``root`` whose run_python runs the code in this process (see the module docstring)."""
    workspace = workspace_in(root)
    workspace.sandbox.run = lambda code, timeout, max_output_bytes: run_here(workspace.root, code, max_output_bytes)
    return workspace


def run_here(folder: Path, code: str, max_output_bytes: int) -> RunResult:
    """``code`` run as ``python -c`` would run it in ``folder``: its exit code and what it printed (stdout and stderr)."""
    printed = io.StringIO()
    before, argv, path, modules = os.getcwd(), sys.argv, list(sys.path), set(sys.modules)
    exit_code = 0
    try:
        gc.freeze()  # pytest run here collects garbage twice a run: over its own objects only, not this process (0.3 s each late in a run)
        os.chdir(folder)
        sys.argv = ["-c"]
        sys.path.insert(0, "")  # as `python -c`: the current folder first
        with contextlib.redirect_stdout(printed), contextlib.redirect_stderr(printed):
            try:
                exec(compile(code, "<string>", "exec"), {"__name__": "__main__", "__builtins__": builtins})  # noqa: S102
            except SystemExit as stop:
                exit_code = stop.code if isinstance(stop.code, int) else (0 if stop.code is None else 1)
                if stop.code is not None and not isinstance(stop.code, int):
                    print(stop.code, file=sys.stderr)
            except BaseException as error:  # noqa: BLE001 - the code's own error, shown as Python shows it
                frames = error.__traceback__.tb_next if error.__traceback__ else None  # not this function's frame
                print("".join(traceback.format_exception(type(error), error, frames)), end="", file=sys.stderr)
                exit_code = 1
    finally:
        gc.unfreeze()
        os.chdir(before)
        sys.argv, sys.path[:] = argv, path
        for name in set(sys.modules) - modules:  # the workspace's own modules (analyze, its tests): a fresh Python each call
            if str(getattr(sys.modules[name], "__file__", None) or "").startswith(str(folder)):
                del sys.modules[name]
    capture = BoundedCapture(max_output_bytes)
    capture.add(printed.getvalue().encode("utf-8", errors="replace"))
    return RunResult(exit_code, capture.text())


class _Current:
    """The workspace the shared tools see: every attribute is the current chat's workspace's."""

    def __init__(self, workspace: Workspace) -> None:
        self.workspace = workspace

    def __getattr__(self, name: str) -> Any:
        return getattr(self.workspace, name)

    def scrub(self, text: str) -> str:  # make_tools keeps this bound method: it must follow the current workspace
        return self.workspace.scrub(text)


_SHARED: list[tuple[_Current, list[Any]]] = []


def tools_for(workspace: Workspace) -> list[Any]:
    """The real tools, made once per process (about 0.1 s each time) and pointed at ``workspace``."""
    if not _SHARED:
        current = _Current(workspace)
        _SHARED.append((current, make_tools(current)))  # type: ignore[arg-type]
    current, tools = _SHARED[0]
    current.workspace = workspace
    return tools


class Chat:
    """One conversation with the model, no agent: ``send`` appends a request, runs the tool calls, returns the reply."""

    def __init__(self, model: Any, workspace: Workspace, system: str | None = None, more_tools: tuple[Any, ...] = ()) -> None:
        self.workspace = workspace
        tools = [*tools_for(workspace), *more_tools]
        self.tools = {tool.name: tool for tool in tools}
        self.bound = model.bind_tools(tools)
        self.messages: list[BaseMessage] = [SystemMessage(system)] if system else []
        self.calls: list[tuple[str, dict[str, Any]]] = []
        """The tool calls (name, arguments) the last request led to, in order."""

    def send(self, text: str) -> str:
        self.messages.append(HumanMessage(text))
        self.calls = []
        for _ in range(MAX_STEPS):
            tools_for(self.workspace)  # the shared tools act on this chat's workspace
            reply = self.bound.invoke(self.messages)
            self.messages.append(reply)
            if not reply.tool_calls:
                break
            for call in reply.tool_calls:
                self.calls.append((call["name"], call["args"]))
                tool = self.tools.get(call["name"])
                output = tool.invoke(call["args"]) if tool is not None else "Error: no such tool"
                self.messages.append(ToolMessage(str(output), tool_call_id=call["id"], name=call["name"]))
        last = self.messages[-1]
        return last.text if isinstance(last, AIMessage) else str(last.content)


def compacted(messages: list[BaseMessage], how: str, model: Any) -> list[BaseMessage]:
    """The messages as an agent leaves them after a summary (``<summary>``) or turn digests (``<digest>``)."""
    from flawedcode.config import SummarizationConfig
    from flawedcode.context.stable import split_turns, turn_digest
    from flawedcode.context.summarize import build_summary_message, original_goal, summarize

    if how == "<digest>":
        return [turn_digest(n, "archives/conversation.jsonl", turn) for n, turn in enumerate(split_turns(messages), 1)]
    text = summarize(messages, model, SummarizationConfig(), model.token_counter())
    return [build_summary_message(1, original_goal(messages), "archives/conversation.jsonl", 1, len(messages), text)]


def converse(model: Any, says: list[str], workspace: Workspace) -> list[str]:
    """Each user turn in order, answered with the real tools; the replies (``<summary>``, ``<digest>``: compacted)."""
    chat, replies = Chat(model, workspace), []
    for say in says:
        if say in ("<summary>", "<digest>"):
            chat.messages = compacted(chat.messages, say, model)
        else:
            replies.append(chat.send(say))
    return replies


def numbers_in(text: str) -> list[float]:
    """The numbers a reply states; a date (2024-09-19) counts as the number 20240919 too (a truth may be a day)."""
    days = [float(day.replace("-", "")) for day in DAY.findall(text)]
    return [float(found.replace(",", "")) for found in NUMBER.findall(text)] + days


def judge(case: dict[str, Any], reply: str) -> str:
    """'right', 'declined' or 'wrong' for the last reply of a case."""
    truths = case.get("truth")
    truths = truths if isinstance(truths, list) else [truths] if truths is not None else []
    found = numbers_in(reply)
    if case["expect"] == "answer" and truths and all(any(abs(n - t) <= TOLERANCE for n in found) for t in truths):
        return "right"
    said = " ".join(case.get("turns") or [case.get("ask", "")])
    given = [figure for figure in FIGURE.findall(reply) if figure not in said]  # a figure the user wrote, echoed, is none given
    if DECLINE.search(reply) and not given:
        return "declined"
    return "wrong"
