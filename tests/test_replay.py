"""Record a session once, replay it with no network and no key: through chat, demo and bench.

A replay must reproduce every reply and every token count, offline and
deterministically, and stop with one line naming the first request that
differs from the recording.
"""

from __future__ import annotations

import io
import json
import re
import sys
from pathlib import Path

import pytest
from openai_imitation import ImitationServer

from flawedcode import cli, notices
from flawedcode.agents import make_agent
from flawedcode.demo import LESSON_STEPS
from flawedcode.models import ReplayChatModel, ReplayMismatchError, get_model
from flawedcode.models.replay import FORMAT
from flawedcode.tools import Workspace

LESSON_INPUT = "".join(step + "\n" for step in LESSON_STEPS)
CONVERSATION_ID = re.compile(r"\bv[012]-[0-9a-f]{10}\b")


@pytest.fixture(autouse=True)
def _fresh_notices():
    notices.forget()


def run(monkeypatch, capsys, *args: str, stdin: str = "") -> tuple[int, str, str]:
    monkeypatch.setattr(sys, "stdin", io.StringIO(stdin))
    code = cli.main(list(args))
    captured = capsys.readouterr()
    return code, captured.out, captured.err


def transcript(out: str) -> str:
    """The REPL's output without its banner (it names a temporary workspace) and with conversation ids masked."""
    return CONVERSATION_ID.sub("<conversation>", "\n".join(out.splitlines()[1:]))


def calls(logs_path: Path) -> dict[str, list[tuple]]:
    """Per agent: each model call's counted and reported tokens, purpose and events."""
    logs = json.loads(logs_path.read_text())
    return {name: [(call["input_tokens"], call["output_tokens"], call["reported_input_tokens"],
                    call["reported_output_tokens"], call["purpose"], tuple(call["events"])) for call in agent["calls"]]
            for name, agent in logs["agents"].items()}


def replies(logs_path: Path) -> dict[str, list[str]]:
    return {name: agent["replies"] for name, agent in json.loads(logs_path.read_text())["agents"].items()}


def test_demo_record_then_replay_reproduces_every_reply_and_token_count(monkeypatch, capsys, tmp_path):
    recording = tmp_path / "lesson.jsonl"
    code, recorded_out, _ = run(monkeypatch, capsys, "demo", "--out", str(tmp_path / "recorded"), "--record", str(recording))
    assert code == 0
    code, replayed_out, _ = run(monkeypatch, capsys, "demo", "--out", str(tmp_path / "replayed"),
                                "--model", f"replay:{recording}")
    assert code == 0
    recorded, replayed = tmp_path / "recorded" / "demo_logs.json", tmp_path / "replayed" / "demo_logs.json"
    assert replies(replayed) == replies(recorded)
    assert calls(replayed) == calls(recorded)
    assert "offload" in {event for agent in calls(replayed).values() for call in agent for event in call[5]}
    assert "model offline (replayed from lesson.jsonl)" in replayed_out
    header = json.loads(recording.read_text().splitlines()[0])
    assert header["format"] == FORMAT and header["model"] == "offline" and header["provider"] == "flawedcode"


def test_chat_record_then_replay_reproduces_the_transcript(monkeypatch, capsys, tmp_path):
    recording = tmp_path / "chat.jsonl"
    code, recorded, _ = run(monkeypatch, capsys, "chat", "--record", str(recording), stdin=LESSON_INPUT)
    assert code == 0
    monkeypatch.setenv("FLAWEDCODE_ARCHIVE_DIR", str(tmp_path / "classroom-archives"))  # another machine, say
    code, replayed, err = run(monkeypatch, capsys, "chat", "--model", f"replay:{recording}", stdin=LESSON_INPUT)
    assert code == 0 and "error" not in err
    assert transcript(replayed) == transcript(recorded)
    assert f'Your original goal was: "{LESSON_STEPS[0]}"' in replayed


def test_a_real_clients_session_replays_with_the_server_gone(monkeypatch, capsys, tmp_path):
    recording = tmp_path / "real.jsonl"
    with ImitationServer(model="gpt-4o-mini", reasoning_tokens=5) as server:
        monkeypatch.setenv("OPENAI_BASE_URL", server.base_url)
        monkeypatch.setenv("OPENAI_API_KEY", "sk-proj-" + "a1b2c3d4" * 5)
        code, recorded, _ = run(monkeypatch, capsys, "chat", "--model", "openai:gpt-4o-mini", "--record", str(recording),
                                stdin=LESSON_INPUT)
    assert code == 0 and len(server.requests) >= len(LESSON_STEPS)
    monkeypatch.delenv("OPENAI_BASE_URL")
    monkeypatch.delenv("OPENAI_API_KEY")
    monkeypatch.setenv("FLAWEDCODE_ARCHIVE_DIR", str(tmp_path / "classroom-archives"))
    code, replayed, _ = run(monkeypatch, capsys, "chat", "--model", f"replay:{recording}", stdin=LESSON_INPUT)
    assert code == 0
    assert transcript(replayed) == transcript(recorded), "the same replies, tokens and cost, with no server and no key"
    assert "| cost $" in replayed, "the recorded model's prices still apply"
    text = recording.read_text()
    assert "a1b2c3d4" not in text and "127.0.0.1" in text  # the key never, the server's host yes
    header = json.loads(text.splitlines()[0])
    assert header["model"] == "gpt-4o-mini" and header["provider"] == "openai" and header["window_tokens"] == 128_000


