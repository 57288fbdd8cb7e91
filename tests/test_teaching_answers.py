"""The rebuilt teaching model's answers, end to end through the model with the real tools and no agent
(tests/teaching_harness.py): the reading first, then the figure; a follow-up says what it builds on.
Expected figures come from the parquet files with pandas (tests/corpora/fresh_registers.yaml's truths)."""

from __future__ import annotations

import pytest
from teaching_harness import converse, fresh_cases, judge, workspace_in
from test_teaching import frame

from flawedcode.models import OfflineModel

END_TO_END = ["qualifier-01", "two-asks-04", "relative-01", "after-decline-05",
              "trap-03"]


@pytest.mark.parametrize("case_id", END_TO_END)
def test_fresh_register_requests_are_answered_right_or_declined(case_id, tmp_path):
    case = next(c for c in fresh_cases() if c["id"] == case_id)
    reply = converse(OfflineModel(), case["turns"], workspace_in(tmp_path))[-1]
    expected = "right" if case["expect"] == "answer" else "declined"
    assert judge(case, reply) in ((expected,) if expected == "right" else ("right", "declined")), reply


def test_an_answer_gives_its_reading_before_the_figure(tmp_path):
    reply = converse(OfflineModel(), ["sorry to bother you, could you tell me the min 2y yield in 2024 please"],
                     workspace_in(tmp_path))[-1]
    days = frame("ty").loc["2024", "yield_2y"]
    assert reply.startswith(f"yield_curve/treasury_yields yield_2y (percent), {days.index[0].date()} to "
                            f"{days.index[-1].date()}, {len(days)} values: min {days.min():.4f}"), reply


def test_a_follow_up_reply_says_which_request_it_builds_on(tmp_path):
    replies = converse(OfflineModel(), ["average sofr in 2024", "same thing for EFFR"], workspace_in(tmp_path))
    assert "Building on your earlier request: the mean of money_markets/sofr.rate" in replies[-1]
    assert f"{frame('effr').loc['2024', 'rate'].mean():.4f}" in replies[-1]


def test_the_script_names_no_host_folder():
    """The code the model writes reads the same wherever the project is cloned (CI clones it elsewhere)."""
    from flawedcode import paths
    from flawedcode.models.teaching import answers
    from flawedcode.models.teaching.router import read_message

    request = read_message("average sofr in 2024", None)[0]
    code = answers.script(request, None)
    assert str(paths.PROJECT_ROOT) not in code and str(paths.data_dir()) not in code
    assert "'path': 'pipelines/money_markets/_data/" in code, code
