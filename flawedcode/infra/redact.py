"""Secrets never reach disk: redact API keys and tokens before anything is written.

Everything flawedcode writes that holds conversation text (scratch/ files,
archives, benchmark transcripts, summaries, recordings of model calls) passes
through ``redact`` first. The rule is to replace what *is* a secret and nothing
else: the archive is meant to be lossless, so a false alarm destroys data.

What is replaced, wherever it appears:

- **Shapes** of well-known credentials (``SHAPES``): OpenAI (``sk-...``,
  ``sk-proj-...``) and Anthropic (``sk-ant-...``) keys, Stripe secret keys
  (``sk_live_...``, ``rk_test_...``), Groq (``gsk_...``), GitHub (``ghp_...``,
  ``github_pat_...``), GitLab (``glpat-...``), Hugging Face (``hf_...``), Slack
  (``xoxb-...``), Google (``AIza...``) and AWS access key ids (``AKIA...``),
  JSON Web Tokens (``eyJ...``), private-key blocks, the password in a URL
  (``postgresql://user:PASSWORD@host``), ``Basic`` and ``Bearer`` credentials,
  and the value of a secret-named setting (``DB_PASSWORD=...``,
  ``"api_key": "..."``, ``client_secret: ...``).
- **Values** of this process's own secret variables: an environment variable
  whose name looks like a credential (``is_secret_name``: ``*KEY*``, ``*TOKEN*``,
  ``*SECRET*``, ``*PASSWORD*``, ``*_PWD``, ``*AUTH*``, ``DATABASE_URL``, ...), *and*
  whose value looks like one (``looks_like_secret``), is replaced wherever that value
  appears, and so are its base64 and hex encodings.

"Looks like a secret" (``looks_random``): at least ``MIN_SECRET_CHARS`` (12) letters
and digits, at least six different characters, two of lowercase / uppercase / digits,
and not made of words. A word here is a run of five or more letters with vowels in it
and no more than three consonants in a row ("realized", "PACIFIC"); random keys
rarely hold one, and text whose letters are mostly such words is text. So a short or
common value (``PWD=/home/me``, ``PIP_KEYRING_PROVIDER=subprocess``) is never replaced
in other text, and neither is code or finance text that starts like a key
(``sk-learn-pipeline``, ``Bearer instruments/treasury-bills``,
``hf_realizedvolatility5min``, ``ASIAPACIFIC2024Q3EQ``). An AWS key id's 16
characters must hold a digit from its alphabet (``A-Z2-7``); an id without one
(about 1 in 28) is caught only when named (``aws_access_key_id = ...``).

A private-key block cut before its ``END`` line is replaced up to where its base64 stops.

``redact_disguised`` (used before memory.md is written, where a false alarm costs a question,
not data) also finds secrets written so that the shapes above miss them: a key spaced out
(``s k - p r o j - ...``), written backwards, or told in words (``my bank password is ...``,
``the PIN for the safe: ...``). Each becomes ``[REDACTED:<kind> (spaced out|reversed|told)]``.

Before matching, zero-width characters (U+200B-U+200D, U+2060, U+FEFF, the soft
hyphen) are ignored, so a key with one inside is still found (and replaced with
them), and an OpenAI, Anthropic or GitLab key wrapped onto the next line at one of
its hyphens is found whole.

Each secret becomes ``[REDACTED:<kind>]`` (for example ``[REDACTED:openai-key]``),
so a reader sees that something was there and what it was. ``Redaction.kinds``
counts what was replaced, so a writer can list it (the archive's index does):
nothing is silently lost.

Where it is applied, and what it means for "byte-identical" and "lossless":

- scratch/ (``context/offload.py``): the offloaded file is the tool result byte for
  byte *except* its secrets; the stub's last line counts them
  (``Redacted before saving: 1 secret (openai-key x1).``) and the preview is made
  from the saved text, so the secret leaves the context too. The file's name is
  made from the redacted arguments, and never from a word that looks random.
- archives/ (``context/archive.py``): every archived message is kept unchanged *except*
  its secrets, in the ``.jsonl`` and the ``.md``; each part's entry in ``index.json``
  counts them (``"redacted": {"openai-key": 1}``).
- summaries (``context/summarize.py``): the verbatim goal line and the summary text.
- benchmark transcripts (``bench/runner.py``), the demo's ``demo_logs.json`` and recordings.
A redacted secret cannot be recovered from disk: that is the point. Everything else is.

>>> redact("my key is sk-proj-" + "Ab1Cd2Ef3Gh4" * 3).text
'my key is [REDACTED:openai-key]'
"""

