"""The lessons as files: what every lesson has at the top, its diagram, its exercises, and the solutions.

nbval runs the notebooks themselves (``make test``); these tests read them as a student
opens them: the first cell installs flawedcode only where it is missing, one setting
(``FLAWEDCODE_MODEL``) picks the model, and every exercise is followed by a check that
the solutions notebook passes.
"""

from __future__ import annotations

import ast
import re
import tomllib

import nbformat
import pytest

from flawedcode import exercises
from flawedcode.lessons import LESSON_BUDGET
from flawedcode.paths import PROJECT_ROOT

NOTEBOOKS = PROJECT_ROOT / "notebooks"
LESSONS = sorted(NOTEBOOKS.glob("[0-9][0-9]_*.ipynb"))
SOLUTIONS = NOTEBOOKS / "solutions" / "solutions.ipynb"
WITH_THE_LAB = ("01_", "02_", "03_")


def read(path):
    return nbformat.read(path, as_version=4)


def code_cells(notebook) -> list[str]:
    return [cell.source for cell in notebook.cells if cell.cell_type == "code"]


def appendix_start(notebook) -> int:
    """The index of the first '## Appendix' cell (material after the lesson proper), or the number of cells."""
    return next((number for number, cell in enumerate(notebook.cells)
                 if cell.cell_type == "markdown" and cell.source.startswith("## Appendix")), len(notebook.cells))


def code_cells_before(notebook, end: int) -> list[str]:
    return [cell.source for cell in notebook.cells[:end] if cell.cell_type == "code"]


def checks_called(source: str) -> list[str]:
    return re.findall(r"^(check_\w+)\(", source, re.MULTILINE)


def test_there_are_seven_lessons():
    assert [path.name[:3] for path in LESSONS] == ["00_", "01_", "02_", "03_", "04_", "05_", "06_"]


@pytest.mark.parametrize("path", [*LESSONS, SOLUTIONS], ids=lambda path: path.name)
def test_the_first_cell_installs_flawedcode_only_where_it_is_missing(path):
    first = read(path).cells[0]
    repository = tomllib.loads((PROJECT_ROOT / "pyproject.toml").read_text())["project"]["urls"]["Repository"]
    assert first.cell_type == "code"
    assert 'if importlib.util.find_spec("flawedcode") is None:' in first.source
    assert f'"git+{repository}"' in first.source, "installs from the repository pyproject.toml names"
    assert "enable_custom_widget_manager()" in first.source, "Colab needs it to draw ipywidgets 8"
    ast.parse(first.source)


@pytest.mark.parametrize("path", LESSONS, ids=lambda path: path.name)
def test_one_setting_picks_the_model(path):
    (parameters,) = [cell for cell in read(path).cells if "parameters" in cell.metadata.get("tags", [])]
    assert 'MODEL = os.environ.get("FLAWEDCODE_MODEL") or "offline"' in parameters.source
    budget = re.search(r"^BUDGET = (\d+)", parameters.source, re.MULTILINE)
    assert budget is None or int(budget.group(1)) == LESSON_BUDGET
    assert not any(re.search(r'MODEL = "', source) for source in code_cells(read(path)))


@pytest.mark.parametrize("path", LESSONS, ids=lambda path: path.name)
def test_a_lesson_opens_with_goals_a_time_and_one_diagram(path):
    notebook = read(path)
    top = next(cell for cell in notebook.cells if cell.cell_type == "markdown")
    assert top.source.startswith("# Lesson ") and re.search(r"\*\*Time:\*\* about \d+ minutes", top.source)
    assert "You will be able to" in top.source and top.source.count("\n- ") >= 3
    diagrams = [cell for cell in notebook.cells if cell.cell_type == "markdown" and "attachment:" in cell.source]
    assert len(diagrams) == 1
    (name,) = re.findall(r"attachment:([\w.]+\.png)", diagrams[0].source)
    assert diagrams[0].attachments[name]["image/png"], "the picture travels inside the notebook"
    assert "mermaid" not in "".join(cell.source for cell in notebook.cells)


@pytest.mark.parametrize("path", [path for path in LESSONS if path.name.startswith(WITH_THE_LAB)], ids=lambda path: path.name)
def test_lessons_1_to_3_use_the_context_lab(path):
    assert any("ContextLab(" in source for source in code_cells(read(path)))


