"""Every published FlexiBERT proxy, reproduced in its paper's protocol and run under the
three semantics, and the model-based ones on real text: the table behind ``docs/published.md``.

    python -m studies.published [--cache data/published-cache] [--out docs/published.md] [--data DIR]
                                [--small] [--jobs N] [--own-only] [--from-values] [--table-rows]
                                [--render-only] [--nsc-rows]

Where the values come from (:mod:`studies.published_runs`):

* the model-based proxies under the three semantics, on all 500 archs on the package's
  default proxy batch (:data:`SWEEP_BATCH`), are the **proxy-values table**
  (``bench.proxy_values``, through :func:`studies.table_values.live`): nothing of them is
  computed here, and the JSON records the table (:func:`studies.table_values.record`, its
  sha256 in the provenance);
* the page's **own runs**, experiments in other protocols that the table does not hold
  (the W-PCA protocol runs, the NSC authors' construction on the sweep batch, LPZero /
  SWAP / W-PCA on real text (GLUE RTE, :func:`rte_text`) beside a second random seed,
  SWAP at 16 sequences, ZeroLM on instantiated weights), are computed in float64, the
  table's precision, into ``--cache`` (one part file per arch, so an interrupted run
  resumes; about 70 minutes of one process on 2 shared cores) and their per-arch values are written beside the
  page (``docs/published_values.parquet``, :mod:`studies.published_values`).

Modes: no flag computes the own runs (or reads them back from the cache), writes the
companion file and makes the page from it and the table. ``--own-only`` computes the own
runs and writes the companion file, then stops (the table is not needed). ``--from-values``
computes no proxy: every figure from the table and the committed companion file (minutes;
what a reader or CI recomputes). ``--table-rows`` recomputes only the figures the table
gives (with the closed forms and the rules; a few minutes) into the JSON beside ``--out``
and carries every own-run figure, its record and NSC's rows over from that JSON unchanged
(:func:`studies.published_sources.carry_own_runs`): the page's form while the own runs'
per-arch values are not shipped (the page says so, and names the command that recomputes
them). ``--render-only`` rewrites the page from the JSON beside it
(``docs/published.json``) without computing anything: the default test suite checks that the
committed page is exactly that rendering. ``--small`` is a 40-arch form (:data:`SMALL_IDS`,
every 12th id: the table's values there, the own runs computed on them) made in a few minutes
(for trying the script; the page says so). ``--nsc-rows`` computes only NSC's #FLOPs, SNIP
and GradNorm rows (``studies/nsc_rows.py``) into that JSON, keeping its other figures, and
renders; the other modes keep the JSON's NSC rows as they are (a ``--small`` page has none).

The figures: :mod:`studies.published_summary` (how each is computed),
:mod:`studies.published_metrics` (the package's metrics, the bootstrap), where each group
comes from: :mod:`studies.published_sources`, the page: :mod:`studies.published_render`.
"""

from __future__ import annotations

import argparse
import json
from pathlib import Path
from typing import Any

from studies.published_metrics import BOOTSTRAP, RULES, VERDICT_METRICS, metrics, paired, word  # noqa: F401
from studies.published_render import render  # noqa: F401
from studies.published_runs import (  # noqa: F401
    DTYPE, NSC_EVAL_IDS, ROOT, RTE_SPLITS, SEED_IDS, SEMANTICS, SMALL_IDS, SWAP16_IDS, SWEEP_BATCH, SWEEP_IDS,
    TEXT_IDS, TEXT_PROXIES, W_PCA_SEM_IDS, Run, describe_ids, release_dir, rte_text, rte_text_available, runs,
    small_kwargs,
)
from studies.published_summary import PAPER_RHO  # noqa: F401

DOC = ROOT / "docs" / "published.md"


def own_runs(bench: Any, cache: Path, ids: tuple[int, ...], jobs: int, small: bool, companion: Path) -> dict[str, Any]:
    """The own runs computed (or read back from ``cache``) and written to ``companion``;
    returns the record of the written file."""
    import os
    import platform

    import torch

    from studies import published_runs, published_values

    values = published_runs.own_values(cache, ids, bench, jobs=jobs, small=small)
    return published_values.write(companion, values, dtype=DTYPE, torch_version=torch.__version__,
                                  machine=f"{platform.machine()}, {os.cpu_count()} CPUs, torch {torch.__version__}")


