"""The offline model against its phrase and trap corpora (tests/corpora/, format in README.md there).

Every case is sent to the 8,192-token offline model directly, turn by turn, with the agents' system
prompt and the real tools in a fresh workspace, and no agent (tests/teaching_harness.py; ``run_python``
runs the model's code in this process). ``AGENT_CASES`` run end to end through real agents (v0, v1
and v2) as well. The developed parts must pass in full; the held-out parts,
set aside before any rule changed, must pass at least ``HELDOUT_FLOOR`` (scored beside this file under xdist by
``test_models_offline_heldout.py``, with this file's ``run_case``). Run this file as a script
for the report (pass rates per part and per intent, failures of the developed parts):

    .venv/bin/python tests/test_models_offline_corpus.py
"""

from __future__ import annotations

import re
import sys
import tempfile
from collections import Counter
from dataclasses import dataclass, field
from functools import cache
from pathlib import Path
from typing import Any

import pytest
import yaml

CORPORA = Path(__file__).parent / "corpora"
HELDOUT_FLOOR = 0.85
"""The pass rate the held-out parts must reach (they are never tuned against)."""
TOLERANCE = 0.00006
"""A figure matches when a number in the reply is this close (4 decimals, rounded)."""

DECLINE = re.compile(
    r"\b(?:can't|cannot|can not|couldn't|could not|don't know|do not know|not able|unable|no (?:rows|data|such|column|"
    r"dataframe|series|tool|match)|isn't|is not|not in|doesn't|does not|only covers|outside|not available|don't have|"
    r"do not have|don't understand|not sure what)\b",
    re.IGNORECASE,
)
OFFER = re.compile(r"\b(?:I can|you can|instead|available|ask me|try|covers|which)\b", re.IGNORECASE)
CLARIFY = re.compile(r"\b(?:which|what do you mean|do you mean|did you mean|could you|please (?:say|name|tell)|specify)\b",
                     re.IGNORECASE)
FIGURE = re.compile(r"(?<![\w.])-?\d+\.\d+(?![\w.])")
NUMBER = re.compile(r"(?<![\w.])-?\d{1,3}(?:,\d{3})+(?:\.\d+)?(?![\w])|(?<![\w.])-?\d+(?:\.\d+)?(?![\w])")


# ----------------------------------------------------------------------------- loading the corpora


def load_cases(name: str) -> list[dict[str, Any]]:
    """A corpus's cases, read by libyaml's safe loader where it is built in (8 times faster; the same cases)."""
    loader = getattr(yaml, "CSafeLoader", yaml.SafeLoader)
    return yaml.load((CORPORA / f"{name}.yaml").read_text(encoding="utf-8"), Loader=loader)["cases"]


# ----------------------------------------------------------------------------- expected figures (pandas)


@cache
def _frame(key: str):
    from flawedcode.catalog import Catalog

    pipeline, dataframe = key.split("/")
    return Catalog().load(pipeline, dataframe)


def _between(frame, start: str | None, end: str | None):
    import pandas as pd

    dates = pd.to_datetime(frame["date"])
    keep = pd.Series(True, index=frame.index)
    if start:
        keep &= dates >= pd.Timestamp(start)
    if end:
        keep &= dates <= pd.Timestamp(end)
    return frame[keep].sort_values("date").reset_index(drop=True)


def _series(spec: dict[str, Any], ref: str, column: str):
    frame = _between(_frame(ref), spec.get("start"), spec.get("end"))
    return frame[["date", column]].rename(columns={column: "value"})


