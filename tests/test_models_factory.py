"""get_model, profiles and budgets, and the one-line errors a user sees."""

from __future__ import annotations

import socket
import time

import pytest
from langchain_core.exceptions import ContextOverflowError

from flawedcode import notices
from flawedcode.models import (
    KNOWN_PROFILES,
    ModelConfigError,
    ModelProfile,
    OfflineModel,
    budget_for,
    explain_model_error,
    get_model,
    input_window,
    profile_for,
)
from flawedcode.models.profiles import OLLAMA_DEFAULT_CONTEXT_TOKENS, PRICES_CHECKED


def test_default_spec_is_offline_with_an_8k_window():
    model = get_model()
    assert isinstance(model, OfflineModel)
    assert model.profile["max_input_tokens"] == 8_192 and budget_for(model) == 8_192


def test_spec_comes_from_the_environment_when_not_given(monkeypatch):
    monkeypatch.setenv("FLAWEDCODE_MODEL", "offline:4096")
    model = get_model()
    assert isinstance(model, OfflineModel) and model.max_input_tokens == 4_096
    assert model.profile["max_input_tokens"] == 4_096
    assert get_model("offline").max_input_tokens == 8_192  # the argument wins


def test_offline_keyword_arguments_reach_the_model():
    model = get_model("offline", overflow="error")
    assert model.overflow == "error"


def test_budget_is_explicit_else_the_window():
    assert budget_for(get_model("offline:20000", budget_tokens=8_192)) == 8_192
    assert budget_for(get_model("offline:20000")) == 20_000
    assert budget_for(profile_for("gpt-4o-mini")) == 128_000
    assert budget_for(profile_for("gpt-4o-mini"), budget_tokens=8_192) == 8_192
    assert budget_for("gpt-4.1") == 1_047_576


@pytest.mark.parametrize("spec", ["gpt-4o", "anthropic:claude", "openai:", "offline:lots", "offline:10"])
def test_unknown_specs_fail_in_one_line_listing_the_accepted_forms(spec):
    with pytest.raises(ModelConfigError) as caught:
        get_model(spec)
    message = str(caught.value)
    assert "\n" not in message and repr(spec) in message
    assert "'offline'" in message and "openai:<model>" in message


def test_openai_without_a_key_names_the_environment_variable():
    with pytest.raises(ModelConfigError, match="OPENAI_API_KEY") as caught:
        get_model("openai:gpt-4o-mini")
    assert "\n" not in str(caught.value)


def test_openai_with_a_key_gets_its_window_as_profile(monkeypatch):
    monkeypatch.setenv("OPENAI_API_KEY", "sk-test")
    model = get_model("openai:gpt-4.1-mini", budget_tokens=8_192)
    assert model.model_name == "gpt-4.1-mini"
    assert model.profile["max_input_tokens"] == 1_047_576
    assert budget_for(model) == 8_192


def test_unreachable_base_url_fails_fast_and_names_the_url():
    with socket.socket() as probe:  # a free loopback port that nobody listens on
        probe.bind(("127.0.0.1", 0))
        port = probe.getsockname()[1]
    url = f"http://127.0.0.1:{port}/v1"
    started = time.monotonic()
    with pytest.raises(ModelConfigError) as caught:
        get_model("openai:gpt-4o-mini", base_url=url)
    assert time.monotonic() - started < 5
    assert url in str(caught.value) and "\n" not in str(caught.value)


def test_base_url_from_the_environment_is_checked_too(monkeypatch):
    monkeypatch.setenv("OPENAI_BASE_URL", "http://127.0.0.1:9/v1")
    with pytest.raises(ModelConfigError, match=r"http://127\.0\.0\.1:9/v1"):
        get_model("openai:llama3.1")


def test_known_profiles_have_windows_and_prices():
    offline = profile_for("offline")
    assert offline == ModelProfile("offline", 8_192, 0.0, 0.0, "o200k_base")
    for name in ("gpt-4o-mini", "gpt-4o", "gpt-4.1", "gpt-4.1-mini", "gpt-4.1-nano", "gpt-5", "gpt-5-mini", "gpt-5-nano"):
        profile = profile_for(name)
        assert profile.max_input_tokens >= 128_000
        assert 0 < profile.input_per_million < profile.output_per_million
    assert profile_for("gpt-4o-mini").cost(1_000_000, 1_000_000) == pytest.approx(0.75)
    assert profile_for("openai:gpt-4o").name == "gpt-4o"
    assert profile_for("gpt-4o-mini-2024-07-18").input_per_million == 0.15
    assert profile_for("offline:4096").max_input_tokens == 4_096


def test_unknown_model_gets_one_clean_warning_and_no_guessed_cost(capsys):
    notices.forget()
    for _ in range(3):
        profile = profile_for("deepseek-reasoner")
    assert profile.max_input_tokens == 128_000
    assert profile.input_per_million is None and profile.cost(1_000, 1_000) is None
    err = capsys.readouterr().err
    assert err.count("\n") == 1 and err.startswith("warning: unknown model 'deepseek-reasoner': no prices known")
    assert "cost shows as unknown" in err and ".py" not in err and "warn(" not in err
    profile_for("gpt-5-mini")  # known: no warning
    assert capsys.readouterr().err == ""


@pytest.mark.parametrize(("name", "family", "window"), [
    ("o1", "o1", 200_000), ("o3-mini-2025-01-31", "o3-mini", 200_000), ("o4-mini", "o4-mini", 200_000),
    ("gpt-4.1-mini", "gpt-4.1-mini", 1_047_576), ("gpt-5-nano", "gpt-5-nano", 272_000),
    ("openai/gpt-4o-mini", "gpt-4o-mini", 128_000), ("llama3.1:8b", "llama3.1", 3_584), ("qwen2.5", "qwen2.5", 3_584),
])
def test_profiles_cover_openai_families_and_local_models(name, family, window, capsys):
    profile = profile_for(name)
    assert profile.max_input_tokens == window and profile.priced
    assert profile.input_per_million == KNOWN_PROFILES[family].input_per_million
    assert PRICES_CHECKED in profile.source
    assert capsys.readouterr().err == ""


def test_local_models_are_free_and_their_window_is_what_ollama_serves():
    profile = profile_for("llama3.1")
    assert profile.cost(10_000, 10_000) == 0.0
    assert profile.max_input_tokens == input_window(OLLAMA_DEFAULT_CONTEXT_TOKENS) == 4_096 - 512


def test_a_budget_larger_than_the_window_is_lowered_with_one_line(capsys):
    notices.forget()
    model = get_model("offline:4096")
    assert budget_for(model, 8_192) == 4_096
    assert budget_for(model, 8_192) == 4_096
    err = capsys.readouterr().err
    assert err.count("\n") == 1 and "lowered it to 4,096 tokens" in err and "8,192" in err
    assert budget_for(model, 2_000) == 2_000


def test_explain_model_error_is_one_line():
    overflow = ContextOverflowError("This request has 9,000 input tokens but the window is 8,192 tokens")
    assert explain_model_error(overflow).startswith("The model's context window is full: This request has 9,000")
    assert explain_model_error(RuntimeError("boom\nwith a traceback")) == "The model call failed with RuntimeError: boom"
    wrapped = ValueError("outer")
    wrapped.__cause__ = ModelConfigError("Unknown model spec 'x'")
    assert explain_model_error(wrapped) == "Unknown model spec 'x'"
