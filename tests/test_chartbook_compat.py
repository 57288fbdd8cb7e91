"""The real ``chartbook`` package reads data/ as a valid catalog, and agrees with flawedcode's reader.

Skipped when chartbook is not installed (it is a large, optional test dependency).
ChartBook looks for snapshots in a store before it reads a pipeline's working
folder; each test points ``CHARTBOOK_STORE`` at an empty temporary folder so a
student's own store can never change what is read, and nothing needs a network.
"""

from __future__ import annotations

import warnings
from pathlib import Path

import pandas as pd
import pytest

from flawedcode import paths
from flawedcode.catalog import Catalog

chartbook_data = pytest.importorskip(
    "chartbook.data", reason="the chartbook package is not installed (pip install 'chartbook>=0.2,<0.3')"
)

ALL_FRAMES = [(info.pipeline, info.dataframe) for info in Catalog(paths.PROJECT_ROOT / "data").dataframes()]


@pytest.fixture(autouse=True)
def _empty_chartbook_store(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.setenv("CHARTBOOK_STORE", str(tmp_path / "chartbook_store"))
    monkeypatch.delenv("CHARTBOOK_BATCH", raising=False)


@pytest.fixture(scope="module")
def catalog() -> Catalog:
    return Catalog(paths.PROJECT_ROOT / "data")


def quietly(call):
    """Run a chartbook call; it warns that it reads a working folder, not a snapshot, which is the point here."""
    with warnings.catch_warnings():
        warnings.simplefilter("ignore", UserWarning)
        return call()


def test_catalog_lists_five_dataframes() -> None:
    assert ALL_FRAMES == [
        ("yield_curve", "repo_public"),
        ("yield_curve", "treasury_yields"),
        ("yield_curve", "fed_yield_curve"),
        ("money_markets", "sofr"),
        ("money_markets", "effr"),
    ]


def test_chartbook_sees_the_same_pipelines_and_dataframes(catalog: Catalog) -> None:
    from chartbook.manifest import load_manifest

    manifest = quietly(lambda: load_manifest(base_dir=catalog.root))
    assert manifest["project"]["type"] == "catalog"
    assert list(manifest["pipelines"]) == catalog.pipelines()
    for pipeline in catalog.pipelines():
        assert list(manifest["pipelines"][pipeline]["dataframes"]) == [i.dataframe for i in catalog.dataframes(pipeline)]


@pytest.mark.parametrize(("pipeline", "dataframe"), ALL_FRAMES)
def test_chartbook_loads_the_same_frame(catalog: Catalog, pipeline: str, dataframe: str) -> None:
    theirs = quietly(
        lambda: chartbook_data.load(pipeline=pipeline, dataframe=dataframe, format="pandas", catalog_path=catalog.root)
    )
    pd.testing.assert_frame_equal(theirs, catalog.load(pipeline, dataframe))


@pytest.mark.parametrize(("pipeline", "dataframe"), ALL_FRAMES)
def test_chartbook_reads_the_same_docs_and_paths(catalog: Catalog, pipeline: str, dataframe: str) -> None:
    info = catalog.info(pipeline, dataframe)
    docs = quietly(lambda: chartbook_data.get_docs(pipeline=pipeline, dataframe=dataframe, catalog_path=catalog.root))
    assert docs == catalog.docs(pipeline, dataframe)
    assert quietly(lambda: chartbook_data.get_docs_path(pipeline=pipeline, dataframe=dataframe, catalog_path=catalog.root)) == info.docs_path
    data_path = quietly(lambda: chartbook_data.get_data_path(pipeline=pipeline, dataframe=dataframe, catalog_path=catalog.root))
    assert Path(data_path).resolve() == info.path


def test_chartbook_accepts_the_catalog_file_itself(catalog: Catalog) -> None:
    frame = quietly(
        lambda: chartbook_data.load(
            pipeline="money_markets", dataframe="sofr", format="pandas", catalog_path=catalog.root / "chartbook.toml"
        )
    )
    assert len(frame) == catalog.info("money_markets", "sofr").rows
