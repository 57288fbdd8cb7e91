"""What v3 added, under attack (issue 44's round 4): sub-agents, memory, replays, compaction, todos.

Each test is an attack first: it failed on the code before its fix (the measured figure is in
a comment beside it).
"""

from __future__ import annotations

import threading
import time
from pathlib import Path

from langchain_core.messages import AIMessage, HumanMessage

from flawedcode.agents import make_agent
from flawedcode.config import SubagentConfig, V3Config
from flawedcode.context.archive import ConversationArchive
from flawedcode.context.subagents import SubagentRunner, make_task_tool
from flawedcode.lessons import lesson_model
from flawedcode.telemetry import SessionLog
from flawedcode.tokens import TokenCounter
from flawedcode.tools import Workspace

COUNTER = TokenCounter()


def workspace(tmp_path: Path) -> Workspace:
    return Workspace.create(tmp_path / "project", scratch_dir=tmp_path / "scratch", archive_dir=tmp_path / "archives")


def v3(tmp_path: Path, name: str = "parent", budget: int = 8192):
    return make_agent("v3", model=lesson_model("offline", budget), workspace=workspace(tmp_path),
                      config=V3Config(budget_tokens=budget), conversation_id=name)


def tool(agent, name: str):
    return next(tool for tool in agent.tools if tool.name == name)


# --- 1. sub-agents are isolated from their parent's workspace -----------------------------------------

def test_a_child_cannot_change_its_parents_workspace_scope(tmp_path: Path) -> None:
    parent = v3(tmp_path)
    scope, scratch = parent.workspace.archive_scope, parent.workspace.conversation_scratch_dir
    offloaded = scratch / "result.txt"
    offloaded.parent.mkdir(parents=True)
    offloaded.write_text("the parent's own offloaded result\n", encoding="utf-8")
    answer = parent.subagents.run("load money_markets sofr and give the 2024 mean")
    transcript = answer.rsplit("transcript: ", 1)[1].rstrip("]")
    # before: the scope was "parent-task1" after task(): both reads below said the path did not exist / belonged
    # to another conversation, and the next offload went to scratch/parent-task1/
    assert parent.workspace.archive_scope == scope and parent.workspace.conversation_scratch_dir == scratch
    read = tool(parent, "read_file")
    assert "the parent's own offloaded result" in read.invoke({"path": "scratch/result.txt"})
    assert "Sub-agent 1 task" in read.invoke({"path": transcript})
    child = parent.make_child("parent-task9")
    assert child.workspace is not parent.workspace and child.workspace.root == parent.workspace.root
    child.reset("another")
    assert parent.workspace.archive_scope == scope


class SlowChild:
    """A child that takes a while, and counts how many of its kind run at once."""

    running = 0
    most = 0
    ids: list[str] = []
    lock = threading.Lock()

    def __init__(self, conversation_id: str) -> None:
        self.messages = []
        self.log = SessionLog()
        with SlowChild.lock:
            SlowChild.ids.append(conversation_id)

    def send(self, text: str) -> str:
        with SlowChild.lock:
            SlowChild.running += 1
            SlowChild.most = max(SlowChild.most, SlowChild.running)
        time.sleep(0.05)
        with SlowChild.lock:
            SlowChild.running -= 1
        self.messages = [AIMessage(f"done: {text}")]
        return f"done: {text}"


def test_task_calls_per_turn_and_children_at_once_are_capped_and_ids_are_unique(tmp_path: Path) -> None:
    log = SessionLog()
    log.start_turn()
    runner = SubagentRunner(SlowChild, ConversationArchive(tmp_path, "p"), log, COUNTER, SubagentConfig())
    answers: list[str] = []
    threads = [threading.Thread(target=lambda n=n: answers.append(runner.run(f"work {n}"))) for n in range(16)]
    for thread in threads:
        thread.start()
    for thread in threads:
        thread.join()
    limits = runner.config
    ran = [answer for answer in answers if answer.startswith("done:")]
    refused = [answer for answer in answers if answer.startswith("Error:")]
    # before: 16 children ran, up to 16 at once, several with the same id
    assert len(ran) == limits.max_tasks_per_turn and len(refused) == 16 - limits.max_tasks_per_turn
    assert SlowChild.most <= limits.max_concurrent
    assert len(set(SlowChild.ids)) == len(SlowChild.ids)
    assert all(f"at most {limits.max_tasks_per_turn}" in answer for answer in refused)
    description = make_task_tool(runner).description
    assert f"At most {limits.max_tasks_per_turn} task calls per turn" in description and f"{limits.max_concurrent} at a time" in description
    log.start_turn()  # a new turn: the count starts again
    assert runner.run("one more").startswith("done:")


def test_a_parent_id_at_the_length_limit_still_delegates(tmp_path: Path) -> None:
    parent = v3(tmp_path, name="p" * 128)
    # before: ValueError "conversation id 'ppp...' cannot be a folder name" ended the whole turn
    answer = parent.subagents.run("load money_markets sofr and give the 2024 mean")
    assert "transcript: archives/" in answer and "Error" not in answer and "failed" not in answer
    first, second = parent.subagents.child_id(1), parent.subagents.child_id(2)
    assert len(first) <= 128 and first != second and first.endswith("-task1")


def test_a_child_that_cannot_be_built_is_one_clear_answer(tmp_path: Path) -> None:
    def broken(conversation_id: str):
        raise ValueError("no model today")

    runner = SubagentRunner(broken, ConversationArchive(tmp_path, "p"), SessionLog(), COUNTER)
    answer = runner.run("anything")
    assert answer.startswith("No answer: the sub-agent failed (ValueError: no model today)")
    assert "Traceback" not in answer and HumanMessage  # the parent's turn goes on
