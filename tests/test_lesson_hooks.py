"""The hook a lesson shows is the hook that runs: each is a member of the agent's middleware list.

- Over a short session, ``ManageContext.before_model`` runs before every model call and
  ``ManageContext.wrap_tool_call`` around every tool call (v2 and v3), and v3's
  ``LayeredPrefixMiddleware.wrap_model_call`` around every model call.
- Replace one of them (as a student editing the hook the lesson shows would) and the agent's
  behaviour changes with it: no summary (v2) or compaction (v3) without ``before_model``, no offload
  without ``wrap_tool_call``, every tool sent at once without v3's prefix hook.
- The diffs ``v1.py -> v2.py`` and ``v2.py -> v3.py`` hold only the lesson: each changed block is
  marked ``# NEW in vN`` (the v2 -> v3 rule, additions only, is in ``tests/test_v3.py``).
"""

from __future__ import annotations

import ast
import difflib
import functools
from collections import Counter
from pathlib import Path

import pytest
from langchain_core.messages import AIMessage, ToolMessage

from flawedcode.agents import make_agent
from flawedcode.agents import v2 as agent_v2
from flawedcode.agents import v3 as agent_v3
from flawedcode.config import V2Config, V3Config
from flawedcode.context.loadout import LayeredPrefixMiddleware
from flawedcode.demo import LESSON_STEPS
from flawedcode.lessons import lesson_model
from flawedcode.tools import Workspace

AGENTS_DIR = Path(agent_v2.__file__).resolve().parent
BUDGET = 4096
CONFIGS = {"v2": V2Config, "v3": V3Config}
LESSON_CLASS = {"v2": agent_v2.ManageContext, "v3": agent_v3.ManageContext}


def new_agent(version: str, tmp_path: Path, budget: int = BUDGET):
    workspace = Workspace.create(tmp_path / "project", tmp_path / "scratch", tmp_path / "archives")
    return make_agent(version, model=lesson_model("offline", budget), workspace=workspace,
                      config=CONFIGS[version](budget_tokens=budget), conversation_id="hooks")


def count_calls(monkeypatch, owner: type, name: str, calls: Counter) -> None:
    original = getattr(owner, name)

    @functools.wraps(original)  # LangChain reads the hook's signature
    def counted(self, *args, **kwargs):
        calls[f"{owner.__name__}.{name}"] += 1
        return original(self, *args, **kwargs)

    monkeypatch.setattr(owner, name, counted)


def tool_calls(agent) -> int:
    """Every tool call of the conversation, whether still in the context or archived."""
    messages = [*agent.archive.messages(), *agent.messages]
    return len({call["id"] for message in messages if isinstance(message, AIMessage) for call in message.tool_calls})


@pytest.mark.parametrize("version", ["v2", "v3"])
def test_the_lessons_hooks_run_at_every_model_and_tool_call(version: str, tmp_path: Path, monkeypatch) -> None:
    calls: Counter = Counter()
    lesson = LESSON_CLASS[version]
    count_calls(monkeypatch, lesson, "before_model", calls)
    count_calls(monkeypatch, lesson, "wrap_tool_call", calls)
    count_calls(monkeypatch, LayeredPrefixMiddleware, "wrap_model_call", calls)
    agent = new_agent(version, tmp_path, budget=32_768)  # no summary: every tool call stays in the history
    for step in LESSON_STEPS[:3]:
        agent.send(step)
    model_calls = len(agent.token_log)
    assert model_calls >= 6
    assert calls["ManageContext.before_model"] == model_calls, "Step 1 runs before every model call"
    assert calls["ManageContext.wrap_tool_call"] == tool_calls(agent) > 0, "Step 2 runs after every tool call"
    assert calls["LayeredPrefixMiddleware.wrap_model_call"] == (model_calls if version == "v3" else 0)


