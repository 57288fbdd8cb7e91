"""Benchmark flawedcode.tokens: counting throughput and the value of per-message caching.

Run:  python tests/benchmarks/bench_tokens.py

Part 1 counts a realistic mix of text (prose, CSV numeric tables, Markdown data
docs) with o200k_base and reports tokens/s, MB/s, and how far the "chars / 4"
shortcut is from the exact count for each kind of text.

Part 2 replays a 50-turn, tool-heavy conversation. After every turn it counts
the whole request (system prompt + tool schemas + history) two ways:
incrementally with one cached TokenCounter, and from scratch with a fresh
TokenCounter each turn. It prints the total time of each, their ratio, and the
per-turn time at turn 5 and turn 50.

All text is generated here from a fixed seed, so the script needs no data files
and no network.
"""

from __future__ import annotations

import random
import time
from collections.abc import Callable
from dataclasses import dataclass

from langchain_core.messages import AIMessage, BaseMessage, HumanMessage, ToolMessage
from langchain_core.tools import tool

from flawedcode.tokens import TokenCounter, count_text

RANDOM = random.Random(20241231)
TURNS = 50
THROUGHPUT_REPEATS = 3

# --------------------------------------------------------------------------- sample text

PROSE_SENTENCES = [
    "An agent's context fills with tool output until it loses track of the goal it was given.",
    "Offloading writes a large result to a file and leaves a short stub with a path in its place.",
    "When the context is nearly full, older turns are archived and replaced by a summary.",
    "The secured overnight financing rate is a broad measure of the cost of borrowing cash overnight.",
    "Students change one threshold, rerun the notebook and watch the token chart move.",
    "A summary that drops the user's original request is worse than no summary at all.",
    "The repo market lets dealers finance their Treasury holdings against collateral.",
    "Recovery means the agent searches the archive when a detail it needs has left the window.",
]


def prose(paragraphs: int) -> str:
    return "\n\n".join(
        " ".join(RANDOM.choice(PROSE_SENTENCES) for _ in range(6)) for _ in range(paragraphs)
    )


def csv_table(rows: int) -> str:
    lines = ["date,sofr,sofr_p1,sofr_p99,volume_bn,tgcr,bgcr"]
    rate = 4.31
    for day in range(rows):
        rate = max(0.0, rate + RANDOM.gauss(0, 0.01))
        lines.append(
            f"2024-{1 + day // 28 % 12:02d}-{1 + day % 28:02d},{rate:.2f},{rate - 0.05:.2f},"
            f"{rate + 0.12:.2f},{RANDOM.uniform(1800, 2400):.0f},{rate - 0.01:.2f},{rate - 0.01:.2f}"
        )
    return "\n".join(lines) + "\n"


def markdown_docs(columns: int) -> str:
    header = (
        "# repo_public: Tri-party and GCF repo rates (sample data)\n\n"
        "Daily reference rates for overnight Treasury repo. Units are percent per annum unless noted.\n\n"
        "| column | type | unit | description |\n| --- | --- | --- | --- |\n"
    )
    rows = [
        f"| rate_{i:02d} | float64 | percent | Volume-weighted median of segment {i} overnight repo trades, "
        f"published at 08:00 ET the next business day. |"
        for i in range(columns)
    ]
    return header + "\n".join(rows) + "\n\n## Notes\n\n" + prose(3) + "\n"


# --------------------------------------------------------------------------- part 1


@dataclass
class ThroughputRow:
    kind: str
    characters: int
    tokens: int
    seconds: float

    @property
    def chars_over_4_error(self) -> float:
        """How many times more tokens there are than chars/4 predicts."""
        return self.tokens / (self.characters / 4)


def best_time(action: Callable[[], object], repeats: int) -> float:
    timings = []
    for _ in range(repeats):
        start = time.perf_counter()
        action()
        timings.append(time.perf_counter() - start)
    return min(timings)


def measure_throughput() -> list[ThroughputRow]:
    samples = {
        "prose": prose(400),
        "CSV numeric table": csv_table(6000),
        "Markdown docs": markdown_docs(40) * 20,
    }
    samples["mix (all three)"] = "\n\n".join(samples.values())
    rows = []
    for kind, text in samples.items():
        tokens = count_text(text)
        seconds = best_time(lambda text=text: count_text(text), THROUGHPUT_REPEATS)
        rows.append(ThroughputRow(kind, len(text), tokens, seconds))
    return rows


# --------------------------------------------------------------------------- part 2


@tool
def chartbook_load_data(pipeline: str, dataframe: str, columns: list[str] | None = None, limit: int = 20) -> str:
    """Load rows of a ChartBook dataframe as CSV.

    Args:
        pipeline: pipeline id, e.g. money_markets
        dataframe: dataframe id, e.g. sofr
        columns: columns to return (date is always included)
        limit: number of most recent rows (max 500)
    """
    return ""


@tool
def chartbook_get_docs(pipeline: str, dataframe: str) -> str:
    """Return the Markdown documentation of one ChartBook dataframe.

    Args:
        pipeline: pipeline id
        dataframe: dataframe id
    """
    return ""


