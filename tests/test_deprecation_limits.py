"""The limits of the column deprecation are documented, and the page says what happens
(issue 37, item 14): ``'num_params' in df`` is silently False, and so are other pandas
paths a ``DataFrame`` subclass cannot alias. Every row of the table in docs/releases.md
("Where the old column names do not answer") is run here on a real frame."""

from __future__ import annotations

import re
import warnings

import numpy as np
import pandas as pd

from conftest import ROOT

PAGE = ROOT / "docs" / "releases.md"


def _table() -> dict[str, str]:
    section = PAGE.read_text().split("### Where the old column names do not answer", 1)[1].split("\n#", 1)[0]
    rows = re.findall(r"^\| `(.+?)` \| (.+?) \|$", section, re.M)
    assert rows, "docs/releases.md has no table of the deprecation's limits"
    return dict(rows)


def _run(code: str, df: pd.DataFrame) -> tuple[str, object, list[warnings.WarningMessage]]:
    with warnings.catch_warnings(record=True) as w:
        warnings.simplefilter("always")
        try:
            return "ok", eval(code, {"df": df, "pd": pd}), w
        except Exception as e:  # noqa: BLE001 - the outcome under test
            return "raised", e, w


def test_every_documented_limit_is_what_happens(bench):
    df = bench.to_pandas()
    new = pd.DataFrame(df)["num_params_as_specified"]
    table = _table()
    assert {"\"num_params\" in df", "df.loc[:, \"num_params\"]", "df.rename(columns={\"num_params\": \"p\"})"} <= set(table)
    for code, said in table.items():
        outcome, value, w = _run(code, df)
        deprecations = [x for x in w if issubclass(x.category, DeprecationWarning)]
        if said.startswith("answers, warns"):
            assert outcome == "ok" and deprecations, (code, value)
            col = value if isinstance(value, pd.Series) else value.iloc[:, -1]
            assert np.array_equal(col.to_numpy(), new.to_numpy()), code
        elif said.startswith("raises"):
            assert outcome == "raised" and isinstance(value, (KeyError, NameError)), (code, value)
        elif said.startswith("silently"):
            assert outcome == "ok" and not deprecations, (code, value)
            checks = {
                "silently False": lambda v: v is False,
                "silently renames nothing": lambda v: list(v.columns) == list(df.columns),
                "silently selects no column": lambda v: v.shape == (len(df), 0),
                "silently a column of NaN": lambda v: v.shape == (len(df), 1) and v.iloc[:, 0].isna().all(),
                "silently the new names only": lambda v: "num_params" not in v and "num_params_as_specified" in v,
            }
            assert said in checks, f"{said!r}: a description the test does not know"
            assert checks[said](value), (code, value)
        else:
            raise AssertionError(f"{code}: unknown outcome {said!r}")
