"""Run the red-team sessions (tests/corpora/redteam_sessions.yaml) and print every turn for a hand judge.

Not a test. The bench runs the YAML sessions; this prints, per agent and session, each ask, the tool
calls it made (from the live messages and, for digested or summarized turns, the archives), the reply
and its checks. ``--repl`` also runs the one session the bench cannot: the student fixes analyze.py by
hand between two turns (flawedcode chat, fed one line at a time, the edit made before turn 2).

    .venv/bin/python tests/benchmarks/bench_redteam_sessions.py --agents v2,v3 --out /tmp/rs
    .venv/bin/python tests/benchmarks/bench_redteam_sessions.py --agents v2 --model offline:4096 --tasks rs_long_small_window
    .venv/bin/python tests/benchmarks/bench_redteam_sessions.py --repl --agents v2,v3 --out /tmp/rs
    .venv/bin/python tests/benchmarks/bench_redteam_sessions.py --file tests/corpora/redteam_chats.yaml --out /tmp/rc

Truths: the `#` comments beside each step in the YAML (pandas on the parquet files; the demo project run
before and after the one-line fix). For the REPL session, ``REPL_TRUTHS`` below.
"""

from __future__ import annotations

import argparse
import json
import re
import subprocess
import sys
import tempfile
import time
from pathlib import Path

import yaml

ROOT = Path(__file__).parents[2]
SESSIONS = ROOT / "tests" / "corpora" / "redteam_sessions.yaml"
STATUS = re.compile(r"^\[v\d\] context ", re.MULTILINE)
REPL_TURNS = [  # (the user's line, the truth a hand judge accepts)
    ("run the tests", "2 failed, 2 passed: the two volatility tests"),
    ("ok I fixed annualized_volatility myself, rerun the tests", "4 passed (the file was fixed by hand before this turn)"),
    ("what does the report print now?", "Annualized volatility: 25.0% (last close 98.49, 20-day MA 95.55)"),
    ("what was the volatility before my fix?", "13550.3% (or 135.50 as a fraction), from turn 1's code"),
    ("which tests failed the first time?", "the two volatility tests (2 of 4), not today's run"),
    ("how many tokens are we at?", "the REPL's own count; nothing fallen out only if no summary or digest happened"),
]
REPL_TRUTHS = {say: truth for say, truth in REPL_TURNS}
FIX = ("statistics.stdev(prices)", "statistics.stdev(daily_returns(prices))")


def turn_calls(out: Path, record: dict) -> list[list[str]]:
    """The tool calls of each human turn of one bench run."""
    workspace = out / "workspaces" / record["agent"] / record["task"] / str(record["run"])
    archived: dict[int, tuple[str, list[str]]] = {}
    for path in sorted((workspace / "archives").glob("*/*.md")):
        for found in re.finditer(r"### \[(\d+)\] (\w+)[^\n]*\n(.*?)(?=\n### \[\d+\] |\Z)", path.read_text(), re.S):
            archived[int(found.group(1))] = (found.group(2), re.findall(r"^-> (.*)$", found.group(3), re.M))
    events = [archived[key] for key in sorted(archived)]
    calls: list[list[str]] = [[]] if events and events[0][0] != "human" else []  # the pinned first ask is never archived
    for role, made in events:
        if role == "human":
            calls.append([])
        elif calls:
            calls[-1] += made
    transcript = json.loads((out / record["transcript"]).read_text())
    live = []
    for message in transcript["messages"]:
        data = message.get("data", message)
        if message.get("type") == "human" and str(data.get("content")).startswith("[Conversation summary"):
            continue
        live.append((message.get("type"), [f"{call['name']}({json.dumps(call['args'])})" for call in data.get("tool_calls") or []]))
    humans = [index for index, (role, _) in enumerate(live) if role == "human"]
    missing = len(record["replies"]) - len(calls)
    tail = humans[-missing:] if missing > 0 else []
    for number, index in enumerate(tail):
        end = tail[number + 1] if number + 1 < len(tail) else len(live)
        calls.append([call for _, made in live[index:end] for call in made])
    return calls


