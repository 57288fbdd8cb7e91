"""Exercises that check themselves: each lesson's exercise cells are followed by one of these calls.

How a check works (numbers, hints on request, verdicts that name the mistake, guards
against guessing, multiple choice) is in ``core.py``; each lesson's checks are in
``lessonN.py``. A check works out the right answer from *your own run*, so it holds
on a real model too, except where one says it needs the offline model.

| exercise | what you do | check |
| --- | --- | --- |
| 0.1 | give the agent memory | ``check_memory(agent, reply)`` |
| 0.2 | two tool calls in one request | ``check_tool_calls(agent, tool_names)`` |
| 0.3 | what a tool result costs | ``check_call_growth(agent, result_tokens, growth)`` |
| 0.4 | why v0 cannot answer (choice) | ``check_why_v0_forgets(answer)`` |
| 1.1 | where v1 starts keeping its goal | ``check_smallest_budget(smallest_budget, model)`` |
| 1.2 | what the session cost | ``check_session_cost(agent, total_input, per_step)`` |
| 1.3 | the largest tool result | ``check_largest_result(agent, largest)`` |
| 1.4 | build a keep-last-N trimmer | ``check_trimmer(trim, model)`` |
| 1.5 | why v1 lost its goal (choice) | ``check_why_goal_lost(answer)`` |
| 2.1 | a lower offload threshold | ``check_lower_threshold(agent, offloads)`` |
| 2.2 | build a preview | ``check_preview(preview, model)`` |
| 2.3 | what one offload saved | ``check_offload_savings(agent, saved_tokens)`` |
| 2.4 | why a stub and a file (choice) | ``check_why_offload(answer)`` |
| 3.1 | where a recalled number came from | ``check_recall_source(agent, source)`` |
| 3.2 | an earlier summary trigger | ``check_trigger(agent, summaries)`` |
| 3.3 | keeping less | ``check_keep_less(agent, goal_message)`` |
| 3.4 | build a summarizer | ``check_summarizer(summarize, agent)`` |
| 3.5 | why the archive is written first (choice) | ``check_why_archive_first(answer)`` |
| 4.1 | tokens per success by hand | ``check_tokens_per_success(out_dir, tokens_per_success)`` |
| 4.2 | v2 tuned from a config file | ``check_config_file(path, agent, result)`` |
| 4.3 | a task of your own | ``check_task_file(path, results)`` |
| 4.4 | what a benchmark can claim (choice) | ``check_what_a_benchmark_claims(answer)`` |
| 5.1 | recall in the middle | ``check_middle_recall(recall_runs, middle_recall)`` |
| 5.2 | build an observation mask | ``check_mask(mask, model)`` |
| 5.3 | why append-only caches well (choice) | ``check_why_append_only_caches(answer)`` |
| 5.4 | your strategy through the bench | ``check_strategy_in_bench(strategy)`` |
| 6.1 | count the plan's reminders | ``check_plan_reminders(plan_agent, reminders)`` |
| 6.2 | build a memory picker | ``check_memory_picker(pick, model)`` |
| 6.3 | why a sub-agent keeps the parent small (choice) | ``check_why_subagents(answer)`` |

``hint(1.2)`` shows the next hint of exercise 1.2 (the last is the code);
``question(1.5)`` shows a multiple-choice question.
"""

from .core import EXERCISES, NOT_YET, PASS, Exercise, NotYet, Outcome, exercise, hint, question, questions, run_check
from .lesson0 import check_call_growth, check_memory, check_tool_calls, check_why_v0_forgets
from .lesson1 import (
    check_largest_result,
    check_session_cost,
    check_smallest_budget,
    check_trimmer,
    check_why_goal_lost,
    reference_trim,
    v1_keeps_goal,
)
from .lesson2 import LOWER_OFFLOAD_TOKENS, check_lower_threshold, check_offload_savings, check_preview, check_why_offload
from .lesson3 import (
    EARLIER_TRIGGER,
    KEEP_LESS_MESSAGES,
    SOURCES,
    check_keep_less,
    check_recall_source,
    check_summarizer,
    check_trigger,
    check_why_archive_first,
    recall_source,
)
from .lesson4 import RECALL_GAP, check_config_file, check_task_file, check_tokens_per_success, check_what_a_benchmark_claims
from .lesson5 import MASK_KEEP, check_mask, check_middle_recall, check_strategy_in_bench, check_why_append_only_caches
from .lesson6 import check_memory_picker, check_plan_reminders, check_why_subagents
from .session import goal_recalled

__all__ = [
    "EARLIER_TRIGGER", "EXERCISES", "KEEP_LESS_MESSAGES", "LOWER_OFFLOAD_TOKENS", "NOT_YET", "PASS", "RECALL_GAP", "SOURCES",
    "Exercise", "NotYet", "Outcome",
    "check_call_growth", "check_config_file", "check_keep_less", "check_largest_result", "check_lower_threshold",
    "check_memory", "check_offload_savings", "check_preview", "check_recall_source", "check_session_cost",
    "check_smallest_budget", "check_summarizer", "check_task_file", "check_tokens_per_success", "check_tool_calls",
    "check_trigger", "check_trimmer", "check_what_a_benchmark_claims", "check_why_archive_first", "check_why_goal_lost",
    "check_why_offload", "check_why_v0_forgets",
    "exercise", "goal_recalled", "hint", "question", "questions", "recall_source", "reference_trim", "run_check",
    "v1_keeps_goal",
    "MASK_KEEP", "check_mask", "check_middle_recall", "check_strategy_in_bench", "check_why_append_only_caches",
    "check_memory_picker", "check_plan_reminders", "check_why_subagents",
]
