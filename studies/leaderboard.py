"""The proxy leaderboard behind docs/leaderboard.md: every proxy, every semantics, the
parameter counts, the trivial spec baselines and the published records, side by side,
under the field's metrics.

    python -m studies.leaderboard [--out docs/leaderboard.md] [--bootstrap 1000] [--render-only]

Live values are the proxy-values table of the data release (``Benchmark.proxy_values``,
read through :mod:`studies.table_values`): no cache, no sweep, so every figure can be
recomputed from the table alone with the package's public metrics, and the JSON records
the table's sha256. Stored values are the release's. Scores
(``nasbench_bert.scoring.score``, 95 % bootstrap intervals over the 500 ids): Kendall
tau-b, the expected tau-b under random tie-breaking, Spearman rho, NSC's 10 %-PW tau
(as-specified parameter count), the within-cell tau (pairs of one (layers, hidden size)
cell) and the within-arch tau (pairs of equal layers, hidden size and total heads), each
as tau-b and tie-broken, Kendall's partial tau given the as-trained parameter count,
top-10 % precision, and the cost per arch where the table was built. The noise ceilings
come from :func:`nasbench_bert.surrogate.noise.rank_ceilings`. A proxy that is rounding
noise by construction (the table's provenance lists them) is marked *noise* and never
named by a verdict. The page opens with a figure (:mod:`studies.leaderboard_figure`).

This module computes the records; the page is rendered from them by
:mod:`studies.leaderboard_render`, and the kinds of rows both share (the published
records, the trivial rules, the size counts, which rows a verdict may name) are
:mod:`studies.leaderboard_rows`. Their public names are re-exported here.
"""

from __future__ import annotations

import argparse
import json
import time
from pathlib import Path
from typing import Any

import numpy as np
import pandas as pd

# the rows' definitions and the page are modules of their own; their public names stay
# importable from here, where the other studies and the tests have always found them
from studies.leaderboard_render import WITHIN as WITHIN
from studies.leaderboard_render import this_machine
from studies.leaderboard_render import comparisons_table as comparisons_table
from studies.leaderboard_render import render as render
from studies.leaderboard_render import render_stored
from studies.leaderboard_rows import FITTED_ON_FIRST_HALF, HELD_OUT_IDS, PUBLISHED, SEMANTICS_FREE, SIZE_LIKE, TRIVIAL
from studies.leaderboard_rows import free_rows


def _live(bench: Any, sem: str) -> pd.DataFrame:
    """The live values of one semantics, from the proxy-values table: every proxy but the
    trivial spec rules (scored as baselines of their own); the readings no semantics changes
    (:data:`SEMANTICS_FREE`) only under as_trained; ZeroLM's fitted forms only on the ids
    its alpha never saw."""
    from studies.table_values import live, scored_proxies

    full = live(bench, sem)
    keep = [c for c in scored_proxies(full) if sem == "as_trained" or c not in SEMANTICS_FREE]
    out = full[["id", "arch", *keep]].copy()
    out.attrs = full.attrs
    for n in FITTED_ON_FIRST_HALF & set(out.columns):
        out.loc[~out["id"].isin(HELD_OUT_IDS), n] = np.nan
    return out


#: why a live proxy is not finite on some archs, where the reason is known (checked when the
#: leaderboard is built: every such arch must fit the stated reason)
NONFINITE_WHY: dict[tuple[str, str], tuple[str, Any]] = {
    ("head_softmax_confidence_norm", "as_specified"): (
        "all without a self-attention layer: the normalised value divides by the number of softmax outputs, and "
        "these models record none", lambda arch: "SA-" not in arch),
}


def _nonfinite_note(df: pd.DataFrame, proxy: str, sem: str, note: Any) -> Any:
    """The row's note, plus "not finite on k of n archs" (and why, from :data:`NONFINITE_WHY`)
    for a live proxy scored on fewer archs than were computed: a row never loses archs
    without saying so."""
    if proxy not in df.columns:
        return note
    v = pd.to_numeric(df[proxy], errors="coerce").to_numpy(float)
    bad = ~np.isfinite(v)
    if proxy in FITTED_ON_FIRST_HALF:
        bad &= df["id"].isin(HELD_OUT_IDS).to_numpy()
    if not bad.any():
        return note
    text = f"not finite on {int(bad.sum())} of {len(v)} archs"
    why = NONFINITE_WHY.get((proxy, sem))
    if why is not None:
        archs = df.loc[bad, "arch"].astype(str)
        if not all(why[1](a) for a in archs):
            raise RuntimeError(f"{proxy} under {sem}: the stated reason for its non-finite values no longer holds")
        text += f" ({why[0]})"
    return "; ".join(x for x in (note if isinstance(note, str) else "", text) if x)