def test_secrets_are_redacted_and_the_replay_still_matches(monkeypatch, tmp_path):
    secret = "ghp_" + "Z9y8X7w6" * 4
    recording = tmp_path / "secret.jsonl"
    ws = Workspace.create(tmp_path / "ws", tmp_path / "scratch", tmp_path / "archives")
    request = f"List ChartBook dataframes (my GitHub token is {secret})"
    agent = make_agent("v1", model=get_model("offline", record=recording), workspace=ws)
    first = agent.send(request)
    assert secret not in recording.read_text() and "[REDACTED:github-token]" in recording.read_text()
    replay = make_agent("v1", model=get_model(f"replay:{recording}"), workspace=ws)
    assert replay.send(request) == first


def test_a_changed_request_fails_with_one_line_naming_it(monkeypatch, capsys, tmp_path):
    recording = tmp_path / "lesson.jsonl"
    run(monkeypatch, capsys, "demo", "--out", str(tmp_path / "recorded"), "--record", str(recording))
    code, _, err = run(monkeypatch, capsys, "demo", "--out", str(tmp_path / "other"), "--model", f"replay:{recording}",
                       "--budget", "6000")
    assert code == 2 and len(err.strip().splitlines()) == 1
    assert re.match(r"flawedcode: error: replay: request \d+ is not in the recording lesson\.jsonl: the closest recorded "
                    r"request \(#\d+\) .* \(made by: flawedcode demo --out \S+ --record \S+\), or record it again\.$",
                    err.strip()), err

    chat = tmp_path / "chat.jsonl"
    run(monkeypatch, capsys, "chat", "--record", str(chat), stdin=LESSON_INPUT)
    changed = LESSON_INPUT.replace("Now get docs for money_markets/sofr", "Now get docs for money_markets/effr")
    code, out, err = run(monkeypatch, capsys, "chat", "--model", f"replay:{chat}", stdin=changed)
    assert code == 2, "the replay stops at the first miss"
    assert len(err.strip().splitlines()) == 1, err
    number = re.match(r"flawedcode: error: replay: request (\d+) is not in the recording chat\.jsonl", err.strip())
    assert number, err
    assert re.search(rf"the closest recorded request \(#{number.group(1)}\) differs at message \d+ \(human\): recorded '",
                     err)
    assert "sofr" in err and "effr" in err
    assert out.count("you> ") == 3 and "you> What was my original goal?" not in out, "no later turn was tried"


def test_a_recorded_overflow_replays_as_an_overflow(tmp_path):
    recording = tmp_path / "overflow.jsonl"
    with ImitationServer(style="vllm", window=3_400) as server:
        ws = Workspace.create(tmp_path / "ws", tmp_path / "scratch", tmp_path / "archives")
        model = get_model("openai:gpt-4o-mini", base_url=server.base_url, max_retries=0, record=recording)
        recorded = make_agent("v2", model=model, workspace=ws, conversation_id="lesson")
        recorded_replies = [recorded.send(step) for step in LESSON_STEPS]
    errors = [json.loads(line)["error"] for line in recording.read_text().splitlines()[1:] if '"error"' in line]
    assert [error["kind"] for error in errors] == ["context_overflow"] and errors[0]["limit_tokens"] == 3_400
    ws = Workspace.create(tmp_path / "ws2", tmp_path / "scratch2", tmp_path / "archives2")
    # the same conversation id, as chat and demo reuse the recorded one
    replayed = make_agent("v2", model=get_model(f"replay:{recording}"), workspace=ws, conversation_id="lesson")
    assert [replayed.send(step) for step in LESSON_STEPS] == recorded_replies
    assert [event.kind for event in replayed.events] == [event.kind for event in recorded.events]
    assert replayed.log.budget_tokens == recorded.log.budget_tokens == 2_975


def test_bench_records_and_replays(monkeypatch, capsys, tmp_path):
    recording = tmp_path / "bench.jsonl"
    arguments = ["bench", "--agents", "v1,v2", "--tasks", "goal_short", "--runs", "1"]
    assert run(monkeypatch, capsys, *arguments, "--out", str(tmp_path / "a"), "--record", str(recording))[0] == 0
    assert run(monkeypatch, capsys, *arguments, "--out", str(tmp_path / "b"), "--model", f"replay:{recording}")[0] == 0

    def totals(folder: str) -> list[dict]:
        lines = (tmp_path / folder / "runs.jsonl").read_text().splitlines()
        return [{key: value for key, value in json.loads(line)["totals"].items() if key != "wrapper_seconds"}
                for line in lines]

    assert totals("b") == totals("a")


