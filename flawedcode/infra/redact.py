"""Secrets never reach disk: redact API keys and tokens before anything is written.

Everything flawedcode writes that holds conversation text (scratch/ files,
archives, benchmark transcripts, summaries, recordings of model calls) passes
through ``redact`` first. Two kinds of secret are replaced:

- **Shapes** of well-known credentials, wherever they appear: OpenAI keys
  (``sk-...``, ``sk-proj-...``), GitHub tokens (``ghp_...``, ``github_pat_...``),
  AWS access key ids (``AKIA...``), Hugging Face tokens (``hf_...``), Slack
  tokens (``xoxb-...``), ``Bearer <token>`` headers and private-key blocks.
- **Values** of this process's own secret variables: any environment variable
  whose name looks like a credential (``*KEY*``, ``*TOKEN*``, ``*SECRET*``,
  ``*PASSWORD*``, ``*PASSWD*``, ``*_PWD``, ``*_PAT``, ``*AUTH*``,
  ``*CREDENTIAL*``, ``DATABASE_URL``, ...) and whose value is at least
  ``MIN_SECRET_CHARS`` long, is replaced wherever its value appears.

Each secret becomes ``[REDACTED:<kind>]`` (for example ``[REDACTED:openai-key]``),
so a reader sees that something was there and what it was. ``Redaction.kinds``
counts what was replaced, so a writer can list it (the archive's index does):
nothing is silently lost.

Where it is applied, and what it means for "byte-identical" and "lossless":

- scratch/ (``context/offload.py``): the offloaded file is the tool result byte for
  byte *except* its secrets; the stub's last line counts them
  (``Redacted before saving: 1 secret (openai-key x1).``) and the preview is made
  from the saved text, so the secret leaves the context too.
- archives/ (``context/archive.py``): every archived message is kept unchanged *except*
  its secrets, in the ``.jsonl`` and the ``.md``; each part's entry in ``index.json``
  counts them (``"redacted": {"openai-key": 1}``).
- summaries (``context/summarize.py``): the verbatim goal line and the summary text.
- benchmark transcripts (``bench/runner.py``) and the demo's ``demo_logs.json``.
A redacted secret cannot be recovered from disk: that is the point. Everything else is.

>>> redact("my key is sk-proj-abcdefghijklmnopqrstuvwxyz012345").text
'my key is [REDACTED:openai-key]'
"""

from __future__ import annotations

import os
import re
from collections import Counter
from dataclasses import dataclass, field
from typing import Any

MIN_SECRET_CHARS = 8
"""Environment values shorter than this are not treated as secrets (too likely to be ordinary words)."""

REPLACEMENT = "[REDACTED:{kind}]"

# Credential shapes, most specific first. Each pattern matches the whole secret.
SECRET_PATTERNS: tuple[tuple[str, re.Pattern[str]], ...] = (
    ("private-key", re.compile(r"-----BEGIN [A-Z ]*PRIVATE KEY-----.*?-----END [A-Z ]*PRIVATE KEY-----", re.DOTALL)),
    ("openai-key", re.compile(r"\bsk-(?:proj-|svcacct-|admin-)?[A-Za-z0-9_-]{20,}")),
    ("anthropic-key", re.compile(r"\bsk-ant-[A-Za-z0-9_-]{20,}")),
    ("github-token", re.compile(r"\b(?:gh[pousr]_[A-Za-z0-9]{20,}|github_pat_[A-Za-z0-9_]{20,})")),
    ("aws-access-key", re.compile(r"\b(?:AKIA|ASIA)[A-Z0-9]{16}\b")),
    ("huggingface-token", re.compile(r"\bhf_[A-Za-z0-9]{20,}")),
    ("slack-token", re.compile(r"\bxox[abposr]-[A-Za-z0-9-]{10,}")),
    ("google-api-key", re.compile(r"\bAIza[0-9A-Za-z_-]{35}\b")),
    ("bearer-token", re.compile(r"(?i)(?<=\bbearer )[A-Za-z0-9._~+/=-]{16,}")),
)

SECRET_NAME_PATTERN = re.compile(
    r"KEY|TOKEN|SECRET|PASSWORD|PASSWD|PASSPHRASE|CREDENTIAL|AUTH(?!OR)|COOKIE|(?:^|_)PWD$|(?:^|_)PAT$|"
    r"(?:^|_)DSN$|DATABASE_URL|_URI$|PRIVATE",
    re.IGNORECASE,
)
"""Environment variable names that hold credentials (used for redaction and by run_python's sandbox)."""


NOT_SECRET_NAME_PATTERN = re.compile(r"_(?:DIR|PATH|FILE|HOME|SOCK|CACHE)$", re.IGNORECASE)
"""Names that match the pattern above but hold a location (``TIKTOKEN_CACHE_DIR``, ``SSH_AUTH_SOCK``)."""


def is_secret_name(name: str) -> bool:
    """True when an environment variable's name says it holds a credential (and not where one is kept)."""
    return bool(SECRET_NAME_PATTERN.search(name)) and not NOT_SECRET_NAME_PATTERN.search(name)


@dataclass(frozen=True)
class Redaction:
    """Text with its secrets replaced, and how many of each kind were replaced."""

    text: str
    kinds: Counter[str] = field(default_factory=Counter)

    @property
    def changed(self) -> bool:
        return bool(self.kinds)


def secret_values(environ: dict[str, str] | None = None) -> dict[str, str]:
    """The values of this process's secret variables, longest first, mapped to the variable's name."""
    environ = os.environ if environ is None else environ
    found = {value: name for name, value in environ.items() if is_secret_name(name) and len(value) >= MIN_SECRET_CHARS}
    return dict(sorted(found.items(), key=lambda item: -len(item[0])))


def redact(text: str, environ: dict[str, str] | None = None, *, secrets: dict[str, str] | None = None) -> Redaction:
    """Replace every credential shape and every secret variable's value in ``text``.

    ``secrets`` (from ``secret_values``) saves reading the environment again when redacting many strings.
    """
    if not text:
        return Redaction(text)
    kinds: Counter[str] = Counter()
    for value, name in (secret_values(environ) if secrets is None else secrets).items():
        if value in text:
            kinds[f"env:{name}"] += text.count(value)
            text = text.replace(value, REPLACEMENT.format(kind=f"env:{name}"))
    for kind, pattern in SECRET_PATTERNS:
        text, count = pattern.subn(REPLACEMENT.format(kind=kind), text)
        if count:
            kinds[kind] += count
    return Redaction(text, kinds)


def redact_text(text: str) -> str:
    """``redact(text).text``: for writers that only need the clean text."""
    return redact(text).text


def redact_data(value: Any, kinds: Counter[str] | None = None) -> tuple[Any, Counter[str]]:
    """Redact every string inside nested dicts, lists and tuples (JSON-like data); returns a copy and the counts."""
    kinds = Counter() if kinds is None else kinds
    return _redact_nested(value, kinds, secret_values()), kinds


def _redact_nested(value: Any, kinds: Counter[str], secrets: dict[str, str]) -> Any:
    if isinstance(value, str):
        result = redact(value, secrets=secrets)
        kinds.update(result.kinds)
        return result.text
    if isinstance(value, dict):
        return {key: _redact_nested(item, kinds, secrets) for key, item in value.items()}
    if isinstance(value, (list, tuple)):
        return type(value)(_redact_nested(item, kinds, secrets) for item in value)
    return value
