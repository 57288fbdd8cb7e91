"""How an exercise checks itself: numbered exercises, hints on request, verdicts that name the mistake.

Every exercise has a number, ``"L.N"`` (lesson L, exercise N; the notebook's heading
says "Exercise 1.2"), a title and a few hints, from a nudge to the code. A check
prints one line:

    PASS: Exercise 1.2 (what the session cost): <what your answer shows>
    NOT YET: Exercise 1.2 (what the session cost): <what kind of thing is wrong>
    (stuck? hint(1.2) shows hint 1 of 3)

and returns an ``Outcome`` (true when it passed). A NOT YET line names the kind of
mistake ("that counts the first step only", "too high"), never the expected value
or the code: those are only behind an explicit ``hint(1.2)``, and each call of
``hint`` shows the next hint (the last one is the code). ``hint(1.2, 3)`` shows a
given one.

Checks cannot be passed by guessing: an answer left as ``...``, ``None``, an empty
string, list or dict, or a ``bool`` where a number is asked is "not tried yet";
every value is worked out from the student's own run, and a build-it exercise runs
the lesson's session through the student's function. Multiple-choice questions
("why ...?", ``question(1.5)`` and ``check_answer(1.5, "b, d")``) are "choose all
that apply", read from ``questions.yaml`` beside this file (a later lesson adds
its questions there). A selection is scored as a whole: a wrong one is told only
that it is not right yet (naming the wrong letters would give the answer away to
a student who chose them all); PASS adds why each false statement is false.
No two questions share their set of true letters, so an answer copied from an
earlier question never passes.

A lesson's module registers its exercises with ``exercise(number, title, *hints)``
and writes each check as ``run_check(number, body)``, where ``body()`` returns the
PASS text or raises ``NotYet("what is wrong")``.
"""

from __future__ import annotations

import re
from collections.abc import Callable, Mapping, Sequence
from dataclasses import dataclass
from functools import cache
from pathlib import Path
from typing import Any

import yaml

PASS = "PASS"
NOT_YET = "NOT YET"
QUESTIONS_FILE = Path(__file__).with_name("questions.yaml")
PLACEHOLDER_TEXTS = frozenset({"", "...", "todo", "tbd", "?", "xxx", "your answer", "answer"})


@dataclass(frozen=True)
class Exercise:
    """One exercise of a lesson: ``number`` "L.N", a short title, and hints from a nudge to the code."""

    number: str
    title: str
    hints: tuple[str, ...]

    @property
    def heading(self) -> str:
        return f"Exercise {self.number} ({self.title})"


EXERCISES: dict[str, Exercise] = {}
_hints_shown: dict[str, int] = {}


def exercise_number(number: str | float | int) -> str:
    """``1.2``, ``"1.2"`` or ``"Exercise 1.2"`` -> ``"1.2"`` (the key of EXERCISES)."""
    text = str(number).strip().removeprefix("Exercise").strip()
    if not re.fullmatch(r"\d+\.\d+", text):
        raise ValueError(f"expected an exercise number such as 1.2; got {number!r}")
    return text


def exercise(number: str, title: str, *hints: str) -> Exercise:
    """Register an exercise (a lesson's module does this once per exercise) and return it."""
    item = Exercise(exercise_number(number), title, tuple(hints))
    EXERCISES[item.number] = item
    return item


def hint(number: str | float, which: int | None = None) -> None:
    """Print the next hint of exercise ``number`` (``which``: that one, 1-based); the last hint is the code."""
    try:
        key = exercise_number(number)
    except ValueError as error:
        print(error)
        return
    if key not in EXERCISES:
        print(f"There is no exercise {key}; the exercises are {', '.join(sorted(EXERCISES, key=_sort_key))}.")
        return
    hints = EXERCISES[key].hints
    if not hints:
        print(f"Exercise {key} has no hints.")
        return
    shown = which if which is not None else min(_hints_shown.get(key, 0) + 1, len(hints))
    shown = max(1, min(shown, len(hints)))
    _hints_shown[key] = max(_hints_shown.get(key, 0), shown)
    more = f" (hint({key}) again for hint {shown + 1})" if shown < len(hints) else " (the last one)"
    print(f"Hint {shown} of {len(hints)} for exercise {key}{more}: {hints[shown - 1]}")


def _sort_key(number: str) -> tuple[int, int]:
    lesson, item = number.split(".")
    return int(lesson), int(item)


class NotYet(Exception):
    """The answer is not right yet; the message says what kind of thing is wrong (never the expected value)."""


class Outcome:
    """What a check returns: true when it passed. A notebook shows nothing more than the printed line."""

    def __init__(self, passed: bool) -> None:
        self.passed = passed

    def __bool__(self) -> bool:
        return self.passed

    def __repr__(self) -> str:
        return PASS if self.passed else NOT_YET

    def _ipython_display_(self) -> None:
        """The check already printed its verdict; a cell ending with it shows nothing else."""