def companion_problem(companion: Path, ids: tuple[int, ...]) -> str | None:
    """Why ``companion`` cannot give the page of ``ids`` (None when it can): it is missing,
    or holds the own runs of other ids (the other form, full or ``--small``)."""
    from studies import published_values

    if not companion.is_file():
        return f"{companion} does not exist; compute the own runs first (--own-only)"
    got = published_values.read(companion).get("w_pca_nsc/nsc_eval", {}).get("ids")
    if got != list(ids):
        return (f"{companion} holds the own runs of {describe_ids(got or [])}, not of {describe_ids(ids)} "
                "(--small is the 40-arch form)")
    return None


def from_values(bench: Any, ids: tuple[int, ...], companion: Path, small: bool) -> dict[str, Any]:
    """Every figure of the page from the proxy-values table and the companion file (no
    proxy computed): the summary, with the records of both files."""
    from studies import published_runs, published_values
    from studies.published_summary import summarize
    from studies.table_values import record

    own = published_values.read(companion)
    values = {**published_runs.table_values(bench, ids), **published_runs.spec_values(bench, ids), **own}
    table = bench.to_pandas()
    glue = dict(zip((int(i) for i in table["id"]), table["glue"].astype(float)))
    archs = dict(zip((int(i) for i in table["id"]), (str(a) for a in table["arch"])))
    return {**summarize(values, glue, archs, small=small), "proxy_values": record(bench),
            "own_runs": {"shipped": True, **published_values.describe(companion)}}


def table_rows(bench: Any, stored: dict[str, Any]) -> dict[str, Any]:
    """The figures the proxy-values table gives (with the closed forms and the rules),
    recomputed on all 500 archs; every own-run figure, their record and NSC's rows carried
    over from ``stored`` (the page's JSON) unchanged. No proxy is computed but the closed
    forms (microseconds)."""
    from studies import published_runs
    from studies.published_sources import carry_own_runs
    from studies.published_summary import summarize
    from studies.table_values import record

    ids = tuple(range(500))
    values = {**published_runs.table_values(bench, ids), **published_runs.spec_values(bench, ids)}
    table = bench.to_pandas()
    glue = dict(zip((int(i) for i in table["id"]), table["glue"].astype(float)))
    archs = dict(zip((int(i) for i in table["id"]), (str(a) for a in table["arch"])))
    return {**carry_own_runs(summarize(values, glue, archs), stored), "proxy_values": record(bench)}


def _provenance(summary: dict[str, Any], bench: Any, small: bool, mode: str) -> dict[str, Any]:
    from studies.pages import provenance

    own = summary["own_runs"]
    ids = SMALL_IDS if small else tuple(range(500))
    kw = small_kwargs(ids) if small else dict(text_ids=TEXT_IDS, seed_ids=SEED_IDS, swap16_ids=SWAP16_IDS,
                                              nsc_eval_ids=NSC_EVAL_IDS, w_pca_sem_ids=W_PCA_SEM_IDS)
    return provenance(
        "python -m studies.published" + mode + (" --small" if small else ""), bench,
        ids=describe_ids(ids), sweep_ids=describe_ids(ids), sweep_batch=SWEEP_BATCH, own_runs_dtype=own["dtype"],
        proxy_values_sha256=summary["proxy_values"]["sha256"],
        own_runs=(f"docs/{own['file']} (sha256 {own['sha256']})" if own.get("shipped") else
                  f"carried over from the JSON of {own['generated']} (commit {own['commit']}), values not shipped"),
        text=f"GLUE RTE {', '.join(RTE_SPLITS)} sentence pairs from {{release}}/glue-rte, one a line, "
             "derived at run time into --cache/rte/ (rte_text)",
        **{{"w_pca_sem_ids": "w_pca_semantics_ids"}.get(k, k): describe_ids(v) for k, v in kw.items()},
        bootstrap=BOOTSTRAP, bootstrap_seed=0)


