"""The teaching model has a size it cannot outgrow (issue 41): at most 2,500 lines of
Python in flawedcode/models/teaching/, and its data files hold words, never regular expressions."""

from __future__ import annotations

import re
from pathlib import Path

import flawedcode

TEACHING = Path(flawedcode.__file__).parent / "models" / "teaching"
MAX_PYTHON_LINES = 2500
REGEX_SIGNS = re.compile(r"\\[bdswBDSW]|\(\?[:=!<P]|\[\^|\.\*|\.\+|\\\.|[^\\]\|.*\\|\$['\"]")


def test_the_teaching_package_stays_under_its_line_limit():
    lines = sum(len(path.read_text(encoding="utf-8").splitlines()) for path in TEACHING.glob("*.py"))
    assert 0 < lines <= MAX_PYTHON_LINES, f"flawedcode/models/teaching/ has {lines} lines of Python (limit {MAX_PYTHON_LINES})"


def test_the_teaching_data_files_hold_no_regular_expressions():
    data = [path for path in TEACHING.iterdir() if path.suffix in (".toml", ".yaml", ".json", ".txt")]
    for path in data:
        for number, line in enumerate(path.read_text(encoding="utf-8").splitlines(), 1):
            assert not REGEX_SIGNS.search(line), f"{path.name}:{number} looks like a regular expression: {line!r}"


def test_the_size_check_would_catch_a_regex():
    assert REGEX_SIGNS.search(r'pattern = "\bsofr\b"')
    assert REGEX_SIGNS.search(r'"(?:above|over)"')
    assert not REGEX_SIGNS.search('ignore = ["guys", "class", "ok so", "thanks"]')