from __future__ import annotations

import base64
import binascii
import os
import re
from collections import Counter
from collections.abc import Callable
from dataclasses import dataclass, field
from typing import Any

MIN_SECRET_CHARS = 12
"""A value with fewer letters and digits than this is never treated as a secret on its own."""
MIN_DISTINCT_CHARS = 6
"""A secret uses at least this many different characters (``aaaa...`` or ``1212...`` is not one)."""
WORDY_SHARE = 0.4
"""A token whose letters and digits are this much (or more) words is text, not a key."""

REPLACEMENT = "[REDACTED:{kind}]"
ZERO_WIDTH = "\u200b\u200c\u200d\u2060\ufeff\u00ad"

_WORD_RUN = re.compile(r"[a-z]{5,}|[A-Z][a-z]{4,}|[A-Z]{5,}")
_CONSONANTS = re.compile(r"[^aeiouy]+")


def _word_share(token: str) -> float:
    """How much of ``token``'s letters and digits is made of word-like runs (see the module docstring)."""
    alphanumeric = sum(character.isascii() and character.isalnum() for character in token)
    covered = 0
    for run in _WORD_RUN.findall(token):
        lowered = run.lower()
        vowels = sum(character in "aeiouy" for character in lowered)
        cluster = max((len(part) for part in _CONSONANTS.findall(lowered)), default=0)
        if vowels / len(lowered) >= 0.3 and cluster <= 3:
            covered += len(run)
    return covered / max(1, alphanumeric)


def looks_random(token: str, min_chars: int = MIN_SECRET_CHARS) -> bool:
    """True when ``token`` looks like a generated key rather than words, a name or a number."""
    body = re.sub(r"[^A-Za-z0-9]", "", token)
    if len(body) < min_chars or len(set(body)) < MIN_DISTINCT_CHARS:
        return False
    if re.fullmatch(r"[0-9a-f]{32,}|[0-9A-F]{32,}", body) and not body.isdigit():
        return True  # a long hex string: a hash or a key
    classes = any(c.islower() for c in body) + any(c.isupper() for c in body) + any(c.isdigit() for c in body)
    return classes >= 2 and _word_share(token) < WORDY_SHARE


def _aws_key_id(body: str) -> bool:
    return bool(re.fullmatch(r"[A-Z2-7]{16}", body)) and any(c.isdigit() for c in body) and _word_share(body) < 0.5


def _basic_credentials(token: str) -> bool:
    """``Basic`` auth is base64 of ``user:password``."""
    try:
        decoded = base64.b64decode(token + "=" * (-len(token) % 4), validate=True).decode("utf-8")
    except (binascii.Error, ValueError):
        return False
    return ":" in decoded and decoded.isprintable()


def _setting_value(value: str) -> bool:
    """A value given to a secret-named setting that is a credential, not code or a placeholder."""
    stripped = value.strip("'\"")
    if len(stripped) < 6 or stripped.lower() in {"none", "null", "true", "false", "changeme", "redacted"}:
        return False
    if re.fullmatch(r"[a-z_]+", stripped) or re.search(r"[()\[\]{}<>$*]|^\.{0,2}/|REDACTED", stripped):
        return False  # a variable name, a call, a placeholder, a path
    return not re.fullmatch(r"[\d.,_]+", stripped)  # a number is a setting (max_tokens: 4096), not a secret


@dataclass(frozen=True)
class Shape:
    """One kind of credential: where it is (the ``secret`` group, else the whole match) and a check of the candidate."""

    kind: str
    pattern: re.Pattern[str]
    check: Callable[[str], bool] | None = None
    hints: tuple[str, ...] = ()  # lower-case strings every match holds: a text holding none is not searched

    def may_match(self, lowered: str) -> bool:
        return not self.hints or any(hint in lowered for hint in self.hints)


