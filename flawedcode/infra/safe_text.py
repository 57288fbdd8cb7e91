"""Text that can always be written and sent: lone surrogates made visible, never fatal.

A Python string can hold a *lone surrogate* (a code point in U+D800-U+DFFF). Python
makes them when it decodes bytes that are not UTF-8 with ``surrogateescape``: a file
name holding the byte 0xFF is listed as ``'\\udcff'``, and so is that byte in piped
standard input. Such a string has no UTF-8 form: writing it to a file, sending it to a
model or hashing it raises ``UnicodeEncodeError``, and if it sits in a conversation,
every later turn fails the same way.

The rule, wherever text enters a message, an archive or a scratch file:

- ``escape_surrogates(text)`` writes each lone surrogate as a backslash escape:
  one that stands for an undecodable byte (U+DC80-U+DCFF) as that byte, ``\\xff``;
  any other as its code point, ``\\ud800``. Everything else (NUL and other
  control characters included) is left exactly as it was.
- ``has_surrogates(text)`` says whether there is anything to escape.

And wherever text reaches a terminal (everything the REPL prints: replies, tool
calls, results, file names, errors, warnings):

- ``printable(text)`` writes each character a terminal would act on, rather than
  show, as a visible backslash escape: C0 controls but newline and tab (so ESC,
  and with it every CSI and OSC sequence: clear screen, cursor moves, colours,
  OSC 52 clipboard writes, window titles; carriage return and backspace, which
  overwrite what is shown; BEL; NUL), DEL, the C1 controls (U+0080-U+009F, the
  one-character CSI U+009B among them), Unicode format characters (category Cf:
  bidirectional overrides and isolates such as U+202E, which reorder what is
  shown; zero-width spaces and joiners, which hide text), line and paragraph
  separators, and lone surrogates. ``\\x1b``, ``\\u202e``; the rest is unchanged.
  A model or a tool result can then never clear the screen, hide a line or make
  text read otherwise than it is.

>>> escape_surrogates("caf\\udce9.txt")
'caf\\\\xe9.txt'
>>> printable("ok\\x1b[2J\\u202egnp.exe\\n")
'ok\\\\x1b[2J\\\\u202egnp.exe\\n'
"""

from __future__ import annotations

import re
import unicodedata

LONE_SURROGATE = re.compile("[\ud800-\udfff]")
ESCAPED_BYTES = range(0xDC80, 0xDD00)  # what surrogateescape makes of the bytes 0x80-0xFF


def has_surrogates(text: str) -> bool:
    """True when ``text`` holds a lone surrogate (and so cannot be encoded as UTF-8)."""
    return not text.isascii() and LONE_SURROGATE.search(text) is not None


def escape_surrogates(text: str) -> str:
    """``text`` with each lone surrogate written as ``\\xNN`` (an undecodable byte) or ``\\uNNNN``."""
    if not has_surrogates(text):
        return text
    return LONE_SURROGATE.sub(_escape, text)


def _escape(match: re.Match[str]) -> str:
    point = ord(match.group())
    return f"\\x{point - 0xDC00:02x}" if point in ESCAPED_BYTES else f"\\u{point:04x}"


KEPT_CONTROLS = frozenset("\n\t")
UNSHOWN_CATEGORIES = frozenset({"Cc", "Cf", "Cs", "Zl", "Zp"})
"""Controls, format characters, surrogates, line and paragraph separators: what a terminal acts on or hides."""


def printable(text: str) -> str:
    """``text`` with every character a terminal would act on (not show) written as a backslash escape, but newline
    and tab (read the module docstring)."""
    if text.isprintable():  # the common case: nothing to escape
        return text
    return "".join(_visible(character) for character in text)


def _visible(character: str) -> str:
    if character in KEPT_CONTROLS or unicodedata.category(character) not in UNSHOWN_CATEGORIES:
        return character
    point = ord(character)
    if point < 0x100:
        return f"\\x{point:02x}"
    return f"\\u{point:04x}" if point < 0x10000 else f"\\U{point:08x}"


MAX_NAME_CHARS = 200
"""Longest name (a model's, a provider's) taken from a server or a file."""


def is_plain_name(text: object) -> bool:
    """Whether ``text`` is a name to show as it is: a string of at most ``MAX_NAME_CHARS`` characters, nothing escaped."""
    return isinstance(text, str) and 0 < len(text) <= MAX_NAME_CHARS and "\n" not in text and "\t" not in text \
        and printable(text) == text


def shown_name(text: object, fallback: str) -> str:
    """A name from outside (a server's model id, a recording's header) as it may be shown: itself when plain,
    else its escaped form cut to ``MAX_NAME_CHARS``, and ``fallback`` when it is empty or not text."""
    if is_plain_name(text):
        return str(text)
    if not isinstance(text, str) or not text:
        return fallback
    escaped = printable(text).replace("\n", "\\n").replace("\t", "\\t")
    return escaped[:MAX_NAME_CHARS]
