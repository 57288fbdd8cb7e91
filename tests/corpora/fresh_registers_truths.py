"""Computes the truths of fresh_registers.yaml straight from the parquet files with pandas (not through flawedcode).

Each case's ``computed`` is a pandas expression over five frames indexed by date (sofr, effr, repo, ty, fy);
its value (a number, or a list of numbers all of which must appear) is written to ``truth``. Run:

    python tests/corpora/fresh_registers_truths.py [fresh_fallbacks]    # rewrites a set's truths in place
"""

from __future__ import annotations

import sys
from pathlib import Path

import numpy as np  # noqa: F401 - used by the expressions
import pandas as pd
import yaml

HERE = Path(__file__).parent
PIPELINES = HERE.parents[1] / "data" / "pipelines"


def frames() -> dict[str, pd.DataFrame]:
    def read(path: str) -> pd.DataFrame:
        return pd.read_parquet(PIPELINES / path).set_index("date")

    return {"sofr": read("money_markets/_data/sofr.parquet"), "effr": read("money_markets/_data/effr.parquet"),
            "repo": read("yield_curve/_data/repo_public.parquet"), "ty": read("yield_curve/_data/treasury_yields.parquet"),
            "fy": read("yield_curve/_data/fed_yield_curve.parquet")}


def truth(expression: str, namespace: dict) -> float | list[float]:
    value = eval(expression, {"pd": pd, "np": np}, namespace)  # noqa: S307 - our own file's expressions
    if isinstance(value, (list, tuple)):
        return [round(float(v), 6) for v in value]
    return round(float(value), 6)


def main(name: str = "fresh_registers") -> None:
    path = HERE / f"{name}.yaml"
    document = yaml.safe_load(path.read_text(encoding="utf-8"))
    namespace = frames()
    for case in document["cases"]:
        if case.get("computed"):
            case["truth"] = truth(case["computed"], namespace)
    header = path.read_text(encoding="utf-8").split("cases:")[0]
    path.write_text(header + yaml.safe_dump({"cases": document["cases"]}, sort_keys=False, allow_unicode=True,
                                            width=120), encoding="utf-8")


if __name__ == "__main__":
    main(*sys.argv[1:])