#: a live proxy with fewer distinct values than this over the archs gets a note: its τ-b is
#: earned by ties and its tie-broken τ is a coin toss inside each tie
FEW_VALUES = 20
#: why a proxy takes few values on the live batch, where the reason is known
FEW_VALUES_WHY = {
    "swap": "SWAP counts distinct sign patterns over the batch's B = 8 sequences, so its count is capped at "
            "2^8 = 256 (or 3^8 = 6561 where an activation is exactly 0); [Published proxies](published.md) runs it "
            "on 16 sequences too",
}


def _few_values_note(df: pd.DataFrame, proxy: str, note: Any) -> Any:
    """The row's note, plus "k distinct values over n archs" when a live proxy takes fewer
    than :data:`FEW_VALUES` values (and why, from :data:`FEW_VALUES_WHY`)."""
    if proxy not in df.columns:
        return note
    v = pd.to_numeric(df[proxy], errors="coerce").to_numpy(float)
    v = v[np.isfinite(v)]
    k = len(np.unique(v))
    if not len(v) or k >= FEW_VALUES:
        return note
    text = f"{k} distinct values over {len(v)} archs"
    if proxy in FEW_VALUES_WHY:
        text += f" ({FEW_VALUES_WHY[proxy]})"
    return "; ".join(x for x in (note if isinstance(note, str) else "", text) if x)


def _analytic_cost() -> float:
    from nasbench_bert.sizes import flexibert_num_params
    from nasbench_bert.spaces.flexibert import FLEXIBERT_SPACE

    archs = FLEXIBERT_SPACE.sample(500, seed=0)
    t = time.perf_counter()
    for a in archs:
        flexibert_num_params(a, "as_trained")
    return (time.perf_counter() - t) / len(archs)


def leaderboard(bench: Any, bootstrap: int = 1000) -> pd.DataFrame:
    from nasbench_bert.scoring import score, score_stored

    from studies.table_values import noise, seconds_per_row

    rows = []
    frames: dict[str, pd.DataFrame] = {}
    for sem in ("as_trained", "as_specified", "authors"):
        df = _live(bench, sem)
        frames[sem] = df
        cols = [c for c in df.columns if c not in ("id", "arch")]
        s = score(df, "glue", proxies=cols, control="num_params_as_trained", bench=bench, bootstrap=bootstrap)
        s["semantics"] = sem
        s["source"] = "live"
        s["seconds_per_arch"] = [seconds_per_row(df, p) for p in s.proxy]
        s["noise"] = s["proxy"].isin(noise(df))
        fitted = s["proxy"].isin(FITTED_ON_FIRST_HALF)
        if "note" not in s.columns:
            s["note"] = None
        s["note"] = [_nonfinite_note(df, r.proxy, sem, r.note) for r in s.itertuples()]
        s["note"] = [_few_values_note(df, r.proxy, r.note) for r in s.itertuples()]
        s.loc[fitted, "note"] = [
            "; ".join(x for x in (str(n) if isinstance(n, str) else "", "scored on ids 250-499 only: its alpha was "
                                  "chosen on ids 0-249 (the best Spearman rho there, the NSC authors' rule)") if x)
            for n in s.loc[fitted, "note"]]
        s["batch"] = df.attrs.get("batch")
        rows.append(s)
    st = score_stored("flexibert", bench=bench, bootstrap=bootstrap)
    # score_stored also ranks the package's own size columns; they are the analytic-count rows below
    st = st[~st["proxy"].isin(["num_params_as_trained", "num_params_as_specified"])]
    st["semantics"] = "authors"
    st["source"] = "stored (release)"
    st["seconds_per_arch"] = np.nan
    rows.append(st)
    # the analytic parameter counts of each model
    flex = bench.to_pandas()
    counts = flex[["id", "num_params_as_trained", "num_params_as_specified", "num_params_authors"]]
    sc = score(counts, "glue", proxies=list(counts.columns[1:]), control="num_params_as_trained", bench=bench, bootstrap=bootstrap)
    sc["semantics"] = sc["proxy"].str.replace("num_params_", "")
    sc["source"] = "analytic count"
    sc["seconds_per_arch"] = _analytic_cost()
    rows.append(sc)
    # the trivial spec baselines, on the model that was trained
    from nasbench_bert.scoring import baseline_values

    base = baseline_values(flex[["id"]], "flexibert", semantics="as_trained", bench=bench, names=TRIVIAL)
    base.insert(0, "id", flex["id"].to_numpy())
    sb = score(base, "glue", proxies=list(base.columns[1:]), control="num_params_as_trained", bench=bench,
               bootstrap=bootstrap)
    sb["semantics"] = "as_trained"
    sb["source"] = "trivial baseline (spec)"
    sb["seconds_per_arch"] = np.nan
    rows.append(sb)
    out = pd.concat(rows, ignore_index=True)
    out["size_like"] = out["proxy"].isin(SIZE_LIKE) | (out["source"] == "analytic count")
    out["noise"] = out["noise"].eq(True)
    out["partial_ci_low"] = out["partial_ci_high"] = np.nan
    # bootstrap intervals of the partial tau, for the live training-free proxies that add most beyond size
    top = out[(out.source == "live") & ~out.size_like & ~out.noise].sort_values("partial_tau_given_params",
                                                                                 ascending=False).head(6)
    for i, r in top.iterrows():
        out.loc[i, ["partial_ci_low", "partial_ci_high"]] = _partial_ci(frames[r.semantics], r.proxy, flex, bootstrap)
    # sorted by the tie-broken tau: tau-b rewards ties (depth's two values earn 0.68 from them)
    return out.sort_values(["tau_tiebroken", "kendall_tau"], ascending=False, na_position="last").reset_index(drop=True)


