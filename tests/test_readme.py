"""README's commands run as written, the way a new user pastes them.

Every ```bash block of README.md is read line by line:

- a ``flawedcode ...`` command (also ``.venv/bin/flawedcode``, after environment
  assignments or a pipe) must parse with the CLI's own parser;
- a line that needs a real model (an API key, a base URL, ``--model openai:...``,
  a recording made by such a model) is only parsed: tests never leave loopback;
- ``make`` targets are checked with ``make -n`` (``make test`` would run this test);
- every other line is run with bash, after ``source .venv/bin/activate``, in a folder
  that holds the repository's files (linked) and nothing of its outputs, so relative
  paths in README resolve and outputs land in a temporary folder.

Every ```python block runs too, and every repository path README names in backticks exists.
The pages README links to (docs/*.md) are held to the same rules, except that their
commands are only parsed (they run benchmarks and real models): every link resolves,
every ``flawedcode`` command parses, every repository path exists. README's first
screen keeps its order: the pitch, the two commands with their expected output, the
chart, the lessons as links, next steps, troubleshooting.
"""

from __future__ import annotations

import os
import re
import shlex
import subprocess
import sys
from pathlib import Path

import pytest

from flawedcode import cli
from flawedcode.paths import PROJECT_ROOT

README = PROJECT_ROOT / "README.md"
DOCS = sorted((PROJECT_ROOT / "docs").glob("*.md"))
VENV = PROJECT_ROOT / ".venv"
OUTPUT_FOLDERS = {"results", "scratch", "archives", ".git", ".pytest_cache"}
SHELL_OPERATORS = {"|", "||", "&&", ";", "<", ">", ">>", "&"}
REAL_MODEL_MARKERS = ("OPENAI_API_KEY", "OPENAI_BASE_URL", "openai:", "replay:", "sk-")
COMMAND_SECONDS = 300


def blocks(language: str, page: Path = README) -> list[str]:
    return re.findall(rf"```{language}\n(.*?)```", page.read_text(encoding="utf-8"), re.DOTALL)


def command_lines(page: Path = README) -> list[str]:
    """Each non-empty, non-comment line of every bash block, in the page's order."""
    lines = []
    for block in blocks("bash", page):
        for line in block.replace("\\\n", " ").splitlines():
            if line.strip() and not line.strip().startswith("#"):
                lines.append(line.strip())
    return lines


def flawedcode_calls(line: str) -> list[list[str]]:
    """The arguments of every flawedcode command on a shell line."""
    tokens = shlex.split(line, comments=True)
    calls, current = [], None
    for token in tokens:
        if token in SHELL_OPERATORS:
            current = None
        elif current is not None:
            current.append(token)
        elif Path(token).name == "flawedcode":
            current = []
            calls.append(current)
    return calls


def needs_real_model(line: str) -> bool:
    return any(marker in line for marker in REAL_MODEL_MARKERS)


def test_readme_shows_commands_and_says_to_activate_the_environment() -> None:
    lines = command_lines()
    assert any(flawedcode_calls(line) for line in lines)
    assert "source .venv/bin/activate" in lines, "README must say how `flawedcode` gets on the PATH"


@pytest.mark.parametrize("line", [line for line in command_lines() if flawedcode_calls(line)])
def test_every_flawedcode_command_in_readme_parses(line: str) -> None:
    parser = cli.build_parser()
    for arguments in flawedcode_calls(line):
        try:
            parser.parse_args(arguments)
        except SystemExit as exit:
            pytest.fail(f"README's `{line}` does not parse (exit {exit.code})")


@pytest.fixture(scope="module")
def user_folder(tmp_path_factory: pytest.TempPathFactory) -> Path:
    """The repository as a new user sees it, with outputs going to a fresh folder."""
    if not (VENV / "bin" / "activate").is_file():
        pytest.skip("README's commands assume the project's .venv (made by `make test`)")
    folder = tmp_path_factory.mktemp("readme-user")
    for entry in PROJECT_ROOT.iterdir():
        if entry.name not in OUTPUT_FOLDERS:
            (folder / entry.name).symlink_to(entry)
    return folder


