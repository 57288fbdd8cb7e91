"""get_model, profiles and budgets, and the one-line errors a user sees."""

from __future__ import annotations

import socket
import time
import warnings

import pytest
from langchain_core.exceptions import ContextOverflowError

from flawedcode.models import (
    ModelConfigError,
    ModelProfile,
    OfflineModel,
    budget_for,
    explain_model_error,
    get_model,
    profile_for,
)


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


def test_unknown_model_gets_a_fallback_and_a_warning():
    with pytest.warns(UserWarning, match="Unknown model 'llama3.1'"):
        profile = profile_for("llama3.1")
    assert profile.max_input_tokens == 128_000 and profile.input_per_million == 0.15
    with warnings.catch_warnings():
        warnings.simplefilter("error")
        profile_for("gpt-5-mini")  # known: no warning


def test_explain_model_error_is_one_line():
    overflow = ContextOverflowError("This request has 9,000 input tokens but the window is 8,192 tokens")
    assert explain_model_error(overflow).startswith("The model's context window is full: This request has 9,000")
    assert explain_model_error(RuntimeError("boom\nwith a traceback")) == "The model call failed with RuntimeError: boom"
    wrapped = ValueError("outer")
    wrapped.__cause__ = ModelConfigError("Unknown model spec 'x'")
    assert explain_model_error(wrapped) == "Unknown model spec 'x'"