def history_without(version: str, hook: str, tmp_path: Path, monkeypatch, steps=LESSON_STEPS[:-1]):
    if hook:
        owner, name = hook.split(".")
        cls = LESSON_CLASS[version] if owner == "ManageContext" else LayeredPrefixMiddleware
        passthrough = {"before_model": lambda self, state, runtime: None,
                       "wrap_tool_call": lambda self, request, handler: handler(request),
                       "wrap_model_call": lambda self, request, handler: handler(request)}[name]
        monkeypatch.setattr(cls, name, passthrough)
    agent = new_agent(version, tmp_path / (hook or "as-shipped"))
    for step in steps:
        agent.send(step)
    monkeypatch.undo()
    return agent


@pytest.mark.parametrize(("version", "rewrites"), [("v2", {"summarize"}), ("v3", {"clear", "digest", "summarize",
                                                                                   "consolidate"})])
def test_replacing_before_model_stops_the_summary_step(version: str, rewrites: set[str], tmp_path: Path,
                                                       monkeypatch) -> None:
    shipped = history_without(version, "", tmp_path, monkeypatch)
    edited = history_without(version, "ManageContext.before_model", tmp_path, monkeypatch)
    assert rewrites & {event.kind for event in shipped.events}, "as shipped, the summary step rewrites the history"
    assert not rewrites & {event.kind for event in edited.events}, "the edited hook is the one that runs"


@pytest.mark.parametrize("version", ["v2", "v3"])
def test_replacing_wrap_tool_call_stops_the_offload_step(version: str, tmp_path: Path, monkeypatch) -> None:
    steps = ["Get docs for yield_curve/repo_public"]
    shipped = history_without(version, "", tmp_path, monkeypatch, steps)
    edited = history_without(version, "ManageContext.wrap_tool_call", tmp_path, monkeypatch, steps)

    def longest_result(agent) -> int:
        return max(len(message.text) for message in agent.messages if isinstance(message, ToolMessage))

    assert [event.kind for event in shipped.events].count("offload") == 1
    assert "offload" not in [event.kind for event in edited.events]
    assert longest_result(edited) > 5_000 > longest_result(shipped), "the whole docs stay in the context"


def test_replacing_v3s_prefix_hook_sends_every_tool_at_once(tmp_path: Path, monkeypatch) -> None:
    def tools_called(agent) -> list[str]:
        return [call["name"] for message in agent.messages if isinstance(message, AIMessage) for call in message.tool_calls]

    steps = ["List the files in the project"]
    shipped = history_without("v3", "", tmp_path, monkeypatch, steps)
    edited = history_without("v3", "LayeredPrefixMiddleware.wrap_model_call", tmp_path, monkeypatch, steps)
    assert tools_called(shipped) == ["load_tools", "list_files"], "as shipped, the file tools are deferred"
    assert tools_called(edited) == ["list_files"], "without the prefix hook, every tool is sent from the first call"


# --- the diffs are the lessons --------------------------------------------------------------------

def code_after_docstring(path: Path) -> list[str]:
    text = path.read_text(encoding="utf-8")
    return text.splitlines()[ast.parse(text).body[0].end_lineno:]


def unmarked_changes(old: str, new: str, folder: Path = AGENTS_DIR) -> list[list[str]]:
    """Each block of ``new`` that differs from ``old`` without a ``# NEW in <new>`` mark (the version's own name aside)."""
    before, after = code_after_docstring(folder / f"{old}.py"), code_after_docstring(folder / f"{new}.py")
    own_name = {f"AgentV{old[1:]}": f"AgentV{new[1:]}", f'"{old}"': f'"{new}"'}
    found = []
    for tag, start, end, new_start, new_end in difflib.SequenceMatcher(None, before, after, autojunk=False).get_opcodes():
        added = after[new_start:new_end]
        renamed = [functools.reduce(lambda line, pair: line.replace(*pair), own_name.items(), line)
                   for line in before[start:end]]
        if tag == "equal" or renamed == added:
            continue
        is_class_header = bool(added) and added[0].startswith("class ") and all(
            line.startswith(("class ", '    """')) for line in added)
        if not is_class_header and not any(f"NEW in {new}" in line for line in added):
            found.append(added or before[start:end])
    return found


