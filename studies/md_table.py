"""A DataFrame as a Markdown table, as the surrogate page prints its tables: one row per
record, floats at a fixed number of digits (empty where not finite), every other value
as ``str`` (integers stay integers).

Why a module: both halves of the surrogate study (:mod:`studies.surrogate_fit` and
:mod:`studies.surrogate_oracle`) write their tables with it, and neither should import
the other for it. It differs from :func:`nasbench_bert.scoring.to_markdown` (which
titles and formats a score table), and the committed page was written with this one.
"""

from __future__ import annotations

import numpy as np
import pandas as pd


def md_table(df: pd.DataFrame, digits: int = 3) -> str:
    cols = list(df.columns)
    out = "| " + " | ".join(cols) + " |\n|" + "---|" * len(cols) + "\n"
    for r in df.itertuples(index=False):  # keeps each column's dtype (integers stay integers)
        cells = []
        for v in r:
            if isinstance(v, (float, np.floating)):
                cells.append("" if not np.isfinite(v) else f"{v:.{digits}f}")
            else:
                cells.append(str(v))
        out += "| " + " | ".join(cells) + " |\n"
    return out
