"""Configuration: defaults in code, YAML overrides, and one clear line for a malformed file."""

from __future__ import annotations

from pathlib import Path

import pytest

from flawedcode.config import AgentConfig, ConfigError, V2Config, load_config, parse_config
from flawedcode.paths import PROJECT_ROOT


def write(tmp_path: Path, text: str) -> Path:
    path = tmp_path / "flawedcode.yaml"
    path.write_text(text)
    return path


def test_the_shipped_example_file_equals_the_defaults_in_code() -> None:
    assert load_config(PROJECT_ROOT / "flawedcode" / "flawedcode.yaml") == V2Config()


def test_yaml_overrides_only_what_it_names(tmp_path: Path) -> None:
    config = load_config(write(tmp_path, "budget_tokens: 4096\nsummarization:\n  keep: {type: messages, value: 6}\n"))
    assert config.budget_tokens == 4096
    assert (config.summarization.keep.type, config.summarization.keep.value) == ("messages", 6)
    assert config.summarization.trigger == V2Config().summarization.trigger
    assert config.offload == V2Config().offload


def test_a_single_trigger_may_be_written_without_a_list(tmp_path: Path) -> None:
    config = load_config(write(tmp_path, "summarization:\n  trigger: {type: tokens, value: 4000}\n"))
    assert [(t.type, t.value) for t in config.summarization.trigger] == [("tokens", 4000)]


@pytest.mark.parametrize(
    ("text", "message"),
    [
        ("summarization:\n  trigger:\n    - {type: percent, value: 0.5}\n",
         "flawedcode.yaml: summarization.trigger[0].type: expected 'tokens', 'messages' or 'fraction'; found 'percent'"),
        ("summarization:\n  keep: {type: fraction, value: 3}\n",
         "flawedcode.yaml: summarization.keep: a fraction must be in (0, 1]; found 3.0"),
        ("offload:\n  threshold_chars: big\n",
         "flawedcode.yaml: offload.threshold_chars: expected a valid integer; found 'big'"),
        ("budget: 8192\n", "flawedcode.yaml: budget: unknown setting (check its spelling and indentation)"),
        ("summarization:\n  summary_prompt: 'Summarize please'\n",
         "flawedcode.yaml: summarization.summary_prompt: the summary prompt must contain a {messages} slot "
         "for the conversation; found 'Summarize please'"),
        ("- just\n- a list\n", "flawedcode.yaml: expected a mapping of settings at the top level; found list"),
    ],
)
def test_malformed_files_name_the_key_what_was_expected_and_what_was_found(tmp_path: Path, text: str, message: str) -> None:
    with pytest.raises(ConfigError) as raised:
        load_config(write(tmp_path, text))
    assert str(raised.value) == message


def test_broken_yaml_says_where(tmp_path: Path) -> None:
    with pytest.raises(ConfigError, match=r"flawedcode.yaml: not valid YAML at line \d+, column \d+: expected ',' or ']'"):
        load_config(write(tmp_path, "summarization:\n  trigger: [oops\n"))


def test_missing_file_is_a_clear_error(tmp_path: Path) -> None:
    with pytest.raises(ConfigError, match="cannot read the config file"):
        load_config(tmp_path / "nope.yaml")


def test_v1_settings_load_into_the_v1_config_and_v2_blocks_are_refused_there() -> None:
    assert parse_config({"budget_tokens": 2048}, AgentConfig).budget_tokens == 2048
    with pytest.raises(ConfigError, match="offload: unknown setting"):
        parse_config({"offload": {"enabled": False}}, AgentConfig)