def expected(spec: dict[str, Any]) -> float | int | str:
    """The figure a value spec names, computed here with pandas."""
    import numpy as np

    main = _series(spec, spec["frame"], spec["column"])
    if "minus" in spec or "other" in spec:
        ref, column = (spec.get("minus") or spec["other"]).split(":")
        other = _series(spec, ref, column)
        joined = main.merge(other, on="date", suffixes=("", "_other"))
        if "minus" in spec:
            main = joined.assign(value=joined["value"] - joined["value_other"])[["date", "value"]]
        else:
            main = joined
    if spec.get("last"):
        main = main.tail(spec["last"])
    main = main.dropna(subset=["value"])
    values = main["value"]
    stat = spec["stat"]
    if "above" in spec:
        return int((values > spec["above"]).sum())
    if "below" in spec:
        return int((values < spec["below"]).sum())
    if stat == "count":
        return int(values.count())
    if stat in ("max_date", "min_date"):
        index = values.idxmax() if stat == "max_date" else values.idxmin()
        return f"{main.loc[index, 'date']:%Y-%m-%d}"
    if stat == "corr":
        return float(np.corrcoef(main["value"], main["value_other"])[0, 1])
    computed = {
        "mean": values.mean, "median": values.median, "min": values.min, "max": values.max,
        "std": lambda: values.std(ddof=1), "latest": lambda: values.iloc[-1], "first": lambda: values.iloc[0],
        "change": lambda: values.iloc[-1] - values.iloc[0],
    }
    if stat in computed:
        value = float(computed[stat]())
    elif re.fullmatch(r"p\d{1,2}", stat):
        value = float(np.percentile(values, int(stat[1:])))
    else:
        raise ValueError(f"unknown stat {stat!r}")
    return value * spec.get("scale", 1)


def numbers_in(text: str) -> list[float]:
    return [float(match.replace(",", "")) for match in NUMBER.findall(text)]


def states(reply: str, value: float | int | str) -> bool:
    if isinstance(value, str):
        return value in reply
    if isinstance(value, int):
        return any(number == value for number in numbers_in(reply))
    return any(abs(number - value) <= TOLERANCE for number in numbers_in(reply))


# ----------------------------------------------------------------------------- running a case


@dataclass
class Outcome:
    case: str
    problems: list[str] = field(default_factory=list)
    transcript: list[str] = field(default_factory=list)

    @property
    def passed(self) -> bool:
        return not self.problems


def _normal(text: str) -> str:
    return " ".join(text.split()).casefold()


def _arguments_match(expected_args: dict[str, Any], actual: dict[str, Any]) -> bool:
    for key, want in (expected_args or {}).items():
        have = actual.get(key)
        if isinstance(want, str) and want.startswith("~"):
            if not isinstance(have, str) or want[1:].casefold() not in have.casefold():
                return False
        elif isinstance(want, list):
            if not isinstance(have, list) or set(want) != set(have):
                return False
        elif have != want:
            return False
    return True


def _call_matches(expected_call: dict[str, Any], name: str, args: dict[str, Any]) -> bool:
    (tool, wanted), = expected_call.items()
    if tool == "data":
        pipeline, dataframe = wanted["frame"].split("/")
        columns = wanted.get("columns") or []
        if name == "chartbook_load_data":
            return (args.get("pipeline"), args.get("dataframe")) == (pipeline, dataframe) and set(columns) <= set(
                args.get("columns") or columns)
        if name == "run_python":
            code = str(args.get("code", ""))
            return pipeline in code and dataframe in code and all(column in code for column in columns)
        return False
    return name == tool and _arguments_match(wanted, args)


def _calls_found(expected_calls: list[dict[str, Any]], calls: list[tuple[str, dict[str, Any]]]) -> bool:
    """In order; one run_python script may meet several ``data`` entries (it can load several dataframes)."""
    position = 0
    for expected_call in expected_calls:
        while position < len(calls) and not _call_matches(expected_call, *calls[position]):
            position += 1
        if position == len(calls):
            return False
        if not ("data" in expected_call and calls[position][0] == "run_python"):
            position += 1
    return True


def _new_agent(version: str, window: int, root: Path):
    from flawedcode.agents import make_agent
    from flawedcode.models import OfflineModel
    from flawedcode.tools import Workspace

    workspace = Workspace.create(root / "workspace", scratch_dir=root / "scratch", archive_dir=root / "archives")
    return make_agent(version, model=OfflineModel(max_input_tokens=window), workspace=workspace), workspace


def _turn(agent, say: str) -> tuple[str, list[tuple[str, dict[str, Any]]]]:
    from langchain_core.messages import AIMessage, HumanMessage

    reply = agent.send(say)
    asked = max((i for i, m in enumerate(agent.messages) if isinstance(m, HumanMessage) and m.content == say), default=-1)
    calls = [(call["name"], call["args"]) for m in agent.messages[asked + 1:] if isinstance(m, AIMessage)
             for call in m.tool_calls]
    return reply, calls


