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

>>> escape_surrogates("caf\\udce9.txt")
'caf\\\\xe9.txt'
"""

from __future__ import annotations

import re

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