def _random_body(prefix_chars: int) -> Callable[[str], bool]:
    return lambda secret: looks_random(re.sub(r"\s", "", secret)[prefix_chars:], 16)


_WRAPPED = r"(?:[A-Za-z0-9_]|-(?:[ \t]*\r?\n[ \t]*)?)"  # a key's character, or a hyphen where a line was wrapped
_START = r"(?<![A-Za-z0-9_-])"  # a key starts a run of key characters: each run is tried once, so matching is linear
_SECRET_NAME = (r"(?:password|passwd|passphrase|secret|secret[_-]?key|api[_-]?key|apikey|access[_-]?key(?:[_-]?id)?|"
                r"private[_-]?key|token|_pwd|credentials?)")

SHAPES: tuple[Shape, ...] = (
    Shape("private-key", re.compile(r"-----BEGIN [A-Z ]{0,40}PRIVATE KEY-----.{0,16384}?-----END [A-Z ]{0,40}PRIVATE KEY-----",
                                    re.DOTALL), hints=("private key",)),
    Shape("private-key", re.compile(r"-----BEGIN [A-Z ]{0,40}PRIVATE KEY-----[A-Za-z0-9+/=\s:,.-]{0,16384}"),
          hints=("private key",)),  # a block cut before its END line is a key all the same
    Shape("jwt", re.compile(rf"{_START}eyJ[A-Za-z0-9_-]{{8,8192}}\.eyJ[A-Za-z0-9_-]{{8,8192}}\.[A-Za-z0-9_-]{{8,8192}}"), hints=("eyj",)),
    Shape("anthropic-key", re.compile(rf"{_START}sk-ant-{_WRAPPED}{{20,1024}}"), _random_body(7), hints=("sk-ant-",)),
    Shape("openai-key", re.compile(rf"{_START}sk-{_WRAPPED}{{20,1024}}"), _random_body(3), hints=("sk-",)),
    Shape("stripe-key", re.compile(rf"{_START}[sr]k_(?:live|test)_[A-Za-z0-9]{{16,512}}"), _random_body(8), hints=("k_live_", "k_test_")),
    Shape("groq-key", re.compile(rf"{_START}gsk_[A-Za-z0-9]{{32,512}}"), _random_body(4), hints=("gsk_",)),
    Shape("github-token", re.compile(rf"{_START}(?:gh[pousr]_[A-Za-z0-9]{{20,512}}|github_pat_[A-Za-z0-9_]{{20,512}})"),
          _random_body(4), hints=("gh", "github_pat_")),
    Shape("gitlab-token", re.compile(rf"{_START}glpat-{_WRAPPED}{{20,512}}"), _random_body(6), hints=("glpat-",)),
    Shape("aws-access-key", re.compile(r"\b(?:AKIA|ASIA|ABIA|ACCA)(?P<secret>[A-Z0-9]{16})\b"), _aws_key_id, hints=("akia", "asia", "abia", "acca")),
    Shape("huggingface-token", re.compile(rf"{_START}hf_[A-Za-z0-9]{{20,512}}"), _random_body(3), hints=("hf_",)),
    Shape("slack-token", re.compile(rf"{_START}xox[abposr]-[A-Za-z0-9-]{{10,512}}"), _random_body(5), hints=("xox",)),
    Shape("google-api-key", re.compile(rf"{_START}AIza[0-9A-Za-z_-]{{35}}(?![0-9A-Za-z_-])"), _random_body(4), hints=("aiza",)),
    Shape("url-password", re.compile(r"\b[a-zA-Z][a-zA-Z0-9+.-]{1,20}://[^\s:/@'\"]{1,128}:(?P<secret>[^\s@/'\"]{1,256})@"), hints=("://",)),
    Shape("basic-auth", re.compile(r"(?i)\bbasic[ \t]+(?P<secret>[A-Za-z0-9+/]{8,4096}={0,2})(?![A-Za-z0-9+/=])"),
          _basic_credentials, hints=("basic",)),
    Shape("bearer-token", re.compile(r"(?i)\bbearer[ \t]+(?P<secret>[A-Za-z0-9._~+/=-]{16,8192})"), looks_random, hints=("bearer",)),
    Shape("secret-setting", re.compile(rf"(?i){_SECRET_NAME}[\"']?[ \t]*[:=][ \t]*(?P<secret>[\"']?[^\s\"',;]{{6,512}}[\"']?)"),
          _setting_value, hints=("pass", "secret", "key", "token", "_pwd", "credential")),
)
"""Credential shapes, most specific first (where two overlap, the one that starts first, then the longer, wins)."""

