"""The sample ChartBook catalog and flawedcode's reader: what a student or a model sees."""

from __future__ import annotations

import runpy
import shutil
from pathlib import Path

import pandas as pd
import pytest

from flawedcode import paths
from flawedcode.catalog import Catalog, CatalogError, DataframeInfo

EXPECTED = {
    "yield_curve": ["repo_public", "treasury_yields", "fed_yield_curve"],
    "money_markets": ["sofr", "effr"],
}
ALL_FRAMES = [(pipeline, frame) for pipeline, frames in EXPECTED.items() for frame in frames]
# Inclusive character ranges for each data dictionary; repo_public is the lesson's "large result"
DOCS_SIZES = {
    "repo_public": (5_200, 5_600),
    "treasury_yields": (3_500, 4_500),
    "fed_yield_curve": (2_500, 4_000),
    "sofr": (2_500, 3_500),
    "effr": (2_500, 4_000),
}


@pytest.fixture(scope="module")
def catalog() -> Catalog:
    return Catalog()


# ------------------------------------------------------------ listing


def test_lists_both_pipelines_and_their_dataframes_in_order(catalog: Catalog) -> None:
    assert catalog.pipelines() == list(EXPECTED)
    for pipeline, frames in EXPECTED.items():
        assert [info.dataframe for info in catalog.dataframes(pipeline)] == frames
    assert [(info.pipeline, info.dataframe) for info in catalog.dataframes()] == ALL_FRAMES


def test_default_root_is_the_data_dir(catalog: Catalog) -> None:
    assert catalog.root == paths.data_dir()
    assert (catalog.root / "chartbook.toml").is_file()


@pytest.mark.parametrize(("pipeline", "dataframe"), ALL_FRAMES)
def test_info_matches_the_rows_on_disk(catalog: Catalog, pipeline: str, dataframe: str) -> None:
    info = catalog.info(pipeline, dataframe)
    frame = pd.read_parquet(info.path)
    assert isinstance(info, DataframeInfo)
    assert info.rows == len(frame) > 400
    assert info.columns == list(frame.columns)
    assert info.date_column == "date" == info.columns[0]
    assert (info.start, info.end) == ("2023-01-03", "2024-12-31")
    assert info.title and info.description
    assert info.docs_path.suffix == ".md" and info.docs_path.is_file()
    assert info.summary_line() == (
        f"{pipeline}/{dataframe}: {info.title} ({info.rows} rows, {len(info.columns)} columns, 2023-01-03 to 2024-12-31)"
    )


def test_dates_are_business_days_without_gaps_or_weekends(catalog: Catalog) -> None:
    dates = catalog.load("money_markets", "sofr")["date"]
    assert dates.is_monotonic_increasing and dates.is_unique
    assert not dates.dt.day_of_week.isin([5, 6]).any()
    assert pd.Timestamp("2023-07-04") not in set(dates)  # Independence Day
    assert dates.diff().dropna().max() <= pd.Timedelta(days=4)


def test_repo_public_is_the_wide_table(catalog: Catalog) -> None:
    info = catalog.info("yield_curve", "repo_public")
    assert len(info.columns) >= 40
    for column in ("tri_party_on_rate", "gcf_on_rate", "dvp_on_rate", "repo_rate_p1", "repo_rate_p99", "sofr_minus_iorb_bp"):
        assert column in info.columns


def test_all_column_names_says_where_each_column_lives(catalog: Catalog) -> None:
    columns = catalog.all_column_names()
    assert columns["date"] == ALL_FRAMES
    assert columns["sofr_minus_iorb_bp"] == [("yield_curve", "repo_public")]
    assert ("money_markets", "sofr") in columns["rate"] and ("money_markets", "effr") in columns["rate"]


def test_resolve_accepts_a_bare_id_or_a_full_name(catalog: Catalog) -> None:
    assert catalog.resolve("sofr") == ("money_markets", "sofr")
    assert catalog.resolve("yield_curve/repo_public") == ("yield_curve", "repo_public")
    assert catalog.resolve(" money_markets:effr ") == ("money_markets", "effr")


# ------------------------------------------------------------ docs


@pytest.mark.parametrize(("pipeline", "dataframe"), ALL_FRAMES)
def test_docs_are_a_sample_data_dictionary_of_every_column(catalog: Catalog, pipeline: str, dataframe: str) -> None:
    docs = catalog.docs(pipeline, dataframe)
    low, high = DOCS_SIZES[dataframe]
    assert low <= len(docs) <= high, f"{dataframe} docs are {len(docs)} characters"
    assert docs == catalog.info(pipeline, dataframe).docs_path.read_text(encoding="utf-8")
    assert "SAMPLE DATA" in docs and "NOT for research" in docs and "synthetic" in docs
    assert "| column | type | unit | description |" in docs
    assert "Shaped after" in docs
    for column in catalog.info(pipeline, dataframe).columns:
        assert f"| `{column}` |" in docs, f"{dataframe} docs do not describe {column}"


