"""The redactor in both directions: every real-looking secret is replaced, no finance or code text is touched.

The secrets are generated here from a seeded random source and built from parts, so no
string in this file is a credential a scanner would flag (and none is a real one).
"""

from __future__ import annotations

import base64
import random
import string

import pytest

from flawedcode.infra.redact import looks_random, redact, secret_values

RANDOM = random.Random(20261201)
B62 = string.ascii_letters + string.digits
B64URL = B62 + "-_"
B32 = string.ascii_uppercase + "234567"


def token(alphabet: str, length: int) -> str:
    """A random token that looks generated (a digit, both cases where the alphabet has them)."""
    while True:
        made = "".join(RANDOM.choice(alphabet) for _ in range(length))
        if looks_random(made, 8) and (alphabet != B32 or any(c.isdigit() for c in made)):
            return made


def jwt() -> str:
    header = base64.urlsafe_b64encode(b'{"alg":"HS256","typ":"JWT"}').decode().rstrip("=")
    payload = base64.urlsafe_b64encode(b'{"sub":"1234567890","name":"Ada","iat":1516239022}').decode().rstrip("=")
    return f"{header}.{payload}.{token(B64URL, 43)}"


def secrets_corpus() -> list[tuple[str, str, str]]:
    """(label, text holding a secret, the secret) for each shape a leak has been seen in."""
    openai = "sk-" + "proj-" + token(B64URL, 120)
    wrapped_body = token(B62, 40)
    db_password = token(B62, 18)
    cases = [
        ("openai", f"key: {openai}", openai),
        ("openai wrapped at a hyphen", f"OPENAI key sk-{'proj'}-\n{wrapped_body} (copied from the terminal)", wrapped_body),
        ("openai with a zero-width space", f"use {openai[:30]}\u200b{openai[30:]} now", openai[30:]),
        ("anthropic", "x " + "sk-" + "ant-api03-" + token(B64URL, 90), None),
        ("stripe live", "STRIPE " + "sk_" + "live_" + token(B62, 32), None),
        ("stripe restricted", "rk_" + "test_" + token(B62, 28), None),
        ("groq", "groq " + "gsk" + "_" + token(B62, 52), None),
        ("gitlab", "token glpat" + "-" + token(B62, 20), None),
        ("github", "gh" + "p_" + token(B62, 36), None),
        ("github fine-grained", "github" + "_pat_" + token(B62, 22) + "_" + token(B62, 59), None),
        ("huggingface", "hf" + "_" + token(string.ascii_letters, 34), None),
        ("aws", "id AK" + "IA" + token(B32, 16), None),
        ("slack", "xox" + "b-" + "-".join(token(string.digits + "abc", 12) for _ in range(2)) + "-" + token(B62, 24), None),
        ("bare jwt", f"session={jwt()};", None),
        ("postgres url", f"DATABASE at postgresql://analyst:{db_password}@db.internal:5432/prices", db_password),
        ("basic auth", "Authorization: Basic " + base64.b64encode(b"analyst:" + token(B62, 14).encode()).decode(), None),
        ("bearer", "Authorization: Bearer " + token(B64URL, 40), None),
        ("db password", "DB_PASSWORD=" + token(B62, 10) + "\n", None),
        ("json api key", '{"api_key": "' + token(B62, 24) + '"}', None),
        ("yaml client secret", "client_secret: " + token(B64URL, 30), None),
        ("private key", "-----BEGIN RSA PRIVATE KEY-----\n" + token(B62, 64) + "\n-----END RSA PRIVATE KEY-----", None),
    ]
    return [(label, text, secret or text.split()[-1] if secret is None else secret) for label, text, secret in cases]


SECRETS = secrets_corpus()


@pytest.mark.parametrize(("label", "text", "secret"), SECRETS, ids=[case[0] for case in SECRETS])
def test_every_secret_shape_is_replaced(label: str, text: str, secret: str) -> None:
    result = redact(text, environ={})
    assert "[REDACTED:" in result.text, (label, result.text)
    for piece in (secret.strip("\"';}{"), secret[-16:]):
        if len(piece) >= 10:
            assert piece not in result.text.replace("\u200b", ""), (label, result.text)


BENIGN = [
    "pip install scikit-learn; the sk-learn-preprocessing-standard-scaler step",
    "sk-learn-linear-model-logistic-regression-v2",
    "bearer instruments/treasury-bills-and-commercial-paper-2024 are money-market assets",
    "Bearer instruments/us-treasury-notes pay at maturity",
    "columns: hf_realizedvolatility5min, hf_realizedvariance1min",
    "ASIAPACIFIC2024Q3EQ and ASIAPACIFICEQUITYFND are fund codes",
    "AKIAPACIFICBONDS2 is not a key",
    "max_tokens: 4096",
    "threshold_tokens = 1250",
    "api_key = os.environ['OPENAI_API_KEY']",
    "password = getpass.getpass()",
    "token = None",
    "secret_key=secret_key",
    "the password: is set by the admin",
    "from sklearn.pipeline import make_pipeline  # basic statistics follow",
    "Basic analysis shows the 2s10s spread widened",
    "archives/v2-3f2a9c1d0e/0001.md and scratch/run_python_3f2a9c1d0e4b5a69.txt",
    "call_9f8e7d6c5b4a3f2e1d0c9b8a and message id run-0f1e2d3c-4b5a-6978-8a9b-0c1d2e3f4a5b",
    "sha256 446a9538c1e2f0a7b3d4c5e6f708192a3b4c5d6e7f8091a2b3c4d5e6f7081920 of o200k_base",
    "https://example.com:8080/path?q=1 and user@example.com",
    "SOFR_30D_AVG rose 12bp; US10Y at 4.25%; EFFR 5.33",
    "def test_a_key_never_reaches_scratch(tmp_path):",
]


@pytest.mark.parametrize("text", BENIGN)
def test_finance_and_code_text_is_never_touched(text: str) -> None:
    assert redact(text, environ={}).text == text


def test_values_of_secret_variables_are_replaced_only_when_they_look_secret() -> None:
    key = token(B62, 40)
    environ = {"PWD": "/home/analyst/project", "PIP_KEYRING_PROVIDER": "subprocess", "AUTH_MODE": "oauth",
               "MY_SERVICE_TOKEN": key, "GH_PAT": "short"}
    text = f"cd /home/analyst/project && python -m subprocess; oauth is on; short; used {key}"
    result = redact(text, environ=environ)
    assert result.text == "cd /home/analyst/project && python -m subprocess; oauth is on; short; used [REDACTED:env:MY_SERVICE_TOKEN]"
    assert set(secret_values(environ).values()) == {"MY_SERVICE_TOKEN", "MY_SERVICE_TOKEN (base64)", "MY_SERVICE_TOKEN (hex)"}


def test_a_secret_variables_value_is_caught_in_base64_hex_and_with_a_zero_width_space() -> None:
    key = token(B62, 32)
    environ = {"SERVICE_API_KEY": key}
    for encoded in (base64.b64encode(key.encode()).decode(), key.encode().hex(), key[:10] + "\u200b" + key[10:]):
        result = redact(f"header {encoded} end", environ=environ)
        assert result.text.startswith("header [REDACTED:env:SERVICE_API_KEY") and result.text.endswith(" end"), result.text
        assert key[-12:] not in result.text


def test_redaction_keeps_everything_around_the_secret_exactly() -> None:
    key = "sk-" + token(B62, 48)
    text = f"a\u200bb {key} c\nd\x00e"
    assert redact(text, environ={}).text == "a\u200bb [REDACTED:openai-key] c\nd\x00e"
