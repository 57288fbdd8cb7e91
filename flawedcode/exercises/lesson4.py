"""Lesson 4's exercises: tokens per success by hand, v2 tuned from a file, a task of your own, and why."""

from __future__ import annotations

from collections.abc import Mapping
from pathlib import Path
from typing import Any

from .core import NotYet, Outcome, answer_check, attempted, exercise, function_of, require, run_check, size_word, written
from .session import is_agent

RECALL_GAP = 10  # requests between the planted number and the question that recalls it
MIN_DISTINCT_FILLERS = 3  # different requests in between (a session, not one line repeated)

exercise("4.1", "tokens per success by hand",
         "read_runs(out_dir).records holds one record per run: record.agent, record.success, record.totals. Your function "
         "gets a list of such records (one agent's, one task's, or all of them).",
         "Add input_tokens + output_tokens of every record in the list (failed runs too), divide by how many succeeded.",
         "def tokens_per_success(records):\n"
         "    return sum(r.totals['input_tokens'] + r.totals['output_tokens'] for r in records) / sum(r.success for r in records)")
exercise("4.2", "v2 tuned from a config file",
         "Write YAML with a summarization: or offload: block (flawedcode/flawedcode.yaml lists every setting) to config_path.",
         "tuned_agent = lesson_agent('v2', model=MODEL, config=load_config(config_path)); tuned_result = run_task(task, tuned_agent)")
exercise("4.3", "a task of your own",
         "The format is the one printed above the exercise (a name, a category, steps; a step is text or say: + checks:).",
         f"Find or plant a number in the first request, then at least {RECALL_GAP} different requests, then ask for it with a "
         "check that only a reply holding that number passes (contains: the number, or has_number with a range around it).",
         "results = {name: run_task(task, lesson_agent(name, model=MODEL, folder=lesson_dir)) for name in ('v1', 'v2')}")
exercise("4.4", "what a benchmark can claim",
         "Which columns depend on the offline model's simulated window, and which on the strategy alone?",
         "Two statements are true.")


def check_tokens_per_success(out_dir: str | Path, tokens_per_success: Any) -> Outcome:
    """4.1: a function of run records, (input + output tokens of them all) / their successful runs, run on each set of the lesson's runs."""
    def body() -> str:
        from flawedcode.bench import read_runs

        attempted(out_dir=out_dir, tokens_per_success=tokens_per_success)
        function_of(tokens_per_success, "tokens_per_success", "records")
        records = read_runs(Path(out_dir)).records
        require(bool(records), f"no runs in {out_dir}: run the benchmark cell first")
        sets = record_sets(records)
        for label, chosen in sets.items():
            _require_tokens_per_success(tokens_per_success, label, chosen)
        v2 = sets.get("v2's runs")
        ending = f"; v2's is {_tokens(v2) / sum(record.success for record in v2):,.0f}, as the table says" if v2 else ""
        return f"right on all {len(sets)} sets of runs it was tried on (all the runs, each agent's, each agent's on each task){ending}."
    return run_check("4.1", body)


def record_sets(records: list[Any]) -> dict[str, list[Any]]:
    """The sets the check runs a student's function on: every run, each agent's, each agent's on each task; only
    sets with a success (tokens per success of no success is undefined)."""
    sets: dict[str, list[Any]] = {"all the runs": list(records)}
    for agent in sorted({record.agent for record in records}):
        runs = sets[f"{agent}'s runs"] = [record for record in records if record.agent == agent]
        for task in sorted({record.task for record in runs}):
            sets[f"{agent}'s runs on {task}"] = [record for record in runs if record.task == task]
    return {label: chosen for label, chosen in sets.items() if any(record.success for record in chosen)}


def _tokens(records: list[Any], keys: tuple[str, ...] = ("input_tokens", "output_tokens")) -> int:
    return sum(record.totals[key] for record in records for key in keys)