SECRET_NAME_PATTERN = re.compile(
    r"KEY|TOKEN|SECRET|PASSWORD|PASSWD|PASSPHRASE|CREDENTIAL|AUTH(?!OR)|COOKIE|_PWD$|(?:^|_)PAT$|"
    r"(?:^|_)DSN$|DATABASE_URL|_URI$|PRIVATE",
    re.IGNORECASE,
)
"""Environment variable names that hold credentials (used for redaction and by run_python's sandbox)."""

NOT_SECRET_NAME_PATTERN = re.compile(r"_(?:DIR|PATH|FILE|HOME|SOCK|CACHE)$", re.IGNORECASE)
"""Names that match the pattern above but hold a location (``TIKTOKEN_CACHE_DIR``, ``SSH_AUTH_SOCK``)."""


def is_secret_name(name: str) -> bool:
    """True when an environment variable's name says it holds a credential (and not where one is kept)."""
    return bool(SECRET_NAME_PATTERN.search(name)) and not NOT_SECRET_NAME_PATTERN.search(name)


def looks_like_secret(value: str) -> bool:
    """True when a secret-named variable's value is worth replacing wherever it appears (see the module docstring)."""
    if looks_random(value):
        return True
    return any(_shape_spans(shape, value) for shape in SHAPES if shape.kind != "secret-setting")


@dataclass(frozen=True)
class Redaction:
    """Text with its secrets replaced, and how many of each kind were replaced."""

    text: str
    kinds: Counter[str] = field(default_factory=Counter)

    @property
    def changed(self) -> bool:
        return bool(self.kinds)


def secret_values(environ: dict[str, str] | None = None) -> dict[str, str]:
    """Each secret variable's value that looks like a secret, and its base64 and hex forms, mapped to the
    variable's name (``NAME``, ``NAME (base64)``, ``NAME (hex)``), longest first."""
    environ = os.environ if environ is None else environ
    found: dict[str, str] = {}
    for name, value in environ.items():
        if not is_secret_name(name) or not looks_like_secret(value):
            continue
        found.setdefault(value, name)
        raw = value.encode("utf-8")
        for encoded in (base64.b64encode(raw).decode(), base64.urlsafe_b64encode(raw).decode()):
            found.setdefault(encoded.rstrip("="), f"{name} (base64)")
        found.setdefault(raw.hex(), f"{name} (hex)")
        found.setdefault(raw.hex().upper(), f"{name} (hex)")
    return dict(sorted(found.items(), key=lambda item: -len(item[0])))


def _shape_spans(shape: Shape, text: str) -> list[tuple[int, int]]:
    spans = []
    for match in shape.pattern.finditer(text):
        group = "secret" if "secret" in shape.pattern.groupindex else 0
        start, end = match.span(group)
        if shape.check is None or shape.check(match.group(group)):
            spans.append((start, end))
    return spans


def _without_zero_width(text: str) -> tuple[str, list[int] | None]:
    """``text`` without zero-width characters, and where each kept character was (None: nothing removed)."""
    if text.isascii() or not any(character in text for character in ZERO_WIDTH):
        return text, None
    kept = [index for index, character in enumerate(text) if character not in ZERO_WIDTH]
    return "".join(text[index] for index in kept), kept


