"""Put a benchmark's headline table into a Markdown file (docs/benchmark.md) between two markers.

    python -m flawedcode.bench.readme OUT_DIR docs/benchmark.md

reads ``OUT_DIR/summary.json`` and replaces everything between ``TABLE_START``
and ``TABLE_END`` with the table of ``headline_table``: the strategy columns
first, then the columns that depend on the model (marked *). ``make
bench-readme`` runs the benchmark and this, in one command.
"""

from __future__ import annotations

import json
import sys
from pathlib import Path
from typing import Any

from flawedcode.bench.scoring import MAIN_COLUMNS, RATIO_NOTE, format_cell, header_line, markdown_row
from flawedcode.paths import write_atomically

TABLE_START = "<!-- benchmark-table:start -->"
TABLE_END = "<!-- benchmark-table:end -->"
README_KEYS = ("input_vs_v1", "cached_vs_v1_cached", "input_vs_limit", "total_input_tokens", "answers_complete",
               "cacheable_share", "goal_in_context", "fact_recoverable", "peak_context_tokens", "calls_over_budget",
               "summary_calls", "model_calls", "success_rate", "goal_retention", "input_vs_own_floor", "failures")
"""The headline's columns (results.md has them all): the ratios first, tokens beside answers, then the strategy,
then the model (*), and last each agent's own floor (not comparable between agents)."""
README_COLUMNS = [column for key in README_KEYS for column in MAIN_COLUMNS if column[1] == key]


def headline_table(summary: dict[str, Any]) -> str:
    """The README's table: one row per agent, and a line saying what it was measured on."""
    lines = [header_line(summary), "", markdown_row(["agent", *(title for title, _ in README_COLUMNS)]),
             markdown_row(["---"] * (len(README_COLUMNS) + 1))]
    lines += [markdown_row([agent, *(format_cell(key, metrics.get(key)) for _, key in README_COLUMNS)])
              for agent, metrics in summary["agents"].items()]
    lines += [markdown_row([agent, f"skipped: {reason}", *([""] * (len(README_COLUMNS) - 1))])
              for agent, reason in summary.get("skipped", {}).items()]
    failed = [f"{agent} ({metrics['failed_runs']} of {metrics['runs']} runs)"
              for agent, metrics in summary["agents"].items() if metrics.get("failed_runs")]
    lines += ["", "Columns marked * depend on the model; the others measure the context strategy. " + RATIO_NOTE]
    leads = [f"{task} {format_cell('input_vs_v1', info['lead']['raw'])} (÷ {info['lead']['peer']})"
             for task, info in summary.get("tasks", {}).items() if (info.get("lead") or {}).get("peer")]
    if leads:
        lines.append("v2 ÷ the cheapest peer that keeps the goal, per task (raw input; < 1: v2 is cheaper): "
                     + ", ".join(leads) + ".")
    if failed:
        lines.append("Runs that failed (their unreached probes count as misses, their tokens stop early): "
                     + ", ".join(failed) + ".")
    return "\n".join(lines)


def replace_table(text: str, table: str) -> str:
    """``text`` with the part between the markers replaced by ``table`` (ValueError when a marker is missing)."""
    start, end = text.find(TABLE_START), text.find(TABLE_END)
    if start < 0 or end < start:
        raise ValueError(f"expected the markers {TABLE_START} and {TABLE_END}, in that order")
    return text[: start + len(TABLE_START)] + "\n" + table + "\n" + text[end:]


def main(argv: list[str] | None = None) -> int:
    arguments = sys.argv[1:] if argv is None else argv
    if len(arguments) != 2:
        print("usage: python -m flawedcode.bench.readme OUT_DIR FILE.md (e.g. docs/benchmark.md)", file=sys.stderr)
        return 2
    out_dir, readme = Path(arguments[0]), Path(arguments[1])
    try:
        summary = json.loads((out_dir / "summary.json").read_text(encoding="utf-8"))
        text = replace_table(readme.read_text(encoding="utf-8"), headline_table(summary))
    except (OSError, ValueError) as error:
        print(f"flawedcode.bench.readme: error: {error}", file=sys.stderr)
        return 2
    write_atomically(readme, text)
    print(f"{readme}: benchmark table replaced from {out_dir / 'summary.json'}")
    return 0


if __name__ == "__main__":
    raise SystemExit(main())
