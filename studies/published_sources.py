"""Where each group of ``docs/published.md``'s figures comes from, how the page says so, and
how a regeneration that recomputes one group carries the other over unchanged.

Two groups, computed at different costs:

* **the table rows**: the model-based proxies under the three semantics on the package's
  default batch, read from the proxy-values table (its record,
  :func:`studies.table_values.record`, is the JSON's ``proxy_values``), with the closed
  forms and the two rules (computed, microseconds). ``python -m studies.published
  --table-rows`` recomputes these in minutes. A JSON written before the table read them
  from the leaderboard's float32 sweep caches (:func:`table_record` says so);
* **the own runs** (the W-PCA protocol runs, the NSC construction on the sweep batch, real
  text beside a second random seed, SWAP at 16 sequences, ZeroLM on instantiated weights):
  hours on a CPU. Their record (the JSON's ``own_runs``) is either the committed companion
  file's (``shipped``: every figure recomputes from the table and that file) or that of the
  run that computed them (not shipped: its figures are carried over, and the page says how
  to recompute them).

:func:`studies.published_summary.summarize` puts :func:`pending` where a figure needs an
own run it was not given; :func:`carry_own_runs` fills each from the stored JSON, at the
same place, and refuses a JSON that lacks one.
"""

from __future__ import annotations

from typing import Any

from studies.published_runs import SEMANTICS

#: the key of the placeholder for a figure that needs an own run (its label)
OWN = "own_run"
#: the dtype of a pre-table JSON's values: the proxy sweep's default then (the generator
#: passed none; ``nasbench_bert/proxies/sweep.py`` at that JSON's commit)
PRE_TABLE_DTYPE = "float32"
#: where the pre-table generator kept the own runs' part files (its ``--cache`` default)
PRE_TABLE_CACHE = "data/published-cache"
#: what recomputes each group
RECOMPUTE_TABLE = "python -m studies.published --table-rows"
RECOMPUTE_OWN = "python -m studies.published"
#: the own runs' cost here, float64, all 500 archs: measured on 2026-11-27, one process at
#: nice 19 beside a CI run on the 2 shared cores, 3,838 s of wall time for the runs (the first
#: run's 104 cached archs not counted; its other 396 took 877 s)
OWN_COST = "about 70 minutes of one process on a 2-core CPU"


class CarryError(ValueError):
    """The stored JSON has no figure to carry over where a fresh summary needs one."""


def pending(label: str, **same: Any) -> dict[str, Any]:
    """The placeholder for a figure of the own run ``label``; ``same``: fields the carried
    figure must have too (a verdict's proxy and column)."""
    return {OWN: label, **same}


def is_pending(v: Any) -> bool:
    return isinstance(v, dict) and OWN in v


def carry(fresh: Any, stored: Any, path: str = "summary") -> Any:
    """``fresh`` with every :func:`pending` placeholder replaced by what ``stored`` holds at
    the same place (dict key, list index); :class:`CarryError` naming the place where ``stored``
    has nothing to carry or something else there."""
    if is_pending(fresh):
        if stored is None or is_pending(stored):
            raise CarryError(f"{path}: the stored JSON holds no figure of the own run {fresh[OWN]!r} to carry over "
                             f"(recompute the own runs: {RECOMPUTE_OWN})")
        wrong = [k for k, v in fresh.items() if k != OWN and (not isinstance(stored, dict) or stored.get(k) != v)]
        if wrong:
            raise CarryError(f"{path}: the stored figure is not the one of {fresh[OWN]!r} ({wrong[0]} differs)")
        return stored
    if isinstance(fresh, dict):
        return {k: carry(v, stored.get(k) if isinstance(stored, dict) else None, f"{path}.{k}") for k, v in fresh.items()}
    if isinstance(fresh, list):
        return [carry(v, stored[i] if isinstance(stored, list) and i < len(stored) else None, f"{path}[{i}]")
                for i, v in enumerate(fresh)]
    return fresh


def own_record(summary: dict[str, Any]) -> dict[str, Any]:
    """Where the own runs' figures of ``summary`` come from: its ``own_runs`` record, or, for
    a JSON written before the table, the run that wrote it (its provenance and machine; the
    own runs in :data:`PRE_TABLE_DTYPE`, their real-text comparisons against the
    leaderboard's cached random-token values of that time)."""
    if "own_runs" in summary:
        return summary["own_runs"]
    prov = _provenance(summary)
    folder = summary["sweep_folders"]["authors"][0]
    return {"shipped": False, "command": prov.get("command"), "commit": prov["code"].get("git_commit"),
            "dirty": prov["code"].get("dirty"), "generated": prov.get("generated"), "dtype": PRE_TABLE_DTYPE,
            "machine": summary["machine"], "cache": PRE_TABLE_CACHE,
            "random_tokens": f"the leaderboard's {PRE_TABLE_DTYPE} sweep of that time, read from its cache "
                             f"`{folder}/`, not the table's values"}


def table_record(summary: dict[str, Any]) -> dict[str, Any]:
    """Where the table rows of ``summary`` come from: the proxy-values table's record, or,
    for a JSON written before the table, the leaderboard's sweep caches it read (no
    ``sha256``)."""
    if summary.get("proxy_values"):
        return summary["proxy_values"]
    prov = _provenance(summary)
    return {"sha256": None, "dtype": PRE_TABLE_DTYPE, "machine": summary["machine"], "folders": summary["sweep_folders"],
            "commit": prov["code"].get("git_commit"), "generated": prov.get("generated")}


def _provenance(summary: dict[str, Any]) -> dict[str, Any]:
    """The JSON's provenance, or an empty one (a JSON without it still renders: the page
    check reports the missing provenance itself)."""
    prov = summary.get("provenance") or {}
    return {**prov, "code": prov.get("code") or {}}


