"""Lesson 5's checks: recall by position, a cache-friendly strategy of your own, and why caches like append-only."""

from __future__ import annotations

from collections.abc import Callable, Sequence
from functools import cache
from typing import Any

from langchain_core.messages import AIMessage, ToolMessage

from flawedcode.lab.window import text_of

from .core import Outcome, answer_check, attempted, exercise, function_of, require, run_check, size_word

MASK_KEEP = 2
"""The exercise keeps the last 2 tool results verbatim."""
MASK_STEPS = 14
"""How many turns of the long session the check runs your strategy through."""
SHARE_TOLERANCE = 0.005
"""A share rounded to two places is right: 0.33 for one third."""
BENCH_TASK = "goal_long"
"""The bench task 5.4 runs your strategy on, beside v1 (its first request falls out of v1's window at 8K)."""
STRATEGY_PROBE_STEPS = 5
"""5.4 first runs your strategy through this many of the task's requests: a non-answer fails in seconds."""

exercise("5.1", "recall in the middle",
         "recall_runs is a list of dicts: {'agent', 'position', 'recalled'}; keep v1's runs at position 'middle'.",
         "The share is recalled runs / all of those runs.",
         "middle = [run for run in recall_runs if run['agent'] == 'v1' and run['position'] == 'middle']\n"
         "middle_recall = sum(run['recalled'] for run in middle) / len(middle)")
exercise("5.2", "build an observation mask",
         "Walk the messages; count the ToolMessages from the end; the ones before the last `keep` get new content.",
         "Keep every message and its tool_call_id (a result without its call breaks the request): copy, do not drop.",
         "def mask(messages, keep):\n"
         "    results = [i for i, m in enumerate(messages) if isinstance(m, ToolMessage)]\n"
         "    old = set(results[:-keep] if keep else results)\n"
         "    return [m.model_copy(update={'content': '[cleared]'}) if i in old else m for i, m in enumerate(messages)]")
exercise("5.4", "your strategy through the bench",
         "Subclass AgentV1 with a `version` of your own; its send(text) changes self.messages, then does what v1's does.",
         "v1's send is `return self.run_turn(self.messages, text)`: mask the history first (your `mask`, keep 2).",
         "class MaskingAgent(AgentV1):\n"
         "    version = 'v1-masked'\n\n"
         "    def send(self, text):\n"
         "        self.messages = mask(list(self.messages), 2)\n"
         "        return self.run_turn(self.messages, text)")
exercise("5.3", "why append-only caches well",
         "A provider's cache serves the longest prefix a request shares with an earlier one.",
         "Two statements are true.")


def check_middle_recall(recall_runs: Sequence[dict[str, Any]], middle_recall: float) -> Outcome:
    """5.1: v1's recall of a fact planted in the middle, from your own runs."""
    def body() -> str:
        attempted(recall_runs=recall_runs, middle_recall=middle_recall)
        require(isinstance(middle_recall, int | float) and not isinstance(middle_recall, bool),
                "`middle_recall` should be a share between 0 and 1")
        middle = [run for run in recall_runs if run.get("agent") == "v1" and run.get("position") == "middle"]
        require(bool(middle), "recall_runs has no v1 run at position 'middle': run the cell that builds it first")
        expected = sum(bool(run["recalled"]) for run in middle) / len(middle)
        require(0 <= middle_recall <= 1, "a share is between 0 and 1 (33% is 0.33)")
        require(abs(middle_recall - expected) <= SHARE_TOLERANCE, f"{size_word(middle_recall, expected)}: count v1's middle runs only")
        return (f"v1 used a fact in the middle of its long context in {expected:.0%} of {len(middle)} runs; "
                "the attention-decay rule predicts about 54% at 4K tokens and less as the context grows.")
    return run_check("5.1", body)


def mask_problem(mask: Callable[..., Any], messages: list[Any], keep: int) -> str | None:
    """Why ``mask(messages, keep)`` is not an observation mask, or None."""
    masked = mask(list(messages), keep)
    if masked is None or masked is Ellipsis:
        return "not tried yet: mask(...) still returns `...`; write its body"
    if len(masked) != len(messages):
        return f"mask returned {len(masked)} messages for {len(messages)}: keep every message, change only old results"
    results = [i for i, m in enumerate(messages) if isinstance(m, ToolMessage)]
    for i, (before, after) in enumerate(zip(messages, masked)):
        if type(before) is not type(after):
            return f"message {i} changed kind ({type(before).__name__} -> {type(after).__name__})"
        if isinstance(before, ToolMessage) and after.tool_call_id != before.tool_call_id:
            return f"the result at {i} lost its tool_call_id: a result must still answer its call"
        if isinstance(before, AIMessage) and after.tool_calls != before.tool_calls:
            return f"the AI message at {i} lost its tool calls"
    recent = set(results[-keep:]) if keep else set()
    for i in results:
        same = masked[i].content == messages[i].content
        if i in recent and not same:
            return f"one of the last {keep} results was changed: they stay word for word"
        if i not in recent and same and len(str(messages[i].content)) > 20:
            return "an older tool result was left as it was: every result before the last `keep` is cleared"
    return None