def redact(text: str, environ: dict[str, str] | None = None, *, secrets: dict[str, str] | None = None) -> Redaction:
    """Replace every credential shape and every secret variable's value in ``text``.

    ``secrets`` (from ``secret_values``) saves reading the environment again when redacting many strings.
    """
    if not text:
        return Redaction(text)
    clean, positions = _without_zero_width(text)
    found: list[tuple[int, int, str]] = []
    for value, name in (secret_values(environ) if secrets is None else secrets).items():
        start = clean.find(value)
        while start != -1:
            found.append((start, start + len(value), f"env:{name}"))
            start = clean.find(value, start + len(value))
    lowered = clean.lower()
    for shape in SHAPES:
        if shape.may_match(lowered):
            found += [(start, end, shape.kind) for start, end in _shape_spans(shape, clean)]
    if not found:
        return Redaction(text)
    kinds: Counter[str] = Counter()
    pieces, at, cleaned_at = [], 0, 0  # ``at`` in the original text, ``cleaned_at`` in ``clean``
    for start, end, kind in sorted(found, key=lambda span: (span[0], -span[1])):
        if start < cleaned_at:
            continue  # inside a secret already replaced
        cleaned_at = end
        if positions is not None:  # back to the original's positions: the zero-width characters inside go too
            start, end = positions[start], positions[end - 1] + 1
        pieces += [text[at:start], REPLACEMENT.format(kind=kind)]
        kinds[kind] += 1
        at = end
    pieces.append(text[at:])
    return Redaction("".join(pieces), kinds)


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


_SPACED_OUT = re.compile(r"(?<!\S)(?:\S[ \t]+){11,}\S(?!\S)")
"""A run of twelve or more single characters each separated by blanks: a key written out letter by letter."""
_TOLD = re.compile(
    r"(?i)\b(?:password|passwd|passphrase|pass[ \t]?code|pin(?:[ \t]+(?:code|number))?|"
    r"secret(?:[ \t]+(?:key|code|word|answer))?|api[ \t_-]?key|access[ \t]+(?:code|key|token)|token|"
    r"credentials?|security[ \t]+(?:code|answer))(?:[ \t]+(?:for|to|of|at|on)[ \t]+[^\n:=]{1,40}?)?"
    r"[ \t]*(?:\bis\b|\bwas\b|[:=])[ \t]*[\"'`]?(?P<secret>[^\s\"'`]{4,256}?)[\"'`.,;!]*(?=\s|$)")
"""A secret told in words: "my bank password is ...", "the PIN for the safe: ...", "api key = ..."."""


def redact_disguised(text: str) -> Redaction:
    """``redact(text)``, then secrets the shapes miss because they were disguised: spaced out, reversed, told."""
    plain = redact(text)
    kinds = Counter(plain.kinds)
    found: list[tuple[int, int, str]] = []
    for match in _SPACED_OUT.finditer(plain.text):
        joined = re.sub(r"\s", "", match.group())
        inner = redact(joined)
        if inner.changed or looks_random(joined):
            kind = next(iter(inner.kinds), "random-token")
            found.append((match.start(), match.end(), f"{kind} (spaced out)"))
    backwards = redact(plain.text[::-1])
    if backwards.changed:
        size = len(plain.text)
        found += [(size - end, size - start, f"{kind} (reversed)") for start, end, kind in _spans(plain.text[::-1])]
    found += [(match.start("secret"), match.end("secret"), "secret (told)") for match in _TOLD.finditer(plain.text)
              if "REDACTED" not in match.group("secret")]
    pieces, at = [], 0
    for start, end, kind in sorted(found, key=lambda span: (span[0], -span[1])):
        if start < at:
            continue
        pieces += [plain.text[at:start], REPLACEMENT.format(kind=kind)]
        kinds[kind] += 1
        at = end
    pieces.append(plain.text[at:])
    return Redaction("".join(pieces), kinds)


def _spans(text: str) -> list[tuple[int, int, str]]:
    """Where ``redact`` finds a credential shape in ``text`` (start, end, kind)."""
    lowered = text.lower()
    return [(start, end, shape.kind) for shape in SHAPES if shape.may_match(lowered)
            for start, end in _shape_spans(shape, text)]
