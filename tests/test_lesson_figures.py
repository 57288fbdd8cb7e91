"""Lessons 5 and 6 state no figure by hand: every number in their prose is checked here against the code it
describes, and what their outputs say is read back from the stored run (so a prose figure, a heading and an output
cannot disagree, as "three compactions" above an output of 41 once did).

A figure that a lesson's prose states and this file does not check fails the first test: generate the sentence in a
code cell (an f-string shown with Markdown), or add the figure here with the value it must equal.
"""

from __future__ import annotations

import re

import nbformat
import pytest

from flawedcode.bench.tasks import builtin_tasks_dir, load_task_file
from flawedcode.config import MemoryConfig, SubagentConfig
from flawedcode.exercises import MASK_KEEP
from flawedcode.lessons import LESSON_BUDGET
from flawedcode.models import offline_attention as attention
from flawedcode.paths import PROJECT_ROOT

NOTEBOOKS = PROJECT_ROOT / "notebooks"
LESSON_5 = NOTEBOOKS / "05_context_rot_and_selecting_context.ipynb"
LESSON_6 = NOTEBOOKS / "06_plan_isolate_remember_v3.ipynb"
SOLUTIONS = NOTEBOOKS / "solutions" / "solutions.ipynb"

FIGURE = re.compile(r"(?<![\w.:/-])\d[\d,]*(?:\.\d+)?(?:%|K\b)?")
NOT_FIGURES = [  # numbering and names, not claims about a run
    r"^#+ \d+\.", r"\*\*Exercise \d+\.\d+", r"Exercise \d+\.\d+", r"hint\(\d+\.\d+\)", r"Lesson \d+", r"\*\*Time:\*\* about \d+ minutes",
    r"Lessons \d+-\d+", r"^\d+\. \*\*", r"section \d+", r"\bv\d\b", r"`[^`]*`",
]


def read(path):
    return nbformat.read(path, as_version=4)


def prose_figures(path) -> list[str]:
    """The figures in a lesson's Markdown cells before its recap's answers and its reading list."""
    found = []
    for cell in read(path).cells:
        if cell.cell_type != "markdown" or "attachment:" in cell.source or cell.source.startswith("## The research"):
            continue
        text = cell.source
        for pattern in NOT_FIGURES:
            text = re.sub(pattern, " ", text, flags=re.MULTILINE)
        found += FIGURE.findall(text)
    return found


def percent(share: float) -> str:
    return f"{100 * share:g}%"


def k_tokens(tokens: int) -> str:
    return f"{round(tokens / 1000)}K"


CHECKED = {
    LESSON_5: {
        percent(attention.LIU_FIRST), percent(attention.LIU_MIDDLE), percent(attention.LIU_LAST),  # Liu et al.'s calibration
        "20", k_tokens(attention.LIU_TOKENS),  # its 20 documents (the paper's setup) of about 4K tokens
        percent(attention.FOCUSED_ACCURACY), f"{attention.FOCUSED_TOKENS}", percent(attention.FULL_ACCURACY),
        k_tokens(attention.FULL_TOKENS),  # Chroma's
        "3.5%",  # the planted note, as the code plants it (test below)
        "95%",  # the Wilson interval's level (z = 1.96 in the code, test below)
        f"{MASK_KEEP}",  # 5.4 masks keeping 2 results
    },
    LESSON_6: {
        k_tokens(LESSON_BUDGET),  # "At 8K tokens": the lesson's BUDGET
        f"{SubagentConfig().result_tokens}",  # the parent gets at most 64 tokens of each answer
        f"{MemoryConfig().budget_tokens}",  # the memory block within 500 tokens
    },
}


@pytest.mark.parametrize("path", [LESSON_5, LESSON_6], ids=lambda path: path.name[:2])
def test_every_figure_in_the_prose_is_checked_against_the_code(path):
    stated = set(prose_figures(path))
    assert stated <= CHECKED[path], f"figures stated by hand and checked by nothing: {sorted(stated - CHECKED[path])}"


def test_the_recall_cell_plants_the_note_and_draws_the_interval_the_prose_names():
    source = "\n".join(cell.source for cell in read(LESSON_5).cells if cell.cell_type == "code")
    assert "NOTE, QUESTION = \"Remember that the desk's limit is 3.5%\"" in source and '"3.5%" in reply' in source
    assert "z = " in source and "1.96" in source


def outputs(path) -> list[str]:
    """Each code cell's text outputs (stream and Markdown), in order."""
    texts = []
    for cell in read(path).cells:
        if cell.cell_type == "code":
            texts.append("\n".join(output.get("text", "") or output.get("data", {}).get("text/markdown", "")
                                   for output in cell.outputs))
    return texts