def check_turn(turn: dict[str, Any], reply: str, calls: list, workspace_root: Path) -> list[str]:
    problems = []
    if turn.get("calls") and not _calls_found(turn["calls"], calls):
        problems.append(f"calls {turn['calls']} not found in {calls}")
    if turn.get("only_calls") and len(calls) != len(turn.get("calls", [])):
        problems.append(f"expected only {turn.get('calls')}, made {calls}")
    if turn.get("no_calls") and calls:
        problems.append(f"expected no tool call, made {calls}")
    problems += [f"fact {fact!r} missing" for fact in turn.get("facts", []) if _normal(str(fact)) not in _normal(reply)]
    problems += [f"no match for /{pattern}/" for pattern in turn.get("regex", [])
                 if not re.search(pattern, reply, re.IGNORECASE)]
    for spec in turn.get("values", []):
        value = expected(spec)
        if not states(reply, value):
            problems.append(f"figure {value!r} missing ({spec})")
    for spec in turn.get("absent_values", []):
        value = expected(spec)
        if states(reply, value):
            problems.append(f"figure {value!r} should not be stated ({spec})")
    problems += [f"file {path} missing" for path in turn.get("files", []) if not (workspace_root / path).exists()]
    return problems


def check_trap(case: dict[str, Any], reply: str) -> list[str]:
    problems = []
    figures = FIGURE.findall(reply)
    if figures:
        problems.append(f"states figures {figures[:4]}")
    if case["expect"] == "decline":
        if not DECLINE.search(reply):
            problems.append("does not say what it cannot do")
        if not OFFER.search(reply):
            problems.append("does not say what it can do instead")
    elif not ("?" in reply and CLARIFY.search(reply)):
        problems.append("does not ask which one is meant")
    return problems


@cache
def _system_prompt() -> str:
    from flawedcode.config import V2Config

    return V2Config().system_prompt


def _new_chat(window: int, root: Path, memory: bool = True):
    """The model called directly (no agent): each turn appended to one message list, or alone without ``memory``."""
    from teaching_harness import Chat, fast_workspace, offline_model

    from flawedcode.context import ConversationArchive, make_search_archive_tool

    workspace = fast_workspace(root)
    archive = make_search_archive_tool(ConversationArchive(workspace.archive_dir, "corpus"))  # v2's ninth tool
    chat = Chat(offline_model(window), workspace, system=_system_prompt(), more_tools=(archive,))

    def turn(say: str) -> tuple[str, list[tuple[str, dict[str, Any]]]]:
        if not memory:
            chat.messages = chat.messages[:1]  # the system prompt only: each turn starts from nothing, as v0's do
        return chat.send(say), chat.calls

    return turn, workspace


def run_case(case: dict[str, Any], version: str | None = None) -> Outcome:
    """One case, turn by turn: on the model directly, or with ``version`` (v0, v1, v2) through a real agent."""
    from flawedcode.agents import AgentError

    outcome = Outcome(case["id"])
    with tempfile.TemporaryDirectory(prefix="flawedcode-corpus-") as folder:
        if version is None:
            send, workspace = _new_chat(case.get("window", 8192), Path(folder), memory=case.get("agent") != "v0")
        else:
            agent, workspace = _new_agent(version, case.get("window", 8192), Path(folder))

            def send(say: str) -> tuple[str, list[tuple[str, dict[str, Any]]]]:
                return _turn(agent, say)

        turns = case["turns"]
        for number, turn in enumerate(turns):
            try:
                reply, calls = send(turn["say"])
            except AgentError as error:  # a failed turn is a failed case, not a crashed corpus
                outcome.problems.append(str(error))
                break
            outcome.transcript.append(f"> {turn['say']}\n  calls: {calls}\n  reply: {reply[:900]}")
            outcome.problems += check_turn(turn, reply, calls, workspace.root)
            if "expect" in case and number == len(turns) - 1:
                outcome.problems += check_trap(case, reply)
    return outcome