def _partial_ci(values: pd.DataFrame, proxy: str, flex: pd.DataFrame, bootstrap: int,
                seed: int = 0) -> tuple[float, float]:
    """95 % bootstrap interval (over archs) of the partial Kendall tau of ``proxy`` and
    GLUE given the as-trained parameter count."""
    from nasbench_bert.scoring import partial_tau

    f = flex.set_index("id")
    v = values.set_index("id")[proxy].astype(float)
    ok = np.isfinite(v.to_numpy())
    ids = v.index.to_numpy()[ok]
    x, y, z = v.to_numpy()[ok], f.loc[ids, "glue"].to_numpy(float), f.loc[ids, "num_params_as_trained"].to_numpy(float)
    rng = np.random.default_rng(seed)
    b = []
    for _ in range(max(bootstrap // 5, 100)):
        k = rng.integers(0, len(x), len(x))
        b.append(partial_tau(x[k], y[k], z[k]))
    return float(np.nanpercentile(b, 2.5)), float(np.nanpercentile(b, 97.5))


def _values_of(bench: Any, proxy: str, semantics: str, source: str) -> np.ndarray:
    """One leaderboard row's values on the benchmark's ids in order (NaN where the row is
    not scored): live as :func:`_live` gives them (the proxy-values table), stored from the release, analytic counts and trivial rules from the spec."""
    from nasbench_bert.scoring import baseline_values, stored_values

    flex = bench.to_pandas().sort_values("id").reset_index(drop=True)
    if source == "live":
        return _live(bench, semantics).set_index("id")[proxy].reindex(flex["id"]).to_numpy(float)
    if source == "stored (release)":
        st = stored_values("flexibert", bench)[0].set_index("id")
        return st[proxy].reindex(flex["id"]).to_numpy(float)
    if source == "analytic count":
        return flex[proxy].to_numpy(float)
    if source == "trivial baseline (spec)":
        return baseline_values(flex[["id"]], "flexibert", semantics=semantics, bench=bench, names=[proxy])[proxy].to_numpy(float)
    from nasbench_bert.errors import InvalidArgumentError

    raise InvalidArgumentError(f"source = {source!r} is not allowed; allowed values: 'live', 'stored (release)', "
                               "'analytic count', 'trivial baseline (spec)'")


#: rows always compared with the rules beside the verdict's own: the field's two most-cited
#: proxies since NAS-Bench-Suite-Zero, and the seed paper's best, on the model that was trained
NAMED_COMPARISONS: list[tuple[str, str, str]] = [
    ("zico", "as_trained", "live"), ("meco", "as_trained", "live"), ("head_softmax_confidence", "as_trained", "live"),
]


def verdict_candidates(lb: pd.DataFrame) -> list[tuple[str, str, str]]:
    """The training-free rows the verdict names: the best by tie-broken τ over all archs and
    the best by each within-cell τ (live or stored, not a size count), as (proxy,
    semantics, source), without repeats."""
    free = free_rows(lb)
    out: list[tuple[str, str, str]] = []
    for col in ("tau_tiebroken", "tau_within_cell", "tau_within_cell_tb"):
        r = free.sort_values(col, ascending=False, na_position="last").iloc[0]
        if (r.proxy, r.semantics, r.source) not in out:
            out.append((r.proxy, r.semantics, r.source))
    return out


def verdict_comparisons(bench: Any, lb: pd.DataFrame, bootstrap: int = 1000) -> list[dict[str, Any]]:
    """Paired differences (:func:`studies.verdicts.compare`) of the verdict's proxies
    (:func:`verdict_candidates`) against ``depth_then_width`` and ``depth_width_then_size``
    under the tie-broken τ and both within-cell τ, for the JSON's ``verdict_comparisons``."""
    from nasbench_bert.scoring import rank_context

    from studies.verdicts import RULES, compare

    flex = bench.to_pandas().sort_values("id").reset_index(drop=True)
    cells = rank_context(flex[["id"]], "flexibert", bench).cells
    rules = {r: _values_of(bench, r, "as_trained", "trivial baseline (spec)") for r in RULES}
    out: list[dict[str, Any]] = []
    named = verdict_candidates(lb)
    named += [t for t in NAMED_COMPARISONS if t not in named and ((lb.proxy == t[0]) & (lb.semantics == t[1])).any()]
    for proxy, sem, source in named:
        x = _values_of(bench, proxy, sem, source)
        for c in compare({proxy: x}, flex["glue"].to_numpy(float), cells, rules, bootstrap=bootstrap):
            out.append({**c.as_dict(), "semantics": sem, "source": source})
    return out


def best_proxy_depth_ranges(bench: Any, lb: pd.DataFrame) -> dict[str, Any] | None:
    """(min, max) per depth of the best live training-free proxy by tie-broken tau."""
    free = free_rows(lb)
    free = free[free.source == "live"].sort_values("tau_tiebroken", ascending=False)
    if not len(free):
        return None
    r = free.iloc[0]
    df = _live(bench, r.semantics)
    flex = bench.to_pandas().set_index("id")
    depth = flex.loc[df["id"], "num_layers"].to_numpy()
    v = df[r.proxy].to_numpy(float)
    return {"proxy": r.proxy, "semantics": r.semantics,
            **{str(d): (float(np.nanmin(v[depth == d])), float(np.nanmax(v[depth == d]))) for d in (2, 4)}}


def main(argv: list[str] | None = None) -> int:
    ap = argparse.ArgumentParser(prog="python -m studies.leaderboard", description=__doc__.split("\n\n")[0])
    ap.add_argument("--out", default="docs/leaderboard.md")
    ap.add_argument("--bootstrap", type=int, default=1000)
    ap.add_argument("--render-only", action="store_true", help="rewrite the page (and its figure) from its JSON; "
                                                               "compute nothing")
    ap.add_argument("--verdicts-only", action="store_true",
                    help="recompute only the verdict's paired differences (from the table) into the JSON, then render")
    a = ap.parse_args(argv)
    out = Path(a.out)
    if a.render_only:
        stored = json.loads(out.with_suffix(".json").read_text())
    elif a.verdicts_only:
        from nasbench_bert import Benchmark

        stored = json.loads(out.with_suffix(".json").read_text())
        stored["verdict_comparisons"] = verdict_comparisons(
            Benchmark.load(progress=False), pd.DataFrame.from_records(stored["leaderboard"]), stored["bootstrap"])
    else:
        from nasbench_bert import Benchmark
        from nasbench_bert.surrogate.noise import rank_ceilings

        from studies.pages import provenance
        from studies.table_values import record

        bench = Benchmark.load(progress=False)
        lb = leaderboard(bench, a.bootstrap)
        table = record(bench)
        stored = {"leaderboard": lb.drop(columns=["batch"], errors="ignore").to_dict(orient="records"),
                  "published": PUBLISHED, "ceilings": rank_ceilings(bench, reps=100),
                  "best_proxy_depth_ranges": best_proxy_depth_ranges(bench, lb),
                  "verdict_comparisons": verdict_comparisons(bench, lb, a.bootstrap),
                  "bootstrap": a.bootstrap, "machine": this_machine(), "live_batch": table["batch"], "proxy_values": table,
                  "provenance": provenance("python -m studies.leaderboard", bench, ids="0-499", bootstrap=a.bootstrap,
                                           bootstrap_seed=0, ceilings_reps=100, proxy_values_sha256=table["sha256"])}
    # the page is rendered from the JSON text as written, so --render-only gives the same page
    text = json.dumps(stored, indent=1, default=str) + "\n"
    md = render_stored(json.loads(text), out)
    from nasbench_bert.atomic import atomic_write

    atomic_write(out.with_suffix(".json"), text)
    atomic_write(out, md)
    print(md)
    return 0


if __name__ == "__main__":
    raise SystemExit(main())