@pytest.mark.parametrize(("old", "new"), [("v1", "v2"), ("v2", "v3")])
def test_each_diff_holds_only_its_lesson(old: str, new: str) -> None:
    assert unmarked_changes(old, new) == [], f"every block {new} changes is marked '# NEW in {new}'"


def test_an_unmarked_line_in_a_diff_is_found(tmp_path: Path) -> None:
    v1 = '"""v1."""\n\nclass AgentV1:\n    version = "v1"\n\n    def send(self, text):\n        return text\n'
    (tmp_path / "v1.py").write_text(v1, encoding="utf-8")
    (tmp_path / "v2.py").write_text(v1.replace("V1", "V2").replace('"v1"', '"v2"').replace(
        "        return text", "        text = text[-4:]\n        return text"), encoding="utf-8")
    assert unmarked_changes("v1", "v2", tmp_path) == [["        text = text[-4:]"]]
    (tmp_path / "v2.py").write_text((tmp_path / "v2.py").read_text().replace("[-4:]", "[-4:]  # NEW in v2: the tail"))
    assert unmarked_changes("v1", "v2", tmp_path) == []


DOCSTRING_HOOKS = {  # a phrase each agent's docstring uses for a hook, and the hook that must run in a short run
    "v2": [("``maybe_summarize``", agent_v2, "maybe_summarize"), ("``maybe_offload``", agent_v2, "maybe_offload")],
    "v3": [("cache-stable compaction", agent_v3.StableCompactor, "maybe_compact"),
           ("is offloaded", agent_v3, "maybe_offload"),
           ("``loadout.py``", LayeredPrefixMiddleware, "wrap_model_call")],
}


@pytest.mark.parametrize("version", ["v2", "v3"])
def test_every_hook_a_docstring_names_is_called_in_a_short_run(version: str, tmp_path: Path, monkeypatch) -> None:
    module = {"v2": agent_v2, "v3": agent_v3}[version]
    calls: Counter = Counter()
    for phrase, owner, name in DOCSTRING_HOOKS[version]:
        assert phrase in module.__doc__ + (LESSON_CLASS[version].__doc__ or ""), f"{version}'s docstring names {phrase}"
        original = getattr(owner, name)
        if isinstance(owner, type):
            count_calls(monkeypatch, owner, name, calls)
        else:
            monkeypatch.setattr(owner, name, functools.wraps(original)(
                lambda *args, _name=name, _original=original, **kwargs: calls.update([_name]) or _original(*args, **kwargs)))
    agent = new_agent(version, tmp_path)
    for step in LESSON_STEPS[:2]:
        agent.send(step)
    for _, owner, name in DOCSTRING_HOOKS[version]:
        key = f"{owner.__name__}.{name}" if isinstance(owner, type) else name
        assert calls[key] >= 1, f"{key} is named in {version}'s docstring but never ran"


@pytest.mark.parametrize("version", ["v2", "v3"])
def test_the_lesson_is_a_member_of_the_middleware_list_and_no_guard_holds_it(version: str, tmp_path: Path) -> None:
    agent = new_agent(version, tmp_path)
    stack = agent.build_middleware()
    lessons = [middleware for middleware in stack if isinstance(middleware, LESSON_CLASS[version])]
    assert len(lessons) == 1, "the lesson's middleware is in the agent's own list, once"
    holders = [type(middleware).__name__ for middleware in stack
               if any(value is lessons[0] for value in vars(middleware).values())]
    assert holders == [], "a guard stands beside the lesson; none holds it"
    if version == "v3":
        assert isinstance(stack[-1], LayeredPrefixMiddleware), "v3's prefix hook is in the list too"
