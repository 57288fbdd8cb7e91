"""The project's own files agree with each other: README's commands, CI, Makefile, conda, git."""

from __future__ import annotations

import re
import tomllib

import yaml

from flawedcode.paths import PROJECT_ROOT


def read(name: str) -> str:
    return (PROJECT_ROOT / name).read_text(encoding="utf-8")


def test_readme_gives_two_commands_and_ci_runs_the_second() -> None:
    readme = read("README.md")
    block = re.search(r"## Two commands\n+```bash\n(.*?)```", readme, re.DOTALL).group(1)
    commands = [line.split("#")[0].strip() for line in block.splitlines() if line.strip()]
    assert commands == ["make demo", "make test"]
    ci_commands = [line.strip() for line in read(".ci/run").splitlines() if line.strip() and not line.startswith("#")]
    assert ci_commands[-1] == "make test"


def test_make_targets_install_from_the_project_files() -> None:
    makefile = read("Makefile")
    demo = re.search(r"^demo:.*\n((?:\t.*\n)+)", makefile, re.MULTILINE).group(1)
    test = re.search(r"^test:.*\n((?:\t.*\n)+)", makefile, re.MULTILINE).group(1)
    assert "flawedcode demo" in demo and "pytest" in test and "--nbval" in test
    assert re.search(r"^demo: install$", makefile, re.MULTILINE)
    assert re.search(r"^test: install-test$", makefile, re.MULTILINE)
    assert "--upgrade pip" in makefile


def test_environment_yml_agrees_with_pyproject() -> None:
    project = tomllib.loads(read("pyproject.toml"))["project"]
    environment = yaml.safe_load(read("environment.yml"))
    python = next(item for item in environment["dependencies"] if isinstance(item, str) and item.startswith("python"))
    assert python.removeprefix("python") == project["requires-python"]
    pip_lines = next(item["pip"] for item in environment["dependencies"] if isinstance(item, dict))
    extras = re.fullmatch(r"-e \.\[(.*)\]", pip_lines[0]).group(1).split(",")
    assert set(extras) <= set(project["optional-dependencies"])
    assert f"'.[{','.join(extras)}]'" in read("Makefile"), "conda and make install the same extras"


def test_generated_outputs_are_ignored_but_their_folders_are_kept() -> None:
    ignored = read(".gitignore").splitlines()
    for folder in ("scratch", "archives"):
        assert f"{folder}/*" in ignored and f"!{folder}/.gitkeep" in ignored
        assert (PROJECT_ROOT / folder / ".gitkeep").exists()
    assert "results/" in ignored