def print_runs(out: Path, sessions_file: Path = SESSIONS) -> None:
    tasks = {task["name"]: task for task in yaml.safe_load(sessions_file.read_text())["tasks"]}
    for line in (out / "runs.jsonl").read_text().splitlines():
        record = json.loads(line)
        steps = [step if isinstance(step, dict) else {"say": step} for step in tasks[record["task"]]["steps"]]
        calls = turn_calls(out, record)
        print(f"\n#### {record['agent']} {record['task']} (error: {record['error']})")
        for number, (step, reply) in enumerate(zip(steps, record["replies"])):
            print(f"--- [{number + 1}] USER: {step['say']}")
            if number < len(calls):
                print("    CALLS:", "; ".join(call[:160] for call in calls[number])[:700])
            print("    REPLY:", reply.strip()[:1500].replace("\n", "\n           "))
            for check in (check for check in record["checks"] if check["step"] == number):
                print("    CHECK", "PASS" if check["passed"] else "FAIL", check["kind"], check["expected"])


def run_bench(agents: str, model: str | None, tasks: list[str] | None, out: Path, sessions_file: Path = SESSIONS) -> None:
    sessions = sessions_file
    if tasks:
        document = yaml.safe_load(sessions_file.read_text())
        document["tasks"] = [task for task in document["tasks"] if task["name"] in tasks]
        sessions = out / "sessions.yaml"
        out.mkdir(parents=True, exist_ok=True)
        sessions.write_text(yaml.safe_dump(document, sort_keys=False))
    command = [sys.executable, "-m", "flawedcode", "bench", "--tasks-file", str(sessions), "--agents", agents,
               "--runs", "1", "--no-resume", "--out", str(out)]
    subprocess.run(command + (["--model", model] if model else []), check=True, stdout=subprocess.DEVNULL)
    print_runs(out, sessions_file)


def run_repl(agent: str, model: str, out: Path) -> None:
    """The hand-fix session through `flawedcode chat`, one line at a time, the fix made before turn 2."""
    folder = Path(tempfile.mkdtemp(prefix=f"rs-repl-{agent}-", dir=out))
    env = {"FLAWEDCODE_SCRATCH_DIR": str(folder / "scratch"), "FLAWEDCODE_ARCHIVE_DIR": str(folder / "archives")}
    import os

    chat = subprocess.Popen([sys.executable, "-m", "flawedcode", "chat", "--agent", agent, "--model", model,
                             "--workspace", str(folder / "ws")], stdin=subprocess.PIPE, stdout=(folder / "out.txt").open("w"),
                            stderr=subprocess.STDOUT, text=True, env={**os.environ, **env})
    for number, (say, _) in enumerate(REPL_TURNS, start=1):
        if number == 2:
            script = folder / "ws" / "analyze.py"
            script.write_text(script.read_text().replace(*FIX))
        chat.stdin.write(say + "\n")
        chat.stdin.flush()
        deadline = time.monotonic() + 120
        while len(STATUS.findall((folder / "out.txt").read_text())) < number and time.monotonic() < deadline:
            time.sleep(0.2)
    chat.stdin.write("quit\n")
    chat.stdin.close()
    chat.wait(timeout=60)
    print(f"\n#### REPL {agent} {model} ({folder / 'out.txt'})")
    print((folder / "out.txt").read_text())
    print("truths:", json.dumps(REPL_TRUTHS, indent=1))


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--agents", default="v2,v3")
    parser.add_argument("--model", default=None, help="e.g. offline:4096 (default: the bench's)")
    parser.add_argument("--tasks", default=None, help="comma-separated session names (default: all)")
    parser.add_argument("--out", default=None)
    parser.add_argument("--file", type=Path, default=SESSIONS, help="the sessions YAML (default: tests/corpora/redteam_sessions.yaml)")
    parser.add_argument("--repl", action="store_true", help="run the hand-fix session through flawedcode chat")
    args = parser.parse_args()
    out = Path(args.out or tempfile.mkdtemp(prefix="redteam-sessions-")).resolve()
    out.mkdir(parents=True, exist_ok=True)
    if args.repl:
        for agent in args.agents.split(","):
            run_repl(agent, args.model or "offline", out)
    else:
        run_bench(args.agents, args.model, args.tasks.split(",") if args.tasks else None, out / "bench", args.file.resolve())


if __name__ == "__main__":
    main()
