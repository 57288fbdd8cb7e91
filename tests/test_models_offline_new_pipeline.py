"""A pipeline added to data/ is understood by the offline model with no change to its code.

The test copies data/ to a temporary folder, adds a ``credit`` pipeline with a ``corporate_spreads``
dataframe (parquet, a Markdown data dictionary, a manifest, an entry in the catalog), points
everything at the copy with ``FLAWEDCODE_DATA_DIR``, and talks to a v2 agent in words taken
from the new docs: the model lists the dataframe, loads it, and answers a statistic about a
column it knows only from its description.
"""

from __future__ import annotations

import shutil
from pathlib import Path

import pytest

from flawedcode import paths

DOCS = """# Corporate bond spreads (sample): `credit/corporate_spreads`

> SAMPLE DATA made for a test.

## Description

Daily option-adjusted spreads of US corporate bond indices, in basis points.

## Columns

| column | type | unit | description |
| --- | --- | --- | --- |
| `date` | datetime64[ns] | date | Business day. |
| `ig_oas` | float64 | bp | Investment-grade option-adjusted spread over Treasuries. |
| `hy_oas` | float64 | bp | High-yield option-adjusted spread over Treasuries. |
| `bbb_yield_7y` | float64 | percent | Yield of 7-year BBB-rated corporate bonds. |

## Notes

- The junk spread (`hy_oas`) widens in risk-off weeks.
"""

MANIFEST = """[project]
type = "pipeline"
id = "credit"
name = "Credit markets (sample data)"

[dataframes.corporate_spreads]
name = "Corporate bond spreads (sample)"
description = "Daily option-adjusted spreads of US corporate bond indices."
path = "./_data/corporate_spreads.parquet"
date_col = "date"
docs_path = "./docs_src/dataframes/corporate_spreads.md"
"""


@pytest.fixture
def catalog_copy(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> Path:
    import numpy as np
    import pandas as pd

    root = tmp_path / "data"
    shutil.copytree(paths.data_dir(), root)
    folder = root / "pipelines" / "credit"
    (folder / "_data").mkdir(parents=True)
    (folder / "docs_src" / "dataframes").mkdir(parents=True)
    dates = pd.bdate_range("2024-01-02", "2024-12-31")
    steps = np.random.default_rng(7).normal(0, 1, size=(len(dates), 3)).cumsum(axis=0)
    frame = pd.DataFrame({"date": dates, "ig_oas": 95 + steps[:, 0], "hy_oas": 320 + 4 * steps[:, 1],
                          "bbb_yield_7y": 5.4 + 0.02 * steps[:, 2]})
    frame.to_parquet(folder / "_data" / "corporate_spreads.parquet", index=False)
    (folder / "docs_src" / "dataframes" / "corporate_spreads.md").write_text(DOCS, encoding="utf-8")
    (folder / "chartbook.toml").write_text(MANIFEST, encoding="utf-8")
    catalog_file = root / "chartbook.toml"
    catalog_file.write_text(catalog_file.read_text(encoding="utf-8") + 'credit = { path = "pipelines/credit" }\n',
                            encoding="utf-8")
    monkeypatch.setenv("FLAWEDCODE_DATA_DIR", str(root))
    return root


def test_a_new_pipeline_is_listed_loaded_and_described_in_words(catalog_copy: Path, tmp_path: Path) -> None:
    from flawedcode.agents import make_agent
    from flawedcode.catalog import Catalog
    from flawedcode.models import OfflineModel
    from flawedcode.tools import Workspace

    workspace = Workspace.create(tmp_path / "workspace", tmp_path / "scratch", tmp_path / "archives")
    agent = make_agent("v2", model=OfflineModel(), workspace=workspace)

    listed = agent.send("which datasets do you have?")
    assert "credit/corporate_spreads" in listed and "Corporate bond spreads" in listed

    loaded = agent.send("pull the last 15 rows of the corporate bond spreads")
    assert "Loaded 15 rows of credit/corporate_spreads" in loaded

    rows = Catalog(catalog_copy).load("credit", "corporate_spreads", start="2024-01-01", end="2024-12-31")
    answer = agent.send("What was the average high-yield option-adjusted spread in 2024?")
    assert "credit/corporate_spreads hy_oas" in answer
    assert f"mean {rows['hy_oas'].mean():.4f}" in answer

    junk = agent.send("median junk spread in Q2 2024")
    quarter = rows[(rows["date"] >= "2024-04-01") & (rows["date"] <= "2024-06-30")]
    assert f"median {quarter['hy_oas'].median():.4f}" in junk

    seven = agent.send("latest 7-year BBB yield, in basis points")
    assert f"{rows['bbb_yield_7y'].iloc[-1] * 100:.4f} bp" in seven


def test_the_new_pipeline_is_read_from_catalog_root_too(catalog_copy: Path) -> None:
    from flawedcode.models.offline_entities import Vocabulary

    vocabulary = Vocabulary.from_catalog(catalog_copy)
    found = vocabulary.find("the corporate bond spreads")
    assert [ref.key for ref in found.dataframes] == ["credit/corporate_spreads"]
    match = vocabulary.match_columns("investment-grade option-adjusted spread", found.dataframes)
    assert [column for _, column in match.columns] == ["ig_oas"]
    assert vocabulary.match_columns("the junk spread").columns[0][1] == "hy_oas"  # an alias from the docs' notes