def stored_problem(stored: dict[str, Any]) -> str | None:
    """Why ``stored`` (the page's JSON) cannot give the own-run figures of a 500-arch page
    (None when it can), checked before any work."""
    if stored.get("small") or stored.get("n") != 500:
        return f"it is a {stored.get('n')}-arch page (--small); carrying its own runs needs the 500-arch one"
    try:
        own = own_record(stored)
    except (KeyError, TypeError):
        return "it records neither its own runs (own_runs) nor the run that wrote it (provenance, machine)"
    if own.get("shipped"):
        return (f"its own runs' values are shipped (docs/{own.get('file')}): --from-values recomputes every figure "
                "from the table and that file")
    return None


def carry_own_runs(fresh: dict[str, Any], stored: dict[str, Any]) -> dict[str, Any]:
    """A summary whose table rows are ``fresh`` and whose own-run figures, their seconds,
    their record and NSC's rows are those of ``stored`` (the page's JSON), unchanged."""
    if stored.get("small") or stored.get("n") != fresh["n"]:
        raise CarryError(f"the stored JSON is a {stored.get('n')}-arch page; carrying its own runs needs the "
                         f"{fresh['n']}-arch one")
    out = carry(fresh, stored)
    out["seconds_per_arch"] = {**{k: v for k, v in stored["seconds_per_arch"].items() if k not in SEMANTICS},
                               **fresh["seconds_per_arch"]}
    out["own_runs"] = own_record(stored)
    if "nsc_table" in stored:
        out["nsc_table"] = stored["nsc_table"]
    return reworded(out)


def reworded(node: Any) -> Any:
    """``node`` with every verdict word re-read from its interval by today's rule
    (:func:`studies.published_metrics.word`): a carried figure keeps its numbers, and its word
    is what the rule says of them (an interval that does not exist is "undefined", not
    "level with")."""
    from studies.published_metrics import word

    if isinstance(node, dict):
        out = {k: reworded(v) for k, v in node.items()}
        if {"lo", "hi", "word"} <= out.keys():
            out["word"] = word(float(out["lo"]), float(out["hi"]))
        return out
    if isinstance(node, list):
        return [reworded(v) for v in node]
    return node


def _run(r: dict[str, Any]) -> str:
    """A carried run in a few words: command, code, date, precision, machine, cache."""
    code = f"the code of commit `{str(r['commit'])[:7]}`" + (" with uncommitted changes" if r.get("dirty") else "")
    return (f"`{r['command']}` ({code}, {r['generated']}, {r['dtype']}, {r['machine']}; its part files in "
            f"`{r['cache']}/` of that machine)")


def table_sentence(summary: dict[str, Any]) -> str:
    """Where the table rows' values come from, as the page's first paragraph says it."""
    t = table_record(summary)
    if t.get("sha256"):
        return ("their values are read from the [proxy-values table](proxy_values.md) (`bench.proxy_values(semantics)`; "
                f"sha256 `{t['sha256'][:16]}…`, {t['dtype']}), not computed here")
    folders = sorted({f.replace(sem, "<semantics>") for sem, fs in t["folders"].items() for f in fs})
    return (f"their values were read from the leaderboard's {t['dtype']} sweep caches ({', '.join(f'`{f}/`' for f in folders)}; "
            f"{t['machine']}, commit `{str(t['commit'])[:7]}`, {t['generated']}), which the proxy-values table "
            f"replaces: `{RECOMPUTE_TABLE}` recomputes these figures from it in minutes")


def own_sentence(summary: dict[str, Any]) -> str:
    """Where the own runs' figures come from and, when their values are not shipped, how to
    recompute them: one sentence."""
    o = own_record(summary)
    if o.get("shipped"):
        return (f"The page's own runs (experiments in other protocols: the W-PCA protocol runs, the NSC construction on "
                f"the sweep batch, real text, a second random seed, SWAP at 16 sequences, ZeroLM on instantiated "
                f"weights) are computed in {o['dtype']}; their per-arch values are written beside this page "
                f"(`docs/{o['file']}`, sha256 `{o['sha256'][:16]}…`; built output like the proxy-values table, not kept "
                f"in the repository: `{RECOMPUTE_OWN} --own-only` writes it, resumable, in {OWN_COST}), so every figure "
                "here can be recomputed from the table and that file (`python -m studies.published --from-values`).")
    return ("**The page's own runs** (experiments in other protocols: the W-PCA protocol runs, the NSC construction on "
            "the sweep batch, real text, a second random seed, SWAP at 16 sequences, ZeroLM on instantiated weights; "
            f"the \"reproduced here\" column of the W-PCA row, the ZeroLM-on-weights figures, the W-PCA protocol table "
            f"but its seed-0 random-token rows, and the real-text section) are carried over unchanged from {_run(o)}: "
            f"their per-arch values are not shipped yet, and `{RECOMPUTE_OWN}` recomputes them in float64 ({OWN_COST}) "
            "and writes them beside this page (`docs/published_values.parquet`).")


def table_values_noun(summary: dict[str, Any]) -> str:
    """The table rows' values in a few words: "the table's values (float64)"."""
    t = table_record(summary)
    return f"the table's values ({t['dtype']})" if t.get("sha256") else f"the leaderboard's cached values ({t['dtype']})"


def own_dtype(summary: dict[str, Any]) -> str:
    return str(own_record(summary)["dtype"])


def random_tokens(summary: dict[str, Any]) -> str:
    """What the real-text section's 8 x 128 random-token values are."""
    return own_record(summary).get("random_tokens") or "the table's `authors` values"
