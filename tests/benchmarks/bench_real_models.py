"""Real-model robustness, measured: v2 against loopback imitations of real servers (prints figures, asserts nothing).

    .venv/bin/python tests/benchmarks/bench_real_models.py

- a vLLM-style server with a 4,096-token window (published as ``max_model_len``),
  the default 8,192-token budget, the benchmark's 54-turn long session:
  failed turns, the budget used, peak context, server errors;
- the same session with every summary failing (HTTP 500, HTTP 400, a blank
  summary): summary attempts per agent call, calls over budget, compactions;
- an Ollama-style server that silently truncates at 3,000 tokens: the call at
  which the truncation was noticed, and the goal question's answer;
- servers that never truncate but count otherwise (a tokenizer counting tool output
  1.2x and prose 0.8x, a count of only the uncached part, a placeholder usage):
  truncated calls and the budget after 14 turns, v1 and v2 (both must stay 0 and 8,192);
- a server trickling its answer 8 bytes every 0.3 s against ``--timeout 2``: when
  the request failed (a deadline: about 2 s).

The servers are ``tests/openai_imitation.py`` (the offline model answers behind
an OpenAI-compatible API), so the figures measure flawedcode's handling, not a model.
"""

from __future__ import annotations

import sys
import tempfile
import time
from collections import Counter
from pathlib import Path

sys.path.insert(0, str(Path(__file__).resolve().parents[1]))  # tests/, for openai_imitation

from openai_imitation import ImitationServer  # noqa: E402

from flawedcode import notices  # noqa: E402
from flawedcode.agents import AgentError, make_agent  # noqa: E402
from flawedcode.bench.tasks import load_tasks  # noqa: E402
from flawedcode.demo import LESSON_STEPS  # noqa: E402
from flawedcode.models import get_model  # noqa: E402
from flawedcode.tools import Workspace  # noqa: E402

LONG_SESSION = [step.say for step in load_tasks(["long_session"])[0].all_steps()]


def run_v2(server: ImitationServer, steps: list[str], folder: Path) -> tuple[object, list[str], int, float]:
    model = get_model(f"openai:{server.model}", base_url=server.base_url, max_retries=0, timeout_seconds=30)
    agent = make_agent("v2", model=model, workspace=Workspace.create(folder / "ws", folder / "scratch", folder / "archives"))
    started, replies, failed = time.perf_counter(), [], 0
    for step in steps:
        try:
            replies.append(agent.send(step))
        except AgentError:
            failed += 1
            replies.append("")
    return agent, replies, failed, time.perf_counter() - started


def small_window(folder: Path) -> None:
    with ImitationServer(style="vllm", model="meta-llama/Llama-3.1-8B-Instruct", window=4_096, publish_window=True) as server:
        agent, replies, failed, seconds = run_v2(server, LONG_SESSION, folder)
    totals = agent.log.totals()
    errors = sum(1 for status, _ in server.responses if status != 200)
    print(f"4,096-token vLLM server, {len(LONG_SESSION)} turns: {failed} failed turns, {errors} server errors; "
          f"budget 8,192 -> {agent.budget_tokens:,}; peak context {totals['peak_context_tokens']:,}; "
          f"calls over budget {totals['calls_over_budget']}; {totals['agent_calls']} agent calls, "
          f"{totals['summaries']} summaries; goal kept: {'List ChartBook dataframes' in replies[-1]}; {seconds:.1f} s")


def failing_summaries(folder: Path) -> None:
    for failure in ("500", "400", "empty"):
        with ImitationServer(fail_summaries=failure) as server:
            agent, replies, failed, seconds = run_v2(server, LONG_SESSION, folder / failure)
        totals = agent.log.totals()
        kinds = Counter(event.kind for event in agent.events)
        calls = totals["agent_calls"]
        print(f"every summary failing ({failure:>5}): {server.summary_requests} summary attempts / {calls} agent calls "
              f"= {server.summary_requests / calls:.3f} per call; calls over budget {totals['calls_over_budget']}; "
              f"peak {totals['peak_context_tokens']:,} of 8,192; compactions {kinds['compact']}; failed turns {failed}; "
              f"goal kept: {'List ChartBook dataframes' in replies[-1]}; {seconds:.1f} s")


def truncating_server(folder: Path) -> None:
    steps = [*LESSON_STEPS[:-1], "Load 50 rows of EFFR data", "Get docs for fed_yield_curve", LESSON_STEPS[-1]]
    with ImitationServer(style="ollama", model="granite3.3", window=3_000, truncate=True) as server:
        agent, replies, failed, _ = run_v2(server, steps, folder)
    first = next((call for call in agent.token_log if call.truncated), None)
    noticed = (f"noticed at agent call {first.index} ({first.reported_input_tokens:,} reported of "
               f"{first.input_tokens:,} sent)" if first else "never noticed")
    print(f"Ollama-style server truncating at 3,000 tokens: {noticed}; budget then {agent.log.budget_tokens:,}; "
          f"truncated calls {agent.log.totals()['truncated_calls']}; goal answer: {replies[-1][:70]!r}")


def no_false_alarms(folder: Path) -> None:
    steps = [*LESSON_STEPS, "Load 50 rows of EFFR data", "Get docs for fed_yield_curve", "Load 30 rows of SOFR data",
             "Get docs for money_markets/effr", "What was my original goal?"]
    servers = {"tool output 1.2x, prose 0.8x": {"role_scales": {"tool": 1.2, "system": 0.8, "human": 0.8, "ai": 0.8}},
               "counts only the uncached part": {"usage": "uncached"}, "placeholder usage": {"usage": "fixed"}}
    for label, settings in servers.items():
        for version in ("v1", "v2"):
            notices.forget()
            with ImitationServer(**settings) as server:
                model = get_model(f"openai:{server.model}", base_url=server.base_url, max_retries=0, timeout_seconds=30)
                where = folder / label.replace(" ", "-") / version
                agent = make_agent(version, model=model, workspace=Workspace.create(where / "ws", where / "s", where / "a"))
                for step in steps:
                    try:
                        agent.send(step)
                    except AgentError:
                        pass
            print(f"never truncating, {label}, {version}: truncated calls {agent.log.totals()['truncated_calls']}, "
                  f"budget {agent.log.budget_tokens:,}")


def trickling_server() -> None:
    with ImitationServer(trickle=(1,), trickle_interval=0.3) as server:
        model = get_model(f"openai:{server.model}", base_url=server.base_url, max_retries=0, timeout_seconds=2)
        started = time.perf_counter()
        try:
            model.invoke("List ChartBook dataframes")
            outcome = "answered"
        except Exception as error:  # noqa: BLE001 - a figure, whatever failed
            outcome = type(error).__name__
        print(f"trickling server, --timeout 2: {outcome} after {time.perf_counter() - started:.1f} s")


if __name__ == "__main__":
    with tempfile.TemporaryDirectory(prefix="flawedcode-bench-real-") as tmp, notices.capture():
        small_window(Path(tmp) / "small")
        failing_summaries(Path(tmp) / "failing")
        truncating_server(Path(tmp) / "truncating")
        no_false_alarms(Path(tmp) / "no-false-alarms")
        trickling_server()