def check_mask(mask: Any, model: Any = None) -> Outcome:
    """5.2: your ``mask(messages, keep)`` on a real history, then run through the bench's long session on v1."""
    def body() -> str:
        from flawedcode.bench.tasks import load_tasks
        from flawedcode.lessons import lesson_agent
        from flawedcode.prompt_cache import analyze, weighted_input_tokens

        attempted(mask=mask)
        function_of(mask, "mask", "messages, keep")
        steps = load_tasks(["long_session"])[0].all_steps()[:MASK_STEPS]
        plain = lesson_agent("v1", model=model, watch=False, name="unmasked")
        masked = lesson_agent("v1", model=model, watch=False, name="masked")
        for step in steps:
            plain.send(step.say)
            masked.send(step.say)
            problem = mask_problem(mask, masked.messages, MASK_KEEP)
            require(problem is None, str(problem))
            masked.messages = list(mask(list(masked.messages), MASK_KEEP))
        raw = {name: agent.log.totals()["input_tokens"] for name, agent in (("plain", plain), ("masked", masked))}
        cached = {name: weighted_input_tokens(analyze(agent.log.calls)) for name, agent in (("plain", plain), ("masked", masked))}
        return (f"masking all but the last {MASK_KEEP} results, v1 sent {raw['masked'] / raw['plain']:.0%} of its unmasked input "
                f"over {MASK_STEPS} turns; cache-weighted, {cached['masked'] / cached['plain']:.0%}: each mask rewrites the "
                "middle of the prompt, so the cache saves less than the raw count suggests.")
    return run_check("5.2", body)


def check_why_append_only_caches(answer: Any) -> Outcome:
    """5.3: why an append-only history caches well, and where a summary breaks it (multiple choice)."""
    return answer_check("5.3", answer)


def _first_steps() -> list[str]:
    from flawedcode.bench.tasks import load_tasks

    return [step.say for step in load_tasks([BENCH_TASK])[0].all_steps()[:STRATEGY_PROBE_STEPS]]


@cache
def _v1_input_on_first_steps() -> int:
    from flawedcode.lessons import lesson_agent

    agent = lesson_agent("v1", model="offline", watch=False, name="v1-probe")
    for text in _first_steps():
        agent.send(text)
    return agent.log.totals()["input_tokens"]


def strategy_problem(strategy: type) -> str | None:
    """Why ``strategy`` is not a strategy yet, from the bench task's first requests (seconds, before the whole bench)."""
    from flawedcode.lessons import LESSON_BUDGET, lesson_folder, lesson_model
    from flawedcode.tools import Workspace

    folder = lesson_folder("strategy")
    workspace = Workspace.create(folder / "yours", folder / "scratch", folder / "archives")
    agent = strategy(lesson_model("offline", LESSON_BUDGET), workspace=workspace, config=strategy.config_class(), name="yours")
    steps = _first_steps()
    for text in steps:
        agent.send(text)
    if not any(message.type == "human" and text_of(message) == steps[0] for message in agent.messages):
        return ("your send() dropped the user's first request (the goal) from self.messages: a mask changes old tool results, "
                "never the requests")
    if agent.log.totals()["input_tokens"] >= _v1_input_on_first_steps():
        return (f"over the task's first {len(steps)} requests your agent sent as much as v1: does send() change self.messages "
                "before each turn?")
    return None


def check_strategy_in_bench(strategy: Any) -> Outcome:
    """5.4: your agent class through the benchmark (``run_benchmark``) beside v1, read back from its summary.json."""
    def body() -> str:
        import json
        import tempfile
        from pathlib import Path

        from flawedcode.agents import AGENTS, BaseAgent
        from flawedcode.bench.agent_specs import AgentEntry
        from flawedcode.bench.runner import run_benchmark

        attempted(strategy=strategy)
        require(isinstance(strategy, type) and issubclass(strategy, BaseAgent),
                "`strategy` should be your agent class (a subclass of AgentV1), not an instance or a function")
        require(strategy not in AGENTS.values(), "that is a built-in version: write a class of your own")
        require(any("send" in vars(cls) for cls in strategy.__mro__[:strategy.__mro__.index(BaseAgent)]
                    if cls not in AGENTS.values()), "your class does not define send(): it would do exactly what v1 does")
        own = [vars(cls)["send"] for cls in strategy.__mro__ if "send" in vars(cls) and cls not in AGENTS.values()]
        require(not any(Ellipsis in getattr(getattr(send, "__code__", None), "co_consts", ()) for send in own),
                "not tried yet: replace the `...` in send() and run the cell")
        problem = strategy_problem(strategy)
        require(problem is None, str(problem))
        name = "yours"
        with tempfile.TemporaryDirectory(prefix="lesson5-bench-") as folder:
            run_benchmark(["v1", AgentEntry(name, strategy, f"notebook:{strategy.__name__}")], task_names=[BENCH_TASK],
                          runs=1, model="offline", out_dir=Path(folder) / "bench", progress=False)
            summary = json.loads((Path(folder) / "bench" / "summary.json").read_text(encoding="utf-8"))
        v1, yours = summary["agents"]["v1"], summary["agents"][name]
        require(not yours["failed_runs"], f"your agent's run failed: {yours['failures']}")
        require(yours["total_input_tokens"] < v1["total_input_tokens"],
                "your agent sent as much as v1: does send() change self.messages before each turn?")
        require(yours["goal_in_context"] >= 1,
                "your agent lost the user's goal at some probes of the bench: a mask changes old tool results, never the requests")
        raw = yours["total_input_tokens"] / v1["total_input_tokens"]
        cached = yours["cache_weighted_input_tokens"] / v1["cache_weighted_input_tokens"]
        return (f"through the bench's {BENCH_TASK} task on the offline model, your strategy sent {raw:.0%} of v1's input, "
                f"{cached:.0%} cache-weighted; goal in context at {yours['goal_in_context']:.0%} of the probes (v1: "
                f"{v1['goal_in_context']:.0%}), {yours['calls_over_budget']} calls over budget (v1: {v1['calls_over_budget']}). "
                "`flawedcode bench --agents v1,v3,my_agent.py:MaskingAgent` puts it in the full table.")
    return run_check("5.4", body)