def test_readme_commands_run_as_written(user_folder: Path) -> None:
    environment = {name: value for name, value in os.environ.items() if not name.startswith("OPENAI_")}
    environment.pop("FLAWEDCODE_MODEL", None)
    ran = []
    for line in command_lines():
        if needs_real_model(line) or line == "source .venv/bin/activate":
            continue
        if line.startswith("make "):
            target = shlex.split(line, comments=True)[1]
            result = subprocess.run(["make", "-n", target], cwd=PROJECT_ROOT, capture_output=True, text=True)
            assert result.returncode == 0, f"`{line}`: no such make target ({result.stderr.strip()})"
            continue
        script = f"source .venv/bin/activate && {line}"
        result = subprocess.run(["bash", "-c", script], cwd=user_folder, env=environment, stdin=subprocess.DEVNULL,
                                capture_output=True, text=True, timeout=COMMAND_SECONDS)
        assert result.returncode == 0, f"README's `{line}` failed:\n{result.stdout[-2000:]}\n{result.stderr[-2000:]}"
        assert "Traceback" not in result.stderr, f"README's `{line}` printed a traceback:\n{result.stderr[-2000:]}"
        ran.append(line)
    assert any("flawedcode demo" in line for line in ran)
    named = re.findall(r"`(results/[\w./-]+\.png)`", README.read_text(encoding="utf-8"))
    for path in named:  # the files README says the commands write are the files they write
        assert (user_folder / path).is_file(), f"README names {path}, which the commands did not write"


PYTHON_EXAMPLES = [(page, code) for page in [README, *DOCS] for code in blocks("python", page)]


@pytest.mark.parametrize(("page", "code"), PYTHON_EXAMPLES, ids=[f"{page.name}-{number}" for number, (page, _) in enumerate(PYTHON_EXAMPLES)])
def test_python_examples_run(page: Path, code: str, tmp_path: Path) -> None:
    result = subprocess.run([sys.executable, "-c", code], cwd=tmp_path, capture_output=True, text=True,
                            timeout=COMMAND_SECONDS, env={**os.environ, "MPLBACKEND": "Agg"})
    assert result.returncode == 0, f"{page.name}'s python example failed:\n{result.stderr[-2000:]}"


@pytest.mark.parametrize("page", [README, *DOCS], ids=lambda page: page.name)
def test_every_repository_path_and_link_a_page_names_exists(page: Path) -> None:
    text = page.read_text(encoding="utf-8")
    named = set(re.findall(r"`((?:flawedcode|notebooks|tests|docs|data)/[\w./-]*[\w/])`", text))
    missing = sorted(path for path in named if not (PROJECT_ROOT / path).exists())
    assert not missing, f"{page.name} names files that do not exist: {missing}"
    links = [target for target in re.findall(r"\]\(([^)#]+)\)", text) if "://" not in target]
    broken = sorted(target for target in links if not (page.parent / target).exists())
    assert not broken, f"{page.name} links to files that do not exist: {broken}"


@pytest.mark.parametrize("line", [line for page in DOCS for line in command_lines(page) if flawedcode_calls(line)])
def test_every_flawedcode_command_in_the_docs_parses(line: str) -> None:
    parser = cli.build_parser()
    for arguments in flawedcode_calls(line):
        try:
            parser.parse_args(arguments)
        except SystemExit as exit:  # --help and --version exit 0 once they have printed
            if exit.code != 0:
                pytest.fail(f"the docs' `{line}` does not parse (exit {exit.code})")


def test_readme_first_screen_is_the_pitch_the_commands_the_chart_the_lessons_and_help() -> None:
    text = README.read_text(encoding="utf-8")
    headings = re.findall(r"^## (.+)$", text, re.MULTILINE)
    assert headings[:4] == ["Two commands", "Lessons", "Next steps", "Troubleshooting"]
    commands = text[text.index("## Two commands"):text.index("## Lessons")]
    assert "```text\n" in commands, "the two commands show their expected output"
    assert "](docs/demo_chart.png)" in commands, "the demo's chart is on the first screen"
    lessons = text[text.index("## Lessons"):text.index("## Next steps")]
    assert len(re.findall(r"\]\(notebooks/0\d_[\w]+\.ipynb\)", lessons)) == 7, "each lesson is a link"
    for page in ("docs/real-models.md", "docs/replay.md", "docs/benchmark.md"):
        assert f"]({page})" in text, f"README links to {page}"
    assert len(text.splitlines()) < 150, "README is the first hour; reference detail lives in docs/"