def test_lesson_6_says_what_its_run_did():
    text = "\n".join(outputs(LESSON_6))
    steps = {task.name: task for task in load_task_file(builtin_tasks_dir() / "v3" / "plan_isolate_remember.yaml")}
    plan = steps["plan_12_steps"].all_steps()
    continues = sum(step.say == "Continue with the plan" for step in plan)
    assert f'"Continue with the plan" {continues} times' in text, "the continues the task sends, counted"
    (compactions,) = set(re.findall(r"Compactions: (\d+)", text))
    assert f"compacted {compactions} times" in text, "the section's two outputs give one count"
    table = re.search(r"\| agent \| model calls \| peak context \| input tokens in all \| how it ended \|\n(.*?)\n\n", text + "\n\n", re.S)
    rows = [[cell.strip() for cell in row.strip().strip("|").split("|")] for row in table.group(1).splitlines()[1:]
            if row.startswith("|")]
    by_name = {row[0]: row for row in rows}
    assert {"v2 (does it all)", "v3 parent", "v3 with its children"} <= set(by_name), "peak and total for parent and children"
    assert all(row[4] for name, row in by_name.items() if name != "v3 with its children"), "how each agent ended"
    total = int(by_name["v3 with its children"][3].replace(",", ""))
    assert total == sum(int(row[3].replace(",", "")) for name, row in by_name.items() if name not in ("v2 (does it all)", "v3 with its children"))


def test_lesson_6_prints_no_reminder_count_before_its_exercise():
    """6.1 asks how many reminders came back: no output above its check may say it."""
    solutions = "\n".join(outputs(SOLUTIONS))
    (reminders,) = re.findall(r"the plan came back (\d+) times", solutions)
    cells = read(LESSON_6).cells
    check = next(index for index, cell in enumerate(cells) if cell.cell_type == "code" and "check_plan_reminders(" in cell.source)
    above = "\n".join("\n".join(output.get("text", "") or output.get("data", {}).get("text/markdown", "") for output in cell.outputs)
                      for cell in cells[:check] if cell.cell_type == "code")
    assert not re.search(rf"(?<![\d,]){reminders}(?![\d,])", above), f"the answer to 6.1 ({reminders}) is printed above it"


def test_lesson_5_recall_has_a_spread_by_position_and_by_length():
    text = "\n".join(outputs(LESSON_5))
    table = re.search(r"\| requests around the note \| context \| first \| middle \| last \|\n\| --- .*?\n((?:\|.*\n?)+)", text)
    rows = [[cell.strip() for cell in row.strip().strip("|").split("|")] for row in table.group(1).strip().splitlines()]
    assert len(rows) >= 3, "recall at three lengths at least"
    contexts = [int(row[1].split()[0].replace(",", "")) for row in rows]
    assert contexts == sorted(contexts) and len(set(contexts)) == len(contexts), "longer sessions, longer contexts"
    assert all(re.fullmatch(r"\d+% \(\d+%-\d+%\)", cell.strip()) for row in rows for cell in row[2:]), "each share with its interval"
    assert (seeds := int(re.search(r"\((\d+) seed\(s\) a cell", text).group(1))) >= 10, f"{seeds} seeds cannot show a spread"


def test_lesson_5_calls_v3_lean_only_as_far_as_its_numbers_go():
    text = "\n".join(outputs(LESSON_5))
    (count3, count2) = map(int, re.search(r"v3 sends (\d+) tools to v2's (\d+)", text).groups())
    printed = dict(re.findall(r"^(v[23]): (\d+) tools sent", text, re.MULTILINE))
    assert (int(printed["v2"]), int(printed["v3"])) == (count2, count3)
    share = int(re.search(r"in (\d+)% of v2's schema tokens", text).group(1))
    claim = re.search(r"v3's loadout is ([^.]+)\.", text).group(1)
    assert share < 100, "a lean loadout sends fewer schema tokens"
    assert (claim == "leaner in tokens, not in count") == (count3 > count2)


COUNT_WORDS = re.compile(r"\b(one|two|three|four|five|six|seven|eight|nine|ten|eleven|twelve|thirteen|twenty|dozen)\s+"
                         r"(compactions?|times|reminders?|calls?|steps|summaries|requests|tokens|datasets|children|tools|runs|seeds|"
                         r"turns|messages|facts|digests)\b", re.IGNORECASE)


@pytest.mark.parametrize("path", [LESSON_5, LESSON_6], ids=lambda path: path.name[:2])
def test_no_count_of_what_a_run_did_is_spelled_out_in_the_prose(path):
    """'three compactions', 'twelve times': a count of what the run did belongs in a generated sentence."""
    prose = "\n".join(cell.source for cell in read(path).cells if cell.cell_type == "markdown")
    assert not COUNT_WORDS.findall(prose), COUNT_WORDS.findall(prose)


def test_lesson_5s_recap_says_v1_costs_the_most_because_its_table_does():
    """Recap 2 ("why does v1 cache so well and still cost the most?") rests on section 3's table."""
    text = "\n".join(outputs(LESSON_5))
    rows = re.findall(r"^\| (v\d) \| ([\d,]+) \| [\d.]+ \| ([\d,]+) \|", text, re.MULTILINE)
    raw = {agent: int(value.replace(",", "")) for agent, value, _ in rows}
    cached = {agent: int(value.replace(",", "")) for agent, _, value in rows}
    assert set(raw) == {"v1", "v2", "v3"}
    assert max(raw, key=raw.get) == "v1" and max(cached, key=cached.get) == "v1"
    assert cached["v1"] / raw["v1"] < min(cached[agent] / raw[agent] for agent in ("v2", "v3")), "v1 caches best"