@tool
def read_file(path: str, offset: int = 0, limit: int = 200) -> str:
    """Read lines of a text file in the workspace, scratch/ or archives/.

    Args:
        path: file path
        offset: first line to read (0-based)
        limit: number of lines
    """
    return ""


@tool
def run_python(code: str, timeout: int = 10) -> str:
    """Run a Python script in the workspace and return its output.

    Args:
        code: the script
        timeout: seconds before it is stopped
    """
    return ""


TOOLS = [chartbook_load_data, chartbook_get_docs, read_file, run_python]
SYSTEM_PROMPT = (
    "You are FlawedCode, an agent that analyses ChartBook financial data and edits a small Python project. "
    "Use the tools; quote numbers exactly; keep the user's goal in mind.\n" + prose(2)
)


def one_turn(turn: int) -> list[BaseMessage]:
    """A user request, an AI message with two tool calls, their results, and an answer."""
    call_ids = [f"call_{turn:03d}_{n}" for n in range(2)]
    return [
        HumanMessage(f"Turn {turn}: load SOFR and the repo docs, then compare the averages.", id=f"h{turn}"),
        AIMessage(
            "",
            id=f"a{turn}",
            tool_calls=[
                {"name": "chartbook_load_data", "args": {"pipeline": "money_markets", "dataframe": "sofr", "limit": 60}, "id": call_ids[0]},
                {"name": "chartbook_get_docs", "args": {"pipeline": "yield_curve", "dataframe": "repo_public"}, "id": call_ids[1]},
            ],
        ),
        ToolMessage(csv_table(60), tool_call_id=call_ids[0], id=f"t{turn}a"),
        ToolMessage(markdown_docs(12), tool_call_id=call_ids[1], id=f"t{turn}b"),
        AIMessage(f"Turn {turn}: the SOFR average over 60 days is {4.3 + turn / 1000:.3f}%. " + prose(1), id=f"r{turn}"),
    ]


def replay(fresh_counter_each_turn: bool) -> tuple[list[float], list[int]]:
    """Count the full request after each turn; return per-turn seconds and token totals."""
    history: list[BaseMessage] = []
    counter = TokenCounter()
    seconds, totals = [], []
    for turn in range(1, TURNS + 1):
        history.extend(CONVERSATION[turn - 1])
        start = time.perf_counter()
        if fresh_counter_each_turn:
            counter = TokenCounter()
        totals.append(counter.count_request(SYSTEM_PROMPT, TOOLS, history))
        seconds.append(time.perf_counter() - start)
    return seconds, totals


CONVERSATION = [one_turn(turn) for turn in range(1, TURNS + 1)]


# --------------------------------------------------------------------------- report


def print_table(headers: list[str], rows: list[list[str]]) -> None:
    widths = [max(len(headers[i]), *(len(row[i]) for row in rows)) for i in range(len(headers))]
    line = lambda cells: "  ".join(  # noqa: E731
        cell.ljust(width) if i == 0 else cell.rjust(width) for i, (cell, width) in enumerate(zip(cells, widths))
    )
    print(line(headers))
    print("  ".join("-" * width for width in widths))
    for row in rows:
        print(line(row))


def main() -> None:
    TokenCounter()  # load the encoding before timing anything

    print("Counting throughput (o200k_base, encode_ordinary, best of 3)\n")
    print_table(
        ["text", "chars", "tokens", "tokens/s", "MB/s", "tokens / (chars/4)"],
        [
            [
                row.kind,
                f"{row.characters:,}",
                f"{row.tokens:,}",
                f"{row.tokens / row.seconds:,.0f}",
                f"{row.characters / row.seconds / 1e6:.1f}",
                f"{row.chars_over_4_error:.2f}x",
            ]
            for row in measure_throughput()
        ],
    )

    incremental_seconds, incremental_totals = replay(fresh_counter_each_turn=False)
    scratch_seconds, scratch_totals = replay(fresh_counter_each_turn=True)
    assert incremental_totals == scratch_totals, "cached and fresh counts must agree"
    messages = sum(len(turn) for turn in CONVERSATION)

    print(f"\nCounting a {TURNS}-turn tool-heavy history after every turn "
          f"({messages} messages, {incremental_totals[-1]:,} tokens at the end, {len(TOOLS)} tools)\n")
    print_table(
        ["strategy", "total s", "turn 5 ms", "turn 50 ms"],
        [
            ["incremental (one cached TokenCounter)", f"{sum(incremental_seconds):.4f}",
             f"{incremental_seconds[4] * 1e3:.3f}", f"{incremental_seconds[-1] * 1e3:.3f}"],
            ["from scratch (fresh TokenCounter each turn)", f"{sum(scratch_seconds):.4f}",
             f"{scratch_seconds[4] * 1e3:.3f}", f"{scratch_seconds[-1] * 1e3:.3f}"],
        ],
    )
    print(f"\nfrom scratch / incremental: {sum(scratch_seconds) / sum(incremental_seconds):.1f}x")


if __name__ == "__main__":
    main()