@pytest.mark.parametrize("path", LESSONS, ids=lambda path: path.name)
def test_a_lesson_ends_with_3_to_6_exercises_each_followed_by_its_check(path):
    sources = code_cells(read(path))
    checks = [(number, name) for number, source in enumerate(sources) for name in checks_called(source)]
    assert 3 <= len(checks) <= 6
    for number, name in checks:
        assert name in exercises.__all__
        assert re.search(r"= \.\.\.", sources[number - 1]), f"{name} follows a cell to fill in"
    appendix = appendix_start(read(path))
    assert checks[-1][0] == len(code_cells_before(read(path), appendix)) - 1, "the exercises close the lesson's code"
    assert any("check_why_" in name or "check_what_" in name for _, name in checks), "one checked question on why"


@pytest.mark.parametrize("path", LESSONS, ids=lambda path: path.name)
def test_a_lesson_numbers_its_exercises_points_to_hints_and_shows_no_unformatted_placeholder(path):
    notebook = read(path)
    lesson = int(path.name[:2])
    markdown = "\n".join(cell.source for cell in notebook.cells if cell.cell_type == "markdown")
    numbers = re.findall(r"\*\*Exercise (\d+\.\d+):", markdown)
    assert numbers and all(number.startswith(f"{lesson}.") for number in numbers)
    assert sorted(numbers) == sorted(number for number in exercises.EXERCISES if number.startswith(f"{lesson}."))
    assert "hint(" in markdown
    assert not re.search(r"\{[A-Z_]+\}", markdown), "a placeholder such as {RECALL_GAP} reached the page"


@pytest.mark.parametrize("path", LESSONS, ids=lambda path: path.name)
def test_a_lesson_ends_with_a_recap_of_3_to_5_questions_with_answers_and_the_research_it_simulates(path):
    notebook = read(path)
    markdown = [cell.source for cell in notebook.cells if cell.cell_type == "markdown"]
    (recap,) = [text for text in markdown if text.startswith("## Recap")]
    questions = re.findall(r"^\d+\. \*\*(.+?)\*\*$", recap, re.MULTILINE)
    assert 3 <= len(questions) <= 5 and all(question.endswith("?") for question in questions)
    assert recap.count("<details><summary>Answer</summary>") == len(questions)
    (research,) = [text for text in markdown if text.startswith("## The research this lesson simulates")]
    assert re.search(r"\(\[arXiv:\d{4}\.\d{4,5}\]|\]\(https://", research), "each citation links to its source"
    before_appendix = [cell.source for cell in notebook.cells[:appendix_start(notebook)] if cell.cell_type == "markdown"]
    assert before_appendix[-2:] == [recap, research], "the lesson closes with its recap and its research (an appendix may follow)"


def test_the_solutions_call_every_check_the_lessons_call_and_pass_them():
    lesson_checks = [name for path in LESSONS for source in code_cells(read(path)) for name in checks_called(source)]
    solutions = read(SOLUTIONS)
    solution_checks = [name for source in code_cells(solutions) for name in checks_called(source)]
    assert solution_checks == lesson_checks
    printed = [output.get("text", "") for cell in solutions.cells if cell.cell_type == "code" and checks_called(cell.source)
               for output in cell.outputs]
    assert len(printed) == len(lesson_checks) and all(text.startswith("PASS: ") for text in printed)
    assert not any("= ..." in source for source in code_cells(solutions))


def test_the_readme_lists_every_lesson_and_the_solutions():
    readme = (PROJECT_ROOT / "README.md").read_text(encoding="utf-8")
    for path in [*LESSONS, SOLUTIONS]:
        assert str(path.relative_to(PROJECT_ROOT)) in readme


def test_the_lessons_name_the_context_bars_colours_as_it_draws_them():
    from flawedcode.lab.bar import colour_key

    pages = {path.name: "\n".join(cell.source for cell in read(path).cells if cell.cell_type == "markdown") for path in LESSONS}
    assert colour_key().rstrip(".") in pages["01_memory_and_context_rot_v1.ipynb"]
    for name, text in pages.items():
        assert not re.search(r"\b(?:red|blue) for (?:tool|the model)", text), f"{name} names a colour the bar does not draw"