def main(argv: list[str] | None = None) -> None:
    ap = argparse.ArgumentParser(prog="python -m studies.published", description=__doc__.split("\n\n")[0])
    ap.add_argument("--cache", default=str(ROOT / "data" / "published-cache"), help="folder of the own runs' part caches")
    ap.add_argument("--out", default=str(DOC), help="the page to write (its JSON and companion file go beside it)")
    ap.add_argument("--data", default=None, help="data folder holding the proxy-values table (default: where "
                                                 "Benchmark.load looks)")
    ap.add_argument("--small", action="store_true", help=f"{len(SMALL_IDS)} archs instead of 500 (a quick form)")
    ap.add_argument("--jobs", type=int, default=1, help="worker processes for the own runs")
    ap.add_argument("--own-only", action="store_true",
                    help="compute the own runs into --cache and the companion file beside --out, then stop")
    ap.add_argument("--from-values", action="store_true",
                    help="compute no proxy: every figure from the proxy-values table and the companion file")
    ap.add_argument("--table-rows", action="store_true",
                    help="recompute only the figures the proxy-values table gives into the JSON beside --out, carrying "
                         "the own runs' figures over from it unchanged, then render (minutes)")
    ap.add_argument("--render-only", action="store_true", help="rewrite the page from its JSON; compute nothing")
    ap.add_argument("--nsc-rows", action="store_true",
                    help="compute only NSC's #FLOPs, SNIP and GradNorm rows (studies/nsc_rows.py) into the JSON beside "
                         "--out, keeping its other figures, then render")
    args = ap.parse_args(argv)
    others = [f for f, on in (("--small", args.small), ("--own-only", args.own_only),
                              ("--from-values", args.from_values), ("--table-rows", args.table_rows),
                              ("--render-only", args.render_only)) if on]
    for only, what in (("--nsc-rows", "NSC's rows"), ("--table-rows", "the table's figures")):
        clash = [f for f in others if f != only]
        if getattr(args, only[2:].replace("-", "_")) and clash:
            ap.error(f"{only} computes only {what} into an existing 500-arch JSON; it does not combine with {clash[0]}")
    modes = [f for f in others if f != "--small"]
    if len(modes) > 1:
        ap.error(f"{modes[1]} does not combine with {modes[0]}; allowed: one of --own-only, --from-values, "
                 "--table-rows, --render-only, --nsc-rows")
    if args.jobs < 1:
        ap.error(f"--jobs = {args.jobs} is not allowed; allowed values: 1 or more")
    from studies import published_values
    from studies.pages import stored_or_computed, write_page

    out = Path(args.out)
    companion = published_values.path_for(out)
    if args.render_only:
        write_page(out, stored_or_computed(out, True, dict), render)
        return
    for flag, on in (("--nsc-rows", args.nsc_rows), ("--table-rows", args.table_rows)):
        if on and not out.with_suffix(".json").is_file():
            ap.error(f"{flag}: {out.with_suffix('.json')} does not exist; make the page first "
                     "(python -m studies.published), then recompute part of it")
    if args.table_rows:
        from studies.published_sources import stored_problem

        stored = json.loads(out.with_suffix(".json").read_text())
        if stored_problem(stored):
            ap.error(f"--table-rows: {out.with_suffix('.json')}: {stored_problem(stored)}")
    ids = SMALL_IDS if args.small else tuple(range(500))
    if args.from_values and companion_problem(companion, ids):
        ap.error(f"--from-values: {companion_problem(companion, ids)}")
    from nasbench_bert import Benchmark
    from nasbench_bert.errors import NasBenchError

    bench = Benchmark.load(args.data, progress=False)
    if args.nsc_rows:
        from studies.nsc_rows import merge

        write_page(out, merge(stored_or_computed(out, True, dict), bench, Path(args.cache)), render)
        return
    if not args.own_only:
        try:  # the table must be there before hours of own runs, and hold every semantics
            for sem in SEMANTICS:
                bench.proxy_values(sem, ["swap"])
        except NasBenchError as e:
            ap.error(f"the proxy-values table: {e} (or pass --data DIR, or run --own-only until it is there)")
    if args.table_rows:
        from studies.published_sources import CarryError

        try:
            summary = table_rows(bench, stored)
        except CarryError as e:  # the stored JSON lacks an own-run figure the page needs
            ap.error(f"--table-rows: {out.with_suffix('.json')}: {e}")
        summary["provenance"] = _provenance(summary, bench, False, " --table-rows")
        write_page(out, summary, render)
        return
    if not args.from_values:
        own_runs(bench, Path(args.cache), ids, args.jobs, args.small, companion)
        if args.own_only:
            print(f"wrote {companion}")
            return
    summary = from_values(bench, ids, companion, args.small)
    page_json = out.with_suffix(".json")
    if not args.small and page_json.is_file():  # NSC's rows are a step of their own (--nsc-rows): kept
        nsc = json.loads(page_json.read_text()).get("nsc_table")
        if nsc is not None:
            summary["nsc_table"] = nsc
    summary["provenance"] = _provenance(summary, bench, args.small, " --from-values" if args.from_values else "")
    write_page(out, summary, render)


if __name__ == "__main__":
    main()