def _require_tokens_per_success(tokens_per_success: Any, label: str, records: list[Any]) -> None:
    try:
        value = written(tokens_per_success(list(records)), "tokens_per_success(records)")
    except NotYet:
        raise
    except Exception as error:  # a student's function failed on one set of runs: say which
        raise NotYet(f"tokens_per_success(records) raised {type(error).__name__} ({error}) on {label}") from None
    require(isinstance(value, int | float) and not isinstance(value, bool),
            f"tokens_per_success(records) returned {type(value).__name__}: return a number of tokens")
    successes = sum(record.success for record in records)
    expected = _tokens(records) / successes
    inputs_only, inputs = _tokens(records, ("input_tokens",)) / successes, _tokens(records, ("input_tokens",))
    require(abs(value - inputs_only) > 1 or inputs == _tokens(records), f"on {label} that counts input tokens only; "
                                                                        "add output tokens too")
    require(abs(value - _tokens(records) / len(records)) > 1 or successes == len(records),
            f"on {label} that divides by every run; divide by the successful runs")
    require(abs(value - expected) <= 1, f"on {label} your function's figure is {size_word(value, expected)}")


def check_config_file(path: str | Path, agent: Any, result: Mapping[str, Any]) -> Outcome:
    """4.2: a YAML config of your own (outside the repository), read into v2, and a bench task run on it."""
    def body() -> str:
        from flawedcode.config import V2Config, load_config
        from flawedcode.paths import PROJECT_ROOT, running_from_checkout

        attempted(path=path, agent=agent, result=result)
        is_agent(agent, ("v2",))
        file = Path(path).resolve()
        require(file.is_file(), f"{file} does not exist: write the YAML text to that path first")
        require(not (running_from_checkout() and file.is_relative_to(PROJECT_ROOT.resolve())),
                "the file is inside the repository: write it in your lesson folder")
        config = load_config(file)
        require(config == agent.config, "the agent was not built from that file")
        require(config.summarization != V2Config().summarization or config.offload != V2Config().offload,
                "the file changes neither summarization nor offloading")
        require(isinstance(result, Mapping) and result.get("agent") == agent.log.agent_name and "success" in result,
                "`result` is not what run_task returned for this agent")
        return f"the task {'passed' if result['success'] else 'failed'} with your settings; compare the totals with the default v2."
    return run_check("4.2", body)


def _recall_checks_discriminate(checks: list[Any], question: str) -> bool:
    """False when the recall step's checks pass a reply that recalls nothing: empty, "I don't know", the question
    echoed back, any number at all (0, a huge one)."""
    from flawedcode.bench.checks import passes

    non_answers = ("", "I don't know.", "I don't remember any number.", f"I cannot answer: {question}", "It was 0.",
                   "It was 987654321.", "It was -3.5.")
    return not any(all(passes(check, reply, None) for check in checks) for reply in non_answers)


def check_task_file(path: str | Path, results: Mapping[str, Mapping[str, Any]]) -> Outcome:
    """4.3: a task file that finds or plants a number and asks for it 10+ different requests later, run on v1 and v2."""
    def body() -> str:
        from flawedcode.bench import TaskFileError, load_task_file

        attempted(path=path, results=results)
        try:
            tasks = load_task_file(path)
        except TaskFileError as error:
            raise NotYet(f"the task file does not load: {error}") from None
        task = tasks[0]
        steps = task.all_steps()
        recall = [number for number, step in enumerate(steps) if step.checks]
        require(bool(recall), "no step has a check: add checks: to the question that recalls the number")
        ask = recall[-1]
        require(ask >= RECALL_GAP, f"the recall comes only {ask} requests after the start: put at least {RECALL_GAP} in between")
        require(_recall_checks_discriminate(steps[ask].checks, steps[ask].say),
                "the recall step's checks would pass a reply that recalls nothing (an empty reply, \"I don't know\", the "
                "question echoed back, any number): check for the number itself or a range around it")
        fillers = {step.say.strip().casefold() for step in steps[1:ask]}
        require(len(fillers) >= MIN_DISTINCT_FILLERS, f"the requests in between are {len(fillers)} different text(s): "
                                                       "a session needs varied requests, as a user would send")
        require(isinstance(results, Mapping) and {"v1", "v2"} <= set(results), "run the task on v1 and v2: results = {'v1': ..., 'v2': ...}")
        require(all(isinstance(result, Mapping) and result.get("task") == task.name and name in str(result.get("agent"))
                    for name, result in results.items()), "the results are not run_task's results for this task on those agents")
        verdicts = ", ".join(f"{name} {'passed' if result['success'] else 'failed'}" for name, result in results.items())
        return f"{task.name}: {verdicts}."
    return run_check("4.3", body)


def check_what_a_benchmark_claims(answer: Any) -> Outcome:
    """4.4: what the offline benchmark's numbers can and cannot claim (multiple choice)."""
    return answer_check("4.4", answer)
