"""Hardening, round 3: the attacks of the third review (a hostile student, a buggy model, a crashing machine).

Each test reproduces one attack and asserts what a user now sees instead. The sandbox's
attacks live in ``test_isolation.py``; the redactor's corpus in ``test_redact.py``.
Secret-shaped values are built from parts here, so no string in this file is a key.
"""

from __future__ import annotations

import random
import string
from pathlib import Path

import pytest
from langchain_core.messages import AIMessage, HumanMessage, ToolMessage

from flawedcode.context import ConversationArchive, offload
from flawedcode.context.offload import scratch_file_name

RANDOM = random.Random(24)


def random_token(length: int) -> str:
    alphabet = string.ascii_letters + string.digits
    while True:
        made = "".join(RANDOM.choice(alphabet) for _ in range(length))
        if any(c.isdigit() for c in made) and any(c.isupper() for c in made) and any(c.islower() for c in made):
            return made


# --- a secret never reaches disk through a scratch file's name ---------------------------------------

SECRET_ARGUMENTS = [
    {"code": "import os; os.environ['OPENAI_API_KEY'] = 'sk-" + "proj-" + random_token(48) + "'"},
    {"path": "notes.txt", "content": "AKIA" + "Q7" + "Z3M2K4W6P2L5N7"},  # an AWS key id: '-'/'_' games do not matter
    {"query": "token " + random_token(32)},  # a key of no known shape: a random word never goes into a name
    {"pattern": "gh" + "p_" + random_token(36)},
]


@pytest.mark.parametrize("arguments", SECRET_ARGUMENTS)
def test_a_secret_in_a_tools_arguments_never_reaches_a_scratch_file_name_or_the_archive(tmp_path: Path, arguments) -> None:
    secret_words = [word for value in arguments.values() for word in
                    "".join(c if c.isalnum() else " " for c in value).split() if len(word) >= 12]
    result = "line\n" * 3000
    done = offload(result, "run_python", arguments, scratch_dir=tmp_path / "scratch")
    for word in secret_words:
        assert word not in done.path.name and word not in done.stub, (word, done.path.name)
        assert word[:12] not in done.path.name.replace("_", "")
    archive = ConversationArchive(tmp_path / "archives", "c1")
    archive.append([HumanMessage("go", id="h"), AIMessage("", id="a", tool_calls=[{"name": "run_python", "id": "t",
                                                                                  "args": {"path": "x"}}]),
                    ToolMessage(done.stub, tool_call_id="t", id="m")])
    for name in ("0001.jsonl", "0001.md"):
        text = (tmp_path / "archives" / "c1" / name).read_text()
        for word in secret_words:
            assert word not in text and word[:12] not in text.replace("_", ""), name


def test_a_scratch_file_name_still_says_what_it_holds() -> None:
    name = scratch_file_name("x" * 6000, "chartbook_get_docs", {"pipeline": "yield_curve", "dataframe": "repo_public"})
    assert name.startswith("chartbook_get_docs_yield_curve_repo_public_") and name.endswith(".txt")


# --- scratch/ is scoped per conversation, like archives/ -------------------------------------------------

def test_a_second_conversation_cannot_list_search_or_read_the_firsts_offloads(tmp_path: Path) -> None:
    from flawedcode.agents import make_agent
    from flawedcode.tools import Workspace

    workspace = Workspace.create(tmp_path / "ws", scratch_dir=tmp_path / "scratch", archive_dir=tmp_path / "archives")
    first = make_agent("v2", workspace=workspace)
    first.send("Get docs for yield_curve/repo_public")
    offloaded = [event for event in first.log.events if event.kind == "offload"]
    assert offloaded, "the docs were offloaded"
    path = offloaded[0].detail["path"]
    tools = {each.name: each for each in first.tools}
    assert "repo_public" in tools["read_file"].invoke({"path": path})
    second = make_agent("v2", workspace=Workspace(workspace.root, workspace.scratch_dir, workspace.archive_dir))
    others = {each.name: each for each in second.tools}
    assert others["read_file"].invoke({"path": path}).startswith("Error: ")
    assert "repo_public" not in others["list_files"].invoke({"path": "scratch"})
    assert "tri_party" not in others["search_files"].invoke({"pattern": "tri_party", "path": "scratch"})
    first.reset()  # a new conversation of the same agent: the old offloads are another conversation's now
    assert tools["read_file"].invoke({"path": path}).startswith("Error: ")


def test_tools_made_without_an_agent_cannot_read_another_sessions_archive_or_offloads(tmp_path: Path) -> None:
    from flawedcode.tools import Workspace, make_tools

    workspace = Workspace.create(tmp_path / "ws", scratch_dir=tmp_path / "scratch", archive_dir=tmp_path / "archives")
    (tmp_path / "archives" / "v2-0123456789").mkdir(parents=True)
    (tmp_path / "archives" / "v2-0123456789" / "0001.md").write_text("another session's plan\n")
    (tmp_path / "scratch" / "v2-0123456789").mkdir(parents=True)
    (tmp_path / "scratch" / "v2-0123456789" / "run_python_0123456789abcdef.txt").write_text("another session's result\n")
    tools = {each.name: each for each in make_tools(workspace)}
    assert tools["read_file"].invoke({"path": "archives/v2-0123456789/0001.md"}).startswith("Error: ")
    assert "plan" not in tools["search_files"].invoke({"pattern": "plan", "path": "archives"})
    assert "result" not in tools["search_files"].invoke({"pattern": "result", "path": "scratch"})
    assert tools["read_file"].invoke({"path": "scratch/v2-0123456789/run_python_0123456789abcdef.txt"}).startswith("Error: ")


# --- hostile input files: bounded reads, one short line ------------------------------------------------

def run_cli(capsys, *args: str) -> tuple[int, str, str]:
    from flawedcode import cli

    code = cli.main(list(args))
    captured = capsys.readouterr()
    return code, captured.out, captured.err


def assert_one_short_line(code: int, err: str, *fragments: str, limit: int = 400) -> None:
    lines = err.strip().splitlines()
    assert code == 2 and len(lines) == 1 and "Traceback" not in err, err[:2000]
    assert len(lines[0]) <= limit, len(lines[0])
    for fragment in fragments:
        assert fragment in lines[0], lines[0]


@pytest.mark.parametrize("command", [["chat", "--config"], ["demo", "--config"], ["bench", "--config"], ["bench", "--tasks-file"]])
def test_dev_zero_as_an_input_file_is_refused_unread_in_one_line(capsys, command) -> None:
    code, _, err = run_cli(capsys, *command, "/dev/zero")
    assert_one_short_line(code, err, "/dev/zero", "not a regular file")


@pytest.mark.parametrize("option", ["--config", "--tasks-file"])
def test_a_64_mb_input_file_is_refused_with_a_short_line(tmp_path: Path, capsys, option) -> None:
    huge = tmp_path / "huge.yaml"
    with huge.open("w") as stream:
        stream.write("budget_tokens: 8192\nsystem_prompt: '")
        stream.write("x" * (64 * 1024**2))
        stream.write("'\n")
    code, _, err = run_cli(capsys, "bench", option, str(huge))
    assert_one_short_line(code, err, "huge.yaml", "larger than")