def test_repo_public_docs_are_the_large_result(catalog: Catalog) -> None:
    assert len(catalog.docs("yield_curve", "repo_public")) > 5_000


# ------------------------------------------------------------ the numbers tell the 2023-2024 story


def test_policy_path_hikes_holds_and_cuts(catalog: Catalog) -> None:
    effr = catalog.load("money_markets", "effr", columns=["rate", "target_low", "target_high"]).set_index("date")
    assert effr.loc["2023-08-15", "target_low"] == 5.25 and effr.loc["2023-08-15", "target_high"] == 5.50
    plateau = effr.loc["2023-07-27":"2024-09-18", "rate"]
    assert (plateau.round(2) == 5.33).mean() > 0.9
    assert effr.loc["2024-09-19", "target_low"] == 4.75  # -50bp, announced 2024-09-18
    assert effr.loc["2024-11-08", "target_low"] == 4.50
    assert effr.loc["2024-12-19", "target_low"] == 4.25
    assert effr.loc["2024-12-31", "rate"] == pytest.approx(4.33)


def test_sofr_plateau_and_quarter_end_spike(catalog: Catalog) -> None:
    sofr = catalog.load("money_markets", "sofr", start="2023-08-01", end="2024-09-18").set_index("date")["rate"]
    assert 5.30 <= sofr.median() <= 5.35
    repo = catalog.load("yield_curve", "repo_public").set_index("date")
    quarter_ends = repo[repo["is_quarter_end"]]
    ordinary = repo[~repo["is_month_end"]]
    assert quarter_ends["sofr_minus_rrp_bp"].mean() > ordinary["sofr_minus_rrp_bp"].mean() + 3
    assert repo.loc["2024-12-31", "sofr"] > repo.loc["2024-12-31", "iorb"]


def test_par_curve_is_inverted_in_2023(catalog: Catalog) -> None:
    curve = catalog.load("yield_curve", "treasury_yields", start="2023-01-03", end="2023-12-29")
    assert (curve["yield_2y"] > curve["yield_10y"]).all()
    assert (curve["spread_10y_2y_bp"] < 0).all()


# ------------------------------------------------------------ load


def test_load_with_columns_keeps_date_first_and_drops_the_rest(catalog: Catalog) -> None:
    frame = catalog.load("money_markets", "sofr", columns=["volume_bn", "rate"])
    assert list(frame.columns) == ["date", "volume_bn", "rate"]
    assert list(catalog.load("money_markets", "sofr", columns="rate").columns) == ["date", "rate"]
    assert list(catalog.load("money_markets", "sofr", columns=["date", "rate"]).columns) == ["date", "rate"]


def test_load_filters_dates_inclusively(catalog: Catalog) -> None:
    frame = catalog.load("money_markets", "sofr", start="2024-09-16", end="2024-09-20")
    assert [d.strftime("%Y-%m-%d") for d in frame["date"]] == [
        "2024-09-16", "2024-09-17", "2024-09-18", "2024-09-19", "2024-09-20"
    ]
    assert frame.loc[3, "rate"] < frame.loc[2, "rate"] - 0.4  # the 50bp cut shows the next day
    assert frame.index.tolist() == list(range(5))


def test_load_limit_keeps_the_last_rows_in_date_order(catalog: Catalog) -> None:
    frame = catalog.load("yield_curve", "treasury_yields", limit=3)
    assert [d.strftime("%Y-%m-%d") for d in frame["date"]] == ["2024-12-27", "2024-12-30", "2024-12-31"]
    window = catalog.load("yield_curve", "treasury_yields", end="2023-06-30", limit=2)
    assert [d.strftime("%Y-%m-%d") for d in window["date"]] == ["2023-06-29", "2023-06-30"]
    assert len(catalog.load("money_markets", "effr", limit=10_000)) == catalog.info("money_markets", "effr").rows


def test_load_accepts_date_objects(catalog: Catalog) -> None:
    by_text = catalog.load("money_markets", "effr", start="2024-01-02", end="2024-01-31")
    by_object = catalog.load("money_markets", "effr", start=pd.Timestamp("2024-01-02"), end=pd.Timestamp("2024-01-31").date())
    pd.testing.assert_frame_equal(by_text, by_object)


# ------------------------------------------------------------ errors a model can act on


def error_of(call) -> str:
    with pytest.raises(CatalogError) as caught:
        call()
    return str(caught.value)


def test_unknown_dataframe_suggests_the_close_name(catalog: Catalog) -> None:
    assert error_of(lambda: catalog.info("money_markets", "sofrr")) == (
        "Unknown dataframe 'sofrr' in pipeline 'money_markets'. Did you mean 'sofr'? Available: sofr, effr."
    )


