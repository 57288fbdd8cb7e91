"""One number, one home: the default budget and the encoding name live in ``flawedcode/constants.py``.

- No module of the package writes either literal again (``8192`` in any spelling, ``"o200k_base"``),
  except where the number is a fact about another model (gpt-4's published 8,192-token window in
  the profile table) or the name is part of a download address.
- Every place the README, docs/, CONTRIBUTING.md and the package's docstrings and help texts quote
  the default budget or the offline window quotes the constant's value: change the constant and this
  test lists every sentence to change with it.
"""

from __future__ import annotations

import ast
import re
from pathlib import Path

from flawedcode.constants import DEFAULT_BUDGET_TOKENS, ENCODING_NAME

ROOT = Path(__file__).resolve().parents[1]
PACKAGE = ROOT / "flawedcode"
DOCS = [ROOT / "README.md", ROOT / "CONTRIBUTING.md", *sorted((ROOT / "docs").glob("*.md"))]
NUMBER = r"(\d[\d,_]*\d|\d)"
QUOTES = [  # ways the docs and docstrings quote the default budget or the offline window
    re.compile(rf"\bbudget(?: of| stays at| is|:)? {NUMBER} tokens", re.IGNORECASE),
    re.compile(rf"\boffline\b[^.\n]{{0,40}}\bwindow(?: of)? {NUMBER}", re.IGNORECASE),
    re.compile(rf"\bwindow {NUMBER} tokens", re.IGNORECASE),
    re.compile(rf"\boffline\b[^.\n]{{0,60}}?\b{NUMBER}-token window\b", re.IGNORECASE),
    re.compile(rf"max_input_tokens={NUMBER}\b"),
    re.compile(rf"\bforgets what does not fit in {NUMBER}"),
    re.compile(rf"^\s*budget_tokens: {NUMBER}\s*$", re.MULTILINE),
    re.compile(rf"LESSON_BUDGET``\s*\({NUMBER} tokens\)"),
]
KILO = re.compile(r"\b(\d+)K\b(?= tokens| budget|\)|;|,)")


def literal_strays(path: Path) -> list[str]:
    """Where a module writes 8192 or "o200k_base" itself (facts about other models and URLs aside)."""
    tree = ast.parse(path.read_text(encoding="utf-8"))
    facts: set[int] = set()
    for node in ast.walk(tree):  # a profile row: _openai("gpt-4", 8_192, ...) states that model's own window
        if isinstance(node, ast.Call) and node.args and isinstance(node.args[0], ast.Constant) and node.args[0].value != "offline":
            if getattr(node.func, "id", getattr(node.func, "attr", "")) in ("_openai", "ModelProfile"):
                facts |= {id(arg) for arg in node.args[1:]}
    strays = []
    for node in ast.walk(tree):
        if not isinstance(node, ast.Constant) or id(node) in facts:
            continue
        if node.value == DEFAULT_BUDGET_TOKENS and type(node.value) is int:
            strays.append(f"{path.relative_to(ROOT)}:{node.lineno}: {node.value}")
        if node.value == ENCODING_NAME:
            strays.append(f"{path.relative_to(ROOT)}:{node.lineno}: {node.value!r}")
    return strays


def test_the_default_budget_and_the_encoding_name_are_written_once() -> None:
    strays = [stray for path in sorted(PACKAGE.rglob("*.py")) if path.name != "constants.py" for stray in literal_strays(path)]
    assert not strays, "import DEFAULT_BUDGET_TOKENS / ENCODING_NAME from flawedcode.constants instead:\n" + "\n".join(strays)


def quoted_texts() -> list[tuple[str, str]]:
    """(where, text) for every doc page and every docstring, help text and comment-free string of the package."""
    texts = [(str(path.relative_to(ROOT)), path.read_text(encoding="utf-8")) for path in DOCS]
    for path in sorted(PACKAGE.rglob("*.py")):
        for node in ast.walk(ast.parse(path.read_text(encoding="utf-8"))):
            if isinstance(node, ast.Constant) and isinstance(node.value, str) and len(node.value) > 20:
                texts.append((f"{path.relative_to(ROOT)}:{node.lineno}", node.value))
    texts.append(("flawedcode/flawedcode.yaml", (PACKAGE / "flawedcode.yaml").read_text(encoding="utf-8")))
    return texts


def quoted_budgets() -> list[tuple[str, str, int]]:
    found = []
    for where, text in quoted_texts():
        for pattern in QUOTES:
            for match in pattern.finditer(text):
                found.append((where, match.group(0).strip(), int(match.group(1).replace(",", "").replace("_", ""))))
        for match in KILO.finditer(text):
            if re.search(r"budget|window|course", text[max(0, match.start() - 60):match.end() + 40], re.IGNORECASE):
                found.append((where, match.group(0), int(match.group(1)) * 1024))
    return found


def test_the_docs_quote_the_default_budget_the_code_uses() -> None:
    quotes = quoted_budgets()
    assert len(quotes) >= 8, "the README, docs and docstrings quote the default budget in many places"
    assert any(where == "README.md" for where, _, _ in quotes), "README states the lesson's budget"
    wrong = [f"{where}: {text!r}" for where, text, number in quotes if number != DEFAULT_BUDGET_TOKENS]
    assert not wrong, f"these quote a default budget other than DEFAULT_BUDGET_TOKENS ({DEFAULT_BUDGET_TOKENS:,}):\n" + "\n".join(wrong)


def test_the_quote_finder_sees_a_stale_number() -> None:
    text = "The lesson's session: model offline (window 16,384), budget 16,384 tokens; offline: a 4,096-token window."
    found = [int(m.group(1).replace(",", "")) for pattern in QUOTES for m in pattern.finditer(text)]
    assert sorted(found) == [4096, 16384, 16384]


def test_the_load_header_has_one_writer_and_one_reader_side_by_side(tmp_path: Path) -> None:
    from flawedcode.formats import LOAD_HEADER, load_header
    from flawedcode.tools import Workspace, make_tools

    line = load_header("money_markets/sofr", 30, 3, "2024-11-18", "2024-12-31")
    assert LOAD_HEADER.match(line).groupdict() == {"key": "money_markets/sofr", "rows": "30", "columns": "3",
                                                   "start": "2024-11-18", "end": "2024-12-31"}
    load = next(tool for tool in make_tools(Workspace.create(tmp_path / "ws")) if tool.name == "chartbook_load_data")
    result = load.invoke({"pipeline": "money_markets", "dataframe": "sofr", "limit": 7})
    header, *rows = result.splitlines()
    read = LOAD_HEADER.match(header)
    assert read and read["key"] == "money_markets/sofr" and int(read["rows"]) == len(rows) - 1 == 7
    assert int(read["columns"]) == len(rows[0].split(",")) and rows[1].startswith(read["start"]) and rows[-1].startswith(read["end"])
    assert sum(" rows x " in path.read_text(encoding="utf-8") and "re.compile" in path.read_text(encoding="utf-8")
               for path in PACKAGE.rglob("*.py")) == 1, "one reader of the load header: formats.LOAD_HEADER"