# ----------------------------------------------------------------------------- the tests

PHRASES_DEV = load_cases("phrases_dev")
TRAPS_DEV = load_cases("traps_dev")


def test_the_corpora_are_big_enough_and_a_third_is_held_out():
    phrases = PHRASES_DEV + load_cases("phrases_heldout")
    traps = TRAPS_DEV + load_cases("traps_heldout")
    assert len(phrases) >= 300 and len(traps) >= 50
    # A third of each corpus was set aside before the rules changed; requests added while developing
    # go to the developed part, so the held-out part stays at least 30% of the whole.
    assert len(load_cases("phrases_heldout")) >= 0.3 * len(phrases)
    assert len(load_cases("traps_heldout")) >= 0.3 * len(traps)
    ids = [case["id"] for case in phrases + traps]
    assert len(ids) == len(set(ids))
    assert {case["intent"] for case in PHRASES_DEV} == {case["intent"] for case in phrases}


AGENT_CASES = {"phrases_dev": ["stat-01"], "traps_dev": ["trap-unknown-01"]}
"""Cases also run end to end through real agents: a phrase on v2, a trap on v0, v1 and v2."""


@pytest.mark.parametrize("case", PHRASES_DEV, ids=[case["id"] for case in PHRASES_DEV])
def test_developed_phrases(case):
    outcome = run_case(case)
    assert outcome.passed, "\n".join(outcome.problems + outcome.transcript)


@pytest.mark.parametrize("case", TRAPS_DEV, ids=[case["id"] for case in TRAPS_DEV])
def test_developed_traps(case):
    outcome = run_case(case)
    assert outcome.passed, "\n".join(outcome.problems + outcome.transcript)


TRAPS_OF_SEVERAL_TURNS = [case for case in TRAPS_DEV if len(case["turns"]) > 1]


@pytest.mark.parametrize("case", TRAPS_OF_SEVERAL_TURNS, ids=[case["id"] for case in TRAPS_OF_SEVERAL_TURNS])
def test_developed_traps_of_several_turns_each_turn_alone(case):
    """v1 and v2 send the whole conversation, v0 each turn alone: a trap is declined either way."""
    outcome = run_case({**case, "agent": "v0"})
    assert outcome.passed, "\n".join(outcome.problems + outcome.transcript)


@pytest.mark.parametrize(("part", "case_id", "version"),
                         [(part, case_id, version) for part, ids in AGENT_CASES.items() for case_id in ids
                          for version in (["v2"] if part.startswith("phrases") else ["v0", "v1", "v2"])])
def test_cases_through_real_agents(part, case_id, version):
    case = next(case for case in load_cases(part) if case["id"] == case_id)
    outcome = run_case(case, version)
    assert outcome.passed, "\n".join(outcome.problems + outcome.transcript)


# ----------------------------------------------------------------------------- the report


def report(show_failures: bool = True) -> None:
    parts = [("phrases_dev", None), ("phrases_heldout", None)]
    parts += [(name, version) for name in ("traps_dev", "traps_heldout") for version in ("v0", "v1", "v2")]
    for name, version in parts:
        cases = load_cases(name)
        outcomes = [run_case(case, version) for case in cases]
        passed = sum(outcome.passed for outcome in outcomes)
        label = f"{name} ({version})" if version else name
        print(f"{label:21} {passed:>4}/{len(cases):<4} {passed / len(cases):6.1%}")
        held_out = name.endswith("heldout")
        by_kind: Counter = Counter()
        failed_kind: Counter = Counter()
        for case, outcome in zip(cases, outcomes):
            kind = case.get("intent") or case.get("kind")
            by_kind[kind] += 1
            failed_kind[kind] += not outcome.passed
        print("   " + ", ".join(f"{kind} {by_kind[kind] - failed_kind[kind]}/{by_kind[kind]}" for kind in sorted(by_kind)))
        if show_failures and not held_out:  # never look at held-out failures
            for outcome in outcomes:
                if not outcome.passed:
                    print(f"  FAIL {outcome.case}: {'; '.join(outcome.problems)[:400]}")


if __name__ == "__main__":
    report(show_failures="--quiet" not in sys.argv)