def test_dataframe_in_the_other_pipeline_says_where_it_is(catalog: Catalog) -> None:
    message = error_of(lambda: catalog.load("yield_curve", "sofr"))
    assert "money_markets/sofr" in message and "repo_public, treasury_yields, fed_yield_curve" in message


def test_unknown_pipeline_suggests_and_lists(catalog: Catalog) -> None:
    message = error_of(lambda: catalog.docs("money_market", "sofr"))
    assert "Did you mean 'money_markets'?" in message and "Available: yield_curve, money_markets." in message
    assert isinstance(CatalogError("x"), ValueError)


def test_resolve_errors_name_the_options(catalog: Catalog) -> None:
    assert "Did you mean 'sofr'?" in error_of(lambda: catalog.resolve("SOFR"))
    assert "Did you mean 'repo_public'?" in error_of(lambda: catalog.resolve("repo"))
    assert "money_markets/sofr, money_markets/effr" in error_of(lambda: catalog.resolve("money_markets"))


def test_unknown_column_lists_valid_columns_and_where_it_lives(catalog: Catalog) -> None:
    message = error_of(lambda: catalog.load("money_markets", "sofr", columns=["rat", "sofr_minus_iorb_bp"]))
    assert "Unknown column 'rat' in money_markets/sofr. Did you mean 'rate'?" in message
    assert "'sofr_minus_iorb_bp' is a column of yield_curve/repo_public" in message
    assert message.endswith(
        "Valid columns: date, rate, percentile_1, percentile_25, percentile_75, percentile_99, volume_bn, average_30d, index_value."
    )
    assert error_of(lambda: catalog.rows("money_markets", "sofr", ["rat", "sofr_minus_iorb_bp"])) == message


def test_inverted_date_range_says_so(catalog: Catalog) -> None:
    message = error_of(lambda: catalog.load("money_markets", "sofr", start="2024-05-01", end="2024-01-01"))
    assert "inverted" in message and "2024-05-01 is after end 2024-01-01" in message


def test_empty_date_range_says_what_the_data_covers(catalog: Catalog) -> None:
    message = error_of(lambda: catalog.load("money_markets", "effr", start="2025-01-01", end="2025-03-01"))
    assert "No rows" in message and "covers 2023-01-03 to 2024-12-31" in message
    assert "covers 2023-01-03" in error_of(lambda: catalog.load("money_markets", "effr", start="2023-07-04", end="2023-07-04"))


@pytest.mark.parametrize("bad", ["05/01/2024", "2024-13-01", "yesterday"])
def test_unparseable_date_names_the_expected_format(catalog: Catalog, bad: str) -> None:
    message = error_of(lambda: catalog.load("money_markets", "sofr", end=bad))
    assert f"Cannot read end date {bad!r}" in message and "YYYY-MM-DD" in message


@pytest.mark.parametrize("bad", [0, -5, 2.5, True])
def test_limit_must_be_a_positive_whole_number(catalog: Catalog, bad) -> None:
    assert "limit must be a positive whole number" in error_of(lambda: catalog.load("money_markets", "sofr", limit=bad))


def test_missing_catalog_and_missing_file_say_how_to_fix(tmp_path: Path) -> None:
    assert "python data/generate.py" in error_of(lambda: Catalog(tmp_path))
    copy = tmp_path / "data"
    shutil.copytree(paths.data_dir(), copy, ignore=shutil.ignore_patterns("demo_project"))
    (copy / "pipelines" / "money_markets" / "_data" / "effr.parquet").unlink()
    broken = Catalog(copy)
    assert broken.load("money_markets", "sofr", limit=1).shape[0] == 1
    message = error_of(lambda: broken.info("money_markets", "effr"))
    assert "effr.parquet does not exist" in message and "python data/generate.py" in message


def test_data_dir_override_moves_the_catalog(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    copy = tmp_path / "elsewhere"
    shutil.copytree(paths.data_dir(), copy, ignore=shutil.ignore_patterns("demo_project"))
    monkeypatch.setenv("FLAWEDCODE_DATA_DIR", str(copy))
    assert Catalog().info("money_markets", "sofr").path == (copy / "pipelines/money_markets/_data/sofr.parquet").resolve()


# ------------------------------------------------------------ the generator


def test_generator_reproduces_the_committed_files() -> None:
    """Editing data/generate.py without re-running it would leave the committed catalog stale."""
    generate = runpy.run_path(str(paths.PROJECT_ROOT / "data" / "generate.py"), run_name="flawedcode_data_generate")
    catalog = Catalog(paths.PROJECT_ROOT / "data")
    for built in generate["build_dataframes"]():
        info = catalog.info(built.pipeline, built.dataframe)
        pd.testing.assert_frame_equal(built.frame, pd.read_parquet(info.path))
        assert generate["render_docs"](built) == catalog.docs(built.pipeline, built.dataframe)
