"""Which requests the new teaching model (flawedcode/models/teaching/) still leaves to the old one, and why.

Runs the corpora (tests/corpora/*.yaml: phrases and traps through v2 as their test does, the fresh
registers set and any ``fresh_*.yaml`` set directly through the model) and, when given, a bench task
file (``--tasks-file FILE``, through v2 with the real checks). Every time ``teaching.turn.decide``
hands a user message back to the old model, the reason is counted once per message:

    (a) follow-up of a turn the old model answered      (b) only reason-less declines ("words not read here")
    (c) a negative number in a condition                (d) a follow-up after a summary or digest
    (e) no run_python tool, or another catalog          (-) not read as a data request (read_message None)

    python tests/benchmarks/bench_teaching_fallbacks.py [--tasks-file FILE [--agent v3]] [--only NAME,...] [--verbose]
"""

from __future__ import annotations

import sys
import tempfile
from collections import Counter, defaultdict
from pathlib import Path

sys.path.insert(0, str(Path(__file__).parents[1]))

from langchain_core.messages import HumanMessage  # noqa: E402
from teaching_harness import CORPORA, converse, judge, workspace_in  # noqa: E402

from flawedcode.formats import requests_named  # noqa: E402
from flawedcode.models import get_model  # noqa: E402
from flawedcode.models.teaching import conversation, turn  # noqa: E402
from flawedcode.models.teaching.request import Decline, Request  # noqa: E402
from flawedcode.models.teaching.router import read_message  # noqa: E402

REASONS = {"a": "follow-up of a turn the old model answered", "b": "only reason-less declines",
           "c": "a negative number in a condition", "d": "a follow-up after a summary or digest",
           "e": "no run_python tool or another catalog", "-": "not read as a data request"}
seen: dict[str, dict[str, str]] = defaultdict(dict)  # set -> message -> reason
current = ["?"]


def why_deferred(visible, tool_names, root) -> str:
    """The reason ``turn.decide`` returned None (its checks, in its order)."""
    if turn.TOOL not in tool_names or root is not None:
        return "e"
    latest = next((i for i in range(len(visible) - 1, -1, -1) if turn._is_request(visible[i])), None)
    if latest is None:
        return "-"
    text = visible[latest].text
    earlier = [text for m in visible[:latest] if isinstance(m, HumanMessage)
               for text in ([m.text] if turn._is_request(m) else requests_named(m.text))]
    state, deferred = conversation.state_after(earlier)
    readings = read_message(text, state)
    if readings is None:
        return "-"
    builds_on = state if state is not None and readings != read_message(text, None) else None
    if builds_on is not None and deferred:
        return "a"
    if all(isinstance(r, Decline) and not r.reason for r in readings):
        return "b"
    if getattr(conversation, "NEGATIVE_NUMBER", None) is not None and conversation.NEGATIVE_NUMBER.search(text) and any(
            isinstance(r, Request) and r.condition for r in readings):
        return "c"
    if builds_on is not None and any(isinstance(m, HumanMessage) and not turn._is_request(m) for m in visible[:latest]):
        return "d"
    return "?"


original = turn.decide


def recording_decide(visible, tool_names, root):
    reply = original(visible, tool_names, root)
    latest = next((m.text for m in reversed(visible) if turn._is_request(m)), None)
    if latest is not None:
        seen[current[0]].setdefault(latest, "answered here" if reply is not None else why_deferred(visible, tool_names, root))
    return reply


turn.decide = recording_decide


def run_corpus(name: str, verbose: bool) -> tuple[int, int]:
    from test_models_offline_corpus import load_cases, run_case

    passed = 0
    cases = load_cases(name)
    for case in cases:
        outcome = run_case(case)
        passed += outcome.passed
        if verbose and not outcome.passed:
            print(f"  FAIL {name}:{case['id']}: {outcome.problems[:2]}")
    return passed, len(cases)


def run_fresh(path: Path, verbose: bool) -> tuple[int, int]:
    import yaml

    cases = yaml.safe_load(path.read_text(encoding="utf-8"))["cases"]
    right = 0
    for case in cases:
        with tempfile.TemporaryDirectory() as root:
            reply = converse(get_model("offline"), case["turns"], workspace_in(Path(root)))[-1]
        outcome = judge(case, reply)
        ok = outcome == "right" or (case["expect"] == "decline" and outcome == "declined")
        right += ok
        if verbose and not ok:
            print(f"  {outcome.upper()} {path.stem}:{case['id']}: {reply[:240]!r}")
    return right, len(cases)


def run_tasks(path: str, verbose: bool, agent: str = "v2") -> tuple[int, int]:
    from flawedcode.bench.runner import run_one
    from flawedcode.bench.tasks import load_task_file

    tasks = load_task_file(path)
    passed = 0
    steps = Counter()
    with tempfile.TemporaryDirectory() as out:
        for task in tasks:
            record = run_one(task, agent, 0, Path(out), "offline")
            passed += record.success
            for check in record.checks:
                steps["checks"] += 1
                steps["passed"] += check["passed"]
            if verbose and not record.success:
                print(f"  FAIL {task.name}: {[c for c in record.checks if not c['passed']][:1]}")
    print(f"  checks passed {steps['passed']} of {steps['checks']}")
    return passed, len(tasks)


def main(argv: list[str]) -> None:
    verbose = "--verbose" in argv
    only = argv[argv.index("--only") + 1].split(",") if "--only" in argv else None
    sets = [("phrases_dev", "corpus"), ("phrases_heldout", "corpus"), ("traps_dev", "corpus"), ("traps_heldout", "corpus"),
            *((path.stem, "fresh") for path in sorted(CORPORA.glob("fresh_*.yaml")))]
    agent = argv[argv.index("--agent") + 1] if "--agent" in argv else "v2"
    if "--tasks-file" in argv:
        sets.append((argv[argv.index("--tasks-file") + 1], "tasks"))
    for name, kind in sets:
        label = Path(name).stem
        if only and label not in only:
            continue
        current[0] = label
        runner = {"corpus": run_corpus, "fresh": lambda n, v: run_fresh(CORPORA / f"{n}.yaml", v),
                  "tasks": lambda n, v: run_tasks(n, v, agent)}[kind]
        passed, total = runner(name, verbose)
        reasons = Counter(seen[label].values())
        print(f"{label:<22} passed {passed:>3} of {total:>3}; messages {sum(reasons.values())}: answered here "
              f"{reasons['answered here']}, " + ", ".join(f"({r}) {reasons[r]}" for r in REASONS), flush=True)
        if verbose:
            for message, reason in seen[label].items():
                if reason in "abcde" or reason == "?":
                    print(f"    ({reason}) {message[:150]!r}")
    print("\n" + "; ".join(f"({key}) {text}" for key, text in REASONS.items()))


if __name__ == "__main__":
    main(sys.argv[1:])