def run_check(number: str, body: Callable[[], str]) -> Outcome:
    """Run one check; print PASS or NOT YET and where the hints are. Never raises."""
    item = EXERCISES[exercise_number(number)]
    try:
        print(f"{PASS}: {item.heading}: {body()}")
        return Outcome(True)
    except NotYet as problem:
        print(f"{NOT_YET}: {item.heading}: {problem}")
    except (TypeError, ValueError, AttributeError, KeyError, IndexError, OSError) as error:  # an answer of the wrong shape
        print(f"{NOT_YET}: {item.heading}: your answer could not be checked ({type(error).__name__}: {error}); "
              "compare its type with what the exercise asks for (a number, a list of names, an agent, a function...)")
    if item.hints:
        print(f"(stuck? hint({item.number}) shows hint {min(_hints_shown.get(item.number, 0) + 1, len(item.hints))} "
              f"of {len(item.hints)})")
    return Outcome(False)


# --- guards every check uses ---------------------------------------------------------------
def require(condition: bool, message: str) -> None:
    if not condition:
        raise NotYet(message)


def is_placeholder(value: Any) -> bool:
    """``...``, None, an empty or placeholder string, an empty collection."""
    if value is Ellipsis or value is None:
        return True
    if isinstance(value, str):
        return value.strip().casefold() in PLACEHOLDER_TEXTS
    if isinstance(value, Sequence | Mapping | set | frozenset):
        return len(value) == 0
    return False


def attempted(**values: Any) -> None:
    """Refuse answers still left as placeholders, naming them."""
    missing = [name for name, value in values.items() if is_placeholder(value)]
    require(not missing, f"not tried yet: replace every `...` in the cell above and run it (still empty: {', '.join(missing)})")


def written(value: Any, call: str) -> Any:
    """What a student's function returned; ``...`` or None means its body is not written yet."""
    require(value is not Ellipsis and value is not None, f"not tried yet: {call} still returns `...`; write its body and run that cell")
    return value


def whole_number(value: Any, name: str) -> int:
    """A count or a token figure: an int (not a bool, not a float with a fraction)."""
    require(not isinstance(value, bool), f"`{name}` is True or False; the exercise asks for a number")
    require(isinstance(value, int) or (isinstance(value, float) and value.is_integer()),
            f"`{name}` should be a whole number; you gave {type(value).__name__} {value!r}")
    return int(value)


def size_word(given: float, expected: float) -> str:
    """"too high" or "too low": how a number is wrong, without saying the right one."""
    return "too high" if given > expected else "too low"


def function_of(value: Any, name: str, arguments: str) -> Callable[..., Any]:
    require(callable(value) and not isinstance(value, type), f"`{name}` should be a function {name}({arguments})")
    return value


# --- multiple choice --------------------------------------------------------------------------
@cache
def questions() -> dict[str, dict[str, Any]]:
    """Every multiple-choice question, by exercise number (``questions.yaml``)."""
    data = yaml.safe_load(QUESTIONS_FILE.read_text(encoding="utf-8")) or {}
    return {exercise_number(number): item for number, item in data.items()}


def question(number: str | float) -> None:
    """Show a multiple-choice question and its options (as Markdown in a notebook, as text elsewhere)."""
    item = questions()[exercise_number(number)]
    lines = [f"**{item['question']}** (choose all that apply)", ""]
    lines += [f"- **{letter}**. {option['text']}" for letter, option in item["options"].items()]
    text = "\n".join(lines)
    try:
        from IPython import get_ipython
        from IPython.display import Markdown, display

        if get_ipython() is not None:
            display(Markdown(text))
            return
    except ImportError:  # pragma: no cover - IPython ships with the notebooks extra
        pass
    print(text)


def chosen_letters(answer: Any, letters: Sequence[str]) -> set[str]:
    """``"b, d"``, ``"bd"``, ``["b", "d"]`` -> {"b", "d"}; anything else is NotYet."""
    require(isinstance(answer, str | list | tuple | set), "give the letters of your choices, e.g. \"a, c\"")
    items = re.findall(r"\b[a-z]\b", answer.casefold()) if isinstance(answer, str) else [str(item).strip().casefold() for item in answer]
    unknown = sorted(set(items) - set(letters))
    require(not unknown, f"{', '.join(unknown)} {'is' if len(unknown) == 1 else 'are'} not among the options ({', '.join(letters)})")
    require(bool(items), "choose at least one option")
    return set(items)


def answer_check(number: str | float, answer: Any) -> Outcome:
    """Check the choices for a multiple-choice question, scored as a whole: right, or not yet (never which letter).

    Naming the wrong letters would let a student find the answer by choosing everything once; so a wrong
    selection gets the same line whatever it is, and the reasons (why each wrong option is wrong) come with PASS.
    """
    key = exercise_number(number)

    def body() -> str:
        attempted(answer=answer)
        item = questions()[key]
        options = item["options"]
        chosen = chosen_letters(answer, list(options))
        right = {letter for letter, option in options.items() if option.get("correct")}
        require(chosen == right, "that selection is not right yet: read every statement again against the lesson "
                                 "(a selection is right only when it holds every true statement and no false one)")
        reasons = " ".join(f"{letter} is false: {option['why']}" for letter, option in options.items() if not option.get("correct"))
        return f"{item['explain']} ({reasons})"
    return run_check(key, body)
