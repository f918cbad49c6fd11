"""The release's stored proxy values, scored: :func:`score_stored` ranks every proxy the
authors stored against its benchmark's target, optionally beside the trivial baselines.

Why a module of its own: these are the figures a reader compares a new proxy with (the
leaderboard's stored rows, ``nasbench-bert proxies score``), so how they are scored - which
columns, which target, which size they are controlled for, which semantics the baselines
count - is stated in one place and nowhere else.
"""

from __future__ import annotations

from typing import Iterable

import pandas as pd

from ..errors import InvalidArgumentError
from ..vocabulary import BenchmarkLike
from .baselines import baseline_values
from .benchmarks import scoring_space
from .scores import score


#: the semantics of the trivial baselines' parameter counts when the release's stored
#: values are scored (the model behind the GLUE scores)
STORED_BASELINE_SEMANTICS = "as_trained"


def stored_values(space: str, bench: BenchmarkLike | None = None) -> tuple[pd.DataFrame, str]:
    """The release's stored proxy values with their identifying columns, and the target."""
    sp = scoring_space(space)
    return sp.stored(bench), sp.stored_target


def score_stored(space: str = "flexibert", *, bench: BenchmarkLike | None = None, bootstrap: int = 200, seed: int = 0,
                 baselines: bool = False, target: str | Iterable[str] | None = None) -> pd.DataFrame:
    """Score every stored proxy of the release against its benchmark's target
    (FlexiBERT: GLUE over the 500 ids, controlling for the as-trained size;
    NAS-Bench-NLP: -PTB test loss over its runs).

    ``baselines``: add the trivial spec baselines' rows (FlexiBERT: parameter counts
    of the as-trained model, :data:`STORED_BASELINE_SEMANTICS`; NAS-Bench-NLP: only the
    runs with a public recipe have one, ``n`` says how many). ``target``: another
    target or a list (e.g. ``["glue", *GLUE_TASKS]``); default the benchmark's."""
    sp = scoring_space(space)
    if not isinstance(baselines, bool):
        raise InvalidArgumentError(f"baselines = {baselines!r} is not allowed; allowed: True or False")
    df = sp.stored(bench)
    names = sp.stored_columns(df)
    if baselines:
        base = baseline_values(df, space, semantics=STORED_BASELINE_SEMANTICS, bench=bench)
        df = pd.concat([df.reset_index(drop=True).drop(columns=[c for c in base.columns if c in df]), base], axis=1)
        names = names + [c for c in base.columns if c not in names]
    return score(df, sp.stored_target if target is None else target, proxies=names, space=space, control=sp.control,
                 bootstrap=bootstrap, seed=seed, bench=bench)