def test_recordings_that_cannot_be_replayed_say_why_in_one_line(tmp_path):
    with pytest.raises(ReplayMismatchError.__mro__[1], match=r"cannot read the recording .*record one with --record"):
        get_model(f"replay:{tmp_path / 'missing.jsonl'}")
    (tmp_path / "notes.txt").write_text("just some notes\n")
    with pytest.raises(ReplayMismatchError.__mro__[1], match="not a flawedcode recording"):
        get_model(f"replay:{tmp_path / 'notes.txt'}")
    recording = tmp_path / "cut.jsonl"
    ws = Workspace.create(tmp_path / "ws", tmp_path / "scratch", tmp_path / "archives")
    agent = make_agent("v1", model=get_model("offline", record=recording), workspace=ws)
    reply = agent.send("List ChartBook dataframes")
    recording.write_text(recording.read_text() + '{"type": "call", "n": 9, "requ')  # the recorder was killed mid-line
    replay = make_agent("v1", model=get_model(f"replay:{recording}"), workspace=ws)
    assert isinstance(replay.model, ReplayChatModel) and replay.send("List ChartBook dataframes") == reply


def test_readme_says_what_the_code_does_for_real_models():
    """The numbers docs/real-models.md (README's page on real models) quotes come from the constants that set them."""
    from flawedcode.context.resilience import SummaryBackoff
    from flawedcode.models import DEFAULT_TIMEOUT_SECONDS, input_window
    from flawedcode.models.openai_model import DEFAULT_MAX_RETRIES
    from flawedcode.models.profiles import OLLAMA_DEFAULT_CONTEXT_TOKENS, PRICES_CHECKED

    docs = Path(__file__).resolve().parents[1] / "docs"
    section = "\n".join((docs / name).read_text(encoding="utf-8") for name in ("real-models.md", "replay.md"))
    backoff = SummaryBackoff()
    assert f"longer than {DEFAULT_TIMEOUT_SECONDS:.0f} seconds" in section
    assert f"else {OLLAMA_DEFAULT_CONTEXT_TOKENS:,} for the local models" in section
    assert f"({OLLAMA_DEFAULT_CONTEXT_TOKENS:,} -> {input_window(OLLAMA_DEFAULT_CONTEXT_TOKENS):,})" in section
    assert f"checked {PRICES_CHECKED}" in section
    assert {1: "once", 2: "twice"}[DEFAULT_MAX_RETRIES] in section
    assert f"after {backoff.first_wait_calls}, {2 * backoff.first_wait_calls}, {4 * backoff.first_wait_calls}, ..." in section
    for provider in ("OpenAI", "OpenRouter", "Ollama", "vLLM"):
        assert f"| {provider} |" in section
    assert "--model replay:FILE" in section and "notebooks/instructors/record_and_replay.ipynb" in section


@pytest.mark.parametrize(("args", "fragment"), [
    (["chat", "--timeout", "0"], "--timeout: expected a positive number of seconds; got 0"),
    (["demo", "--window", "100"], "--window: expected a window of at least 512 tokens; got 100"),
    (["bench", "--timeout", "soon"], "--timeout: expected a number of seconds; got 'soon'"),
])
def test_bad_model_options_are_refused_in_one_line(args, fragment, capsys):
    with pytest.raises(SystemExit) as exited:
        cli.main(args)
    err = capsys.readouterr().err
    assert exited.value.code == 2 and err.count("\n") == 1 and fragment in err


def test_a_recording_is_never_overwritten_by_its_own_replay_or_written_nowhere(monkeypatch, capsys, tmp_path):
    recording = tmp_path / "lesson.jsonl"
    recording.write_text("precious\n")
    code, _, err = run(monkeypatch, capsys, "chat", "--model", f"replay:{recording}", "--record", str(recording))
    assert code == 2 and "that is the recording being replayed" in err and recording.read_text() == "precious\n"
    code, _, err = run(monkeypatch, capsys, "demo", "--record", str(tmp_path / "missing" / "x.jsonl"))
    assert code == 2 and err.strip().endswith(f"the folder {tmp_path / 'missing'} does not exist")


@pytest.mark.parametrize(("field", "value", "fragment"), [
    ("window_tokens", "lots", "'window_tokens' is 'lots'; it must be a whole number of tokens"),
    ("window_tokens", -5, "'window_tokens' is -5"),
    ("model", "gpt\x1b[2J\x1b]0;owned\x07", "'model' is not a plain name"),
])
def test_a_recordings_header_with_a_bad_field_is_one_line(tmp_path, field, value, fragment):
    recording = tmp_path / "bad.jsonl"
    ws = Workspace.create(tmp_path / "ws", tmp_path / "scratch", tmp_path / "archives")
    make_agent("v1", model=get_model("offline", record=recording), workspace=ws).send("List ChartBook dataframes")
    lines = recording.read_text().splitlines()
    lines[0] = json.dumps({**json.loads(lines[0]), field: value})
    recording.write_text("\n".join(lines) + "\n")
    with pytest.raises(ReplayMismatchError.__mro__[1]) as refused:
        get_model(f"replay:{recording}")
    assert fragment in str(refused.value) and "\x1b" not in str(refused.value) and "\n" not in str(refused.value)
