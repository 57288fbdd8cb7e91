"""The budget v2's wrappers manage to is one object passed to each of them; the session log only records.

- Every wrapper of a v2 agent holds the same ``ContextBudget``, and it holds the agent's own
  ``ServerCalibration`` (what the server's counts revealed), so a server that counts more tokens moves
  v2's summaries earlier through the budget, not through the log.
- No wrapper in ``flawedcode/context/`` (nor an agent version's file) reads the budget, the trigger, the calibration or a server's
  observed window back from a ``SessionLog``; the log has no such settings to read.
"""

from __future__ import annotations

import ast
from pathlib import Path

from flawedcode.agents import make_agent
from flawedcode.demo import LESSON_STEPS, run_session
from flawedcode.telemetry import EventKind, SessionLog

PACKAGE = Path(__file__).resolve().parents[1] / "flawedcode"
WRAPPERS = [*sorted((PACKAGE / "context").glob("*.py")), *sorted((PACKAGE / "agents").glob("v[0-9].py"))]
SETTINGS = ("budget_tokens", "trigger_tokens", "token_calibration", "token_factor", "truncated_window_tokens", "calibration")


def settings_read_from_a_log(source: str) -> list[tuple[int, str]]:
    """(line, name) for each ``log.<setting>`` / ``self.log.<setting>`` that ``source`` reads (writing one is recording)."""
    found = []
    for node in ast.walk(ast.parse(source)):
        if isinstance(node, ast.Attribute) and node.attr in SETTINGS and isinstance(node.ctx, ast.Load):
            owner = node.value
            if (isinstance(owner, ast.Name) and owner.id == "log") or (isinstance(owner, ast.Attribute) and owner.attr == "log"):
                found.append((node.lineno, node.attr))
    return found


def test_no_wrapper_reads_a_setting_back_from_the_log():
    read = [f"{path.name}:{line}: log.{name}" for path in WRAPPERS
            for line, name in settings_read_from_a_log(path.read_text(encoding="utf-8"))]
    assert read == [], "read it from the ContextBudget passed to the wrapper: " + ", ".join(read)
    assert not {"token_calibration", "truncated_window_tokens"} & set(vars(SessionLog()))


def test_the_check_finds_a_setting_read_from_a_log_but_not_one_recorded():
    source = "x = self.log.token_calibration\nif log.truncated_window_tokens: pass\nself.log.budget_tokens = 5\ny = budget.tokens\n"
    assert settings_read_from_a_log(source) == [(1, "token_calibration"), (2, "truncated_window_tokens")]


def test_every_wrapper_of_v2_holds_the_one_budget_and_it_holds_the_agents_calibration():
    agent = make_agent("v2", model="offline")
    budgets = {id(wrapper.budget): wrapper.budget for wrapper in agent.build_middleware() if hasattr(wrapper, "budget")}
    assert len(budgets) == 1, "one budget object for every wrapper"
    (budget,) = budgets.values()
    assert budget.calibration is agent.calibration and budget.tokens == agent.budget_tokens
    assert agent.calibration.observe in agent.log.call_observers, "the log hands the calibration each call it records"


def first_summary_tokens(token_factor: float) -> int:
    agent = make_agent("v2", model="offline")
    agent.calibration.token_factor = token_factor  # as if the server had counted this many tokens per flawedcode token
    run_session(agent, LESSON_STEPS)
    return next(event.tokens_before for event in agent.events if event.kind == EventKind.SUMMARIZE)


def test_a_server_that_counts_more_tokens_moves_the_summary_earlier_through_the_budget():
    assert first_summary_tokens(1.6) < first_summary_tokens(1.0)
