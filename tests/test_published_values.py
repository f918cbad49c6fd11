"""docs/published.md comes from the proxy-values table plus its committed companion file
(docs/published_values.parquet, the page's own runs): the own runs are computed in the
table's precision, the companion file holds values and ids only and reads back exactly,
the page's figures recompute from the two files with the package's public metrics to the
printed digits, the generator's modules import one way, and its flags refuse bad
combinations in one line."""

from __future__ import annotations

import ast
import json
import sys
from pathlib import Path

import numpy as np
import pandas as pd
import pytest

ROOT = Path(__file__).resolve().parent.parent
sys.path.insert(0, str(ROOT))  # studies/ sits beside the package, outside the wheel

from studies import published_runs, published_sources, published_values  # noqa: E402
from studies.published_format import difference, figures  # noqa: E402

DOCS = ROOT / "docs"


# -- the own runs' precision -------------------------------------------------------------------------
def test_own_runs_are_computed_in_the_tables_precision(monkeypatch, tmp_path):
    """Every own run asks the sweep for the proxy-values table's dtype (float64), keeps its
    parts in a folder named with it, and ZeroLM's weights are summed in it."""
    from nasbench_bert import proxies
    from nasbench_bert.proxies.values import DTYPE

    assert published_runs.DTYPE == DTYPE == "float64"
    asked = []

    def fake(ids, names, **kw):
        asked.append((kw["dtype"], Path(kw["cache"]).name))
        return pd.DataFrame({"id": list(ids), "error": None, "batch": "b", "seconds": 1.0, "tokenizer": "t",
                             "cached": False, **{n: [float(i) for i in ids] for n in names}})

    monkeypatch.setattr(proxies, "compute", fake)
    monkeypatch.setattr(published_runs, "rte_text_available", lambda: False)
    monkeypatch.setattr(published_runs, "zerolm_weights", lambda cache, ids, bench: {"ids": list(ids)})
    got = published_runs.own_values(tmp_path, published_runs.SMALL_IDS, bench=None, small=True)
    assert asked and all(d == DTYPE and folder.endswith(f"-{DTYPE}") for d, folder in asked)
    assert set(got) == {"swap16/random", "random seed 1", "nsc_eval", "zerolm_weights",
                        *(f"w_pca_nsc/{s}" for s in ("nsc_eval", *published_runs.SEMANTICS))}


# -- the companion file ------------------------------------------------------------------------------
def _own() -> dict:
    ids = [0, 12, 24]
    return {"text/RTE": {"ids": ids, "batch": "text:x,B=8", "seconds": 1.23456, "tokenizer": "wp",
                         "lpzero": [0.5, 0.25, 1e-300], "swap": [6561.0, 256.0, 300.0], "w_pca_first": [1.0, 2.0, 3.0]},
            "swap16/random": {"ids": ids[:2], "batch": "random,B=16", "seconds": 2.0, "tokenizer": "none",
                              "swap": [43046721.0, 1.0]},
            "zerolm_weights": {"ids": ids, "attn": [0.1, 0.2, 0.3], "ffn": [1.5, 2.5, np.nextafter(3.5, 4)]},
            "text_fill": {"lines": 10, "fill_8": 0.5, "fill_16": 0.4, "tokenizer": "wp"}}


def test_companion_file_reads_back_exactly_and_deterministically(tmp_path):
    a, b = tmp_path / "a" / "p_values.parquet", tmp_path / "b" / "p_values.parquet"
    rec = published_values.write(a, _own(), dtype="float64", torch_version="t", machine="m")
    published_values.write(b, _own(), dtype="float64", torch_version="t", machine="m")
    assert a.read_bytes() == b.read_bytes() and rec["rows"] == 8 and rec["dtype"] == "float64"
    got = published_values.read(a)
    want = _own()
    want["text/RTE"]["seconds"] = round(want["text/RTE"]["seconds"], 3)
    assert got == want  # every float bit for bit, NaN-free, ids as ints
    assert published_values.path_for(Path("docs/published.md")) == Path("docs/published_values.parquet")


def test_companion_file_holds_ids_and_values_only(published_values_file):
    """The committed file: benchmark ids and this package's values, no field of the
    authors' release (no arch string, no GLUE score, no stored proxy)."""
    import pyarrow.parquet as pq

    path = published_values_file
    schema = pq.read_schema(path)
    assert schema.names[:2] == ["run", "id"]
    assert all(str(schema.field(c).type) == "double" for c in schema.names[2:])
    assert set(schema.names[2:]) <= {"w_pca_first", "w_pca", "lpzero", "swap", "num_params", "zerolm_attn", "zerolm_ffn"}
    df = pq.read_table(path).to_pandas()
    assert df["id"].between(0, 499).all() and not df.duplicated(["run", "id"]).any()


# -- the page's figures from the two files ------------------------------------------------------------
def _printed(x, y, size=None, full=500, keys=("tau", "tau_tb", "rho", "pw10"), ci=("tau",)) -> str:
    """A figure as the page prints it, recomputed with the package's public metrics
    (200 bootstrap resamples, seed 0, each figure rounded to 4 decimals)."""
    from nasbench_bert import metrics as mt

    ctx = mt.RankContext(size=None if size is None else np.asarray(size, float))
    est = mt.rank_metrics(np.asarray(x, float), np.asarray(y, float), ctx, bootstrap=200, seed=0)
    d = {"n": float(len(x))}
    for key, name in (("tau", "kendall_tau"), ("tau_tb", "tau_tiebroken"), ("rho", "spearman_rho")):
        e = est[name]
        d.update({key: round(e.value, 4), f"{key}_lo": round(e.ci_low, 4), f"{key}_hi": round(e.ci_high, 4)})
    if size is not None:
        d["pw10"] = round(est["tau_pw10"].value, 4)
    return figures(d, keys, full, ci)


def check_figures(page: str, own: dict, bench) -> int:
    """Recompute figures of ``page`` from the table (``bench.proxy_values``) and the own
    runs ``own`` (the companion file's values) and check each is printed; returns how many
    were checked. Shared with the stand-in check of a ``--small`` page."""
    from nasbench_bert import Arch, proxies
    from nasbench_bert import metrics as mt
    from nasbench_bert.proxies.nsc import choose_alpha
    from nasbench_bert.sizes import flexibert_num_params

    flex = bench.to_pandas().set_index("id")
    ids = own["w_pca_nsc/nsc_eval"]["ids"]
    archs = {i: Arch.coerce(flex.loc[i, "arch"]) for i in ids}
    glue = flex["glue"].astype(float)
    size = pd.Series({i: flexibert_num_params(archs[i], "as_specified") for i in ids})
    cells = pd.Series({i: len(a.layers) * 1000 + a.hidden_size for i, a in archs.items()})
    table = {s: bench.proxy_values(s, ["w_pca_first", "lpzero", "swap"]).loc[ids] for s in published_runs.SEMANTICS}
    run = {k: pd.DataFrame({p: v for p, v in own[k].items() if isinstance(v, list)}).set_index("ids")
           for k in own if k != "text_fill"}
    lines = page.splitlines()
    checked = 0

    def row(prefix: str) -> str:
        return next(ln for ln in lines if ln.startswith(prefix))

    # the main table's W-PCA row: reproduced in the NSC protocol (own run), under each semantics (table)
    w = run["w_pca_nsc/nsc_eval"]["w_pca_first"]
    cols = [_printed(w.loc[ids], glue.loc[ids], size.loc[ids])] + [
        _printed(table[s].loc[ids, "w_pca_first"], glue.loc[ids], size.loc[ids]) for s in published_runs.SEMANTICS]
    assert row("| W-PCA (`w_pca_first`) |").endswith(" | ".join(["", *cols, ""]).strip()), cols
    checked += 4
    # LPZero: reproduced is the table's authors column
    lp = _printed(table["authors"]["lpzero"], glue.loc[ids], size.loc[ids])
    assert f"| {lp} | " in row("| LPZero (`lpzero`) |")
    checked += 1
    # the W-PCA protocol table: the NSC construction on the sweep batch (own run, every 10th id)
    nsc = run["nsc_eval"]
    at = list(nsc.index)
    assert (f"| {_printed(nsc['w_pca_first'], glue.loc[at], size.loc[at])} | "
            f"{_printed(nsc['w_pca'], glue.loc[at], size.loc[at])} |") in row("| NSC construction, seed 0,")
    checked += 2
    # ZeroLM on weights: the alpha the rule picks on all archs, and that score's figures
    zw = run["zerolm_weights"].loc[ids]
    alpha = choose_alpha(zw["attn"], zw["ffn"], glue.loc[ids])
    assert (f"the same alpha rule picks {alpha}" in page
            and f"gives {_printed(zw['ffn'] + alpha * zw['attn'], glue.loc[ids], size.loc[ids])} on all" in page)
    checked += 2
    # one verdict cell: LPZero's authors column against depth_width_then_size, paired
    rule = proxies.compute(ids, ["depth_width_then_size"], semantics="as_trained", bench=bench).set_index("id")
    d = mt.paired_difference(table["authors"]["lpzero"].to_numpy(float), rule.loc[ids, "depth_width_then_size"].to_numpy(float),
                             glue.loc[ids].to_numpy(float), mt.RankContext(cells=cells.loc[ids].to_numpy(float)),
                             names=("tau_tiebroken",), bootstrap=200, seed=0)["tau_tiebroken"]
    cell = difference({"value": round(d.value, 4), "lo": round(d.ci_low, 4), "hi": round(d.ci_high, 4)})
    assert f"| {cell} " in row("| LPZero (`lpzero`) | authors")
    checked += 1
    if "text/RTE" in run:  # real text against the table's random tokens, and the second seed
        t = run["text/RTE"]
        tid = list(t.index)
        gap = next(ln for ln in lines if ln.startswith("| `lpzero` | 8 x 128") and "| 0.8515 |" in ln)
        y = glue.loc[tid].to_numpy(float)
        assert (f" | {mt.spearman_rho(table['authors'].loc[tid, 'lpzero'].to_numpy(float), y):.3f} | "
                f"{mt.spearman_rho(t['lpzero'].to_numpy(float), y):.3f} | ") in gap
        s1 = run["random seed 1"]
        tau = round(mt.kendall_tau_b(s1["lpzero"].to_numpy(float),
                                     table["authors"].loc[list(s1.index), "lpzero"].to_numpy(float)), 4)
        assert row("| `lpzero` | 8 x 128 (").rstrip(" |").endswith(f"{tau:.3f}")
        checked += 3
    if "swap16/text" in run:
        m16 = (run["swap16/random"]["swap"].max(), run["swap16/text"]["swap"].max())
        assert f"the largest count there is {m16[0]:,.0f} on random tokens and {m16[1]:,.0f} on text" in page
        checked += 2
    return checked


def test_page_figures_recompute_from_the_table_and_the_companion_file(bench, published_values_file):
    """A reader's recomputation: figures of every kind on the page (the table's, the own
    runs', a fitted alpha, a paired verdict, real text) from bench.proxy_values and the
    committed companion file alone, to the printed digits."""
    if not bench.data.has_table("proxy_values"):
        pytest.skip("the test data holds no proxy-values table (it is not pinned yet)")
    summary = json.loads((DOCS / "published.json").read_text())
    if not summary.get("own_runs", {}).get("shipped"):
        pytest.skip("the own runs' per-arch values are not shipped yet (their figures are carried over)")
    own = published_values.read(published_values_file)
    assert summary["own_runs"]["sha256"] == published_values.describe(published_values_file)["sha256"]
    assert summary["proxy_values"]["sha256"] == bench.data.manifest["tables"]["proxy_values"]["sha256"]
    assert check_figures((DOCS / "published.md").read_text(), own, bench) >= 15


def check_table_figures(page: str, bench) -> int:
    """Recompute the figures of ``page`` that the proxy-values table gives
    (``bench.proxy_values``; the closed forms and rules from ``proxies.compute``, no model)
    with the package's public metrics, and check each is printed as the page prints it;
    returns how many were checked."""
    from nasbench_bert import Arch, proxies
    from nasbench_bert import metrics as mt
    from nasbench_bert.sizes import flexibert_num_params

    ids = list(range(500))
    flex = bench.to_pandas().set_index("id")
    archs = {i: Arch.coerce(flex.loc[i, "arch"]) for i in ids}
    glue, size = flex["glue"].astype(float).loc[ids], pd.Series({i: flexibert_num_params(archs[i], "as_specified") for i in ids})
    cells = pd.Series({i: len(a.layers) * 1000 + a.hidden_size for i, a in archs.items()})
    sems = published_runs.SEMANTICS
    table = {s: bench.proxy_values(s, list(published_runs.MODEL_PROXIES)).loc[ids] for s in sems}
    lines = page.splitlines()
    checked = 0

    def row(prefix: str) -> str:
        return next(ln for ln in lines if ln.startswith(prefix))

    def printed(x) -> str:
        return _printed(x, glue, size)

    # the main table: each model-based row under the three semantics; LPZero and SWAP reproduced (authors)
    for prefix, proxy in (("| W-PCA (`w_pca_first`) |", "w_pca_first"), ("| LPZero (`lpzero`) |", "lpzero"),
                          ("| SWAP (`swap`) |", "swap"), ("| #Params (NSC's row) |", "num_params")):
        cols = [printed(table[s][proxy]) for s in sems]
        assert row(prefix).endswith(" | ".join(["", *cols, ""]).strip()), (proxy, cols)
        checked += 3
        if proxy in ("lpzero", "swap"):
            assert f"| {printed(table['authors'][proxy])} | {cols[0]} |" in row(prefix)
            checked += 1
    # a closed form: NSC reproduced
    nsc = proxies.compute(ids, ["nsc"], semantics="as_trained", bench=bench).set_index("id")["nsc"]
    assert f"| {printed(nsc.loc[ids])} |" in row("| NSC (`nsc`) |")
    checked += 1
    # the W-PCA protocol table's seed-0 random-token rows: the table's values under each semantics
    for s in sems:
        got = row(f"| {s}, seed 0, random 8 x 128 |")
        assert got.endswith(" | ".join(["", *(printed(table[s][p]) for p in ("w_pca_first", "w_pca", "num_params")), ""])
                            .strip()), s
        checked += 3
    # SWAP's caps on the 8-sequence batch
    for s in sems:
        v = table[s]["swap"]
        assert row(f"| {s} | ").endswith(f"| {int((v == 256).sum())} | {int((v == 6561).sum())} | {v.nunique()} | 500 |")
        checked += 1
    # one verdict cell: LPZero under authors against depth_width_then_size, paired
    rule = proxies.compute(ids, ["depth_width_then_size"], semantics="as_trained", bench=bench).set_index("id")
    d = mt.paired_difference(table["authors"]["lpzero"].to_numpy(float), rule.loc[ids, "depth_width_then_size"].to_numpy(float),
                             glue.to_numpy(float), mt.RankContext(cells=cells.loc[ids].to_numpy(float)),
                             names=("tau_tiebroken",), bootstrap=200, seed=0)["tau_tiebroken"]
    cell = difference({"value": round(d.value, 4), "lo": round(d.ci_low, 4), "hi": round(d.ci_high, 4)})
    assert f"| {cell} " in row("| LPZero (`lpzero`) | authors")
    return checked + 1


def test_table_figures_recompute_from_the_table(bench):
    """A reader's recomputation of every figure the proxy-values table gives on the page
    (the model-based rows under the three semantics, the W-PCA protocol table's table rows,
    SWAP's caps, a verdict), from ``bench.proxy_values`` alone, to the printed digits."""
    if not bench.data.has_table("proxy_values"):
        pytest.skip("the test data holds no proxy-values table (nasbench_bert/data/pinned/ is not pinned yet)")
    summary = json.loads((DOCS / "published.json").read_text())
    assert (summary.get("proxy_values") or {}).get("sha256") == bench.data.manifest["tables"]["proxy_values"]["sha256"], \
        "docs/published.json did not score this table: python -m studies.published --table-rows"
    assert check_table_figures((DOCS / "published.md").read_text(), bench) == 28


# -- the table rows recomputed, the own runs carried over ----------------------------------------------
def _synthetic_values(bench, ids: list[int]) -> tuple[dict, dict]:
    """Values in the page's layout on ``ids``: the table's (random numbers), the closed forms
    and rules (computed: no model), and every own run (random numbers)."""
    rng = np.random.default_rng(0)
    n = len(ids)
    table = {sem: {"ids": ids, "batch": "random,B=8,T=128,seed=0", "seconds": {p: 1.0 for p in published_runs.MODEL_PROXIES},
                   **{p: rng.random(n).tolist() for p in published_runs.MODEL_PROXIES}} for sem in published_runs.SEMANTICS}
    table = {**table, **published_runs.spec_values(bench, ids)}
    own: dict = {}
    for run in published_runs.runs(tuple(ids), Path("rte.txt"), **published_runs.small_kwargs(tuple(ids))):
        own[run.label] = {"ids": list(run.ids), "batch": "b", "seconds": 2.0, "tokenizer": "t",
                          **{p: rng.random(len(run.ids)).tolist() for p in run.proxies}}
    own["zerolm_weights"] = {"ids": ids, "attn": rng.random(n).tolist(), "ffn": rng.random(n).tolist()}
    own["text_fill"] = {"lines": 3, "fill_8": 0.5, "fill_16": 0.4, "tokenizer": "t"}
    return table, own


def _paths(x, path: str = "") -> list[str]:
    """Where ``x`` holds a placeholder of an own run."""
    if published_sources.is_pending(x):
        return [path]
    if isinstance(x, dict):
        return [p for k, v in x.items() for p in _paths(v, f"{path}.{k}")]
    if isinstance(x, list):
        return [p for i, v in enumerate(x) for p in _paths(v, f"{path}[{i}]")]
    return []


def test_table_rows_with_own_runs_carried_are_the_full_summary(bench):
    """Without the own runs, summarize leaves a placeholder exactly where a figure needs
    one; carried over from a stored summary of the same values, the page's JSON is the one
    computed from all of them (every figure, verdict and second), NSC's rows kept."""
    from studies.published_summary import summarize

    flex = bench.to_pandas()
    glue = dict(zip(flex["id"].astype(int), flex["glue"].astype(float)))
    archs = dict(zip(flex["id"].astype(int), flex["arch"].astype(str)))
    ids = list(published_runs.SMALL_IDS)
    table, own = _synthetic_values(bench, ids)
    full = summarize({**table, **own}, glue, archs)
    fresh = summarize(table, glue, archs)
    holes = _paths(fresh)
    assert set(holes) == {".rows[3].reproduced", ".text", ".verdicts[12]",
                          *(f".zerolm.weights_{k}" for k in ("alpha_all", "alpha_0_249", "all_alpha_all",
                                                             "held_out_alpha_0_249")),
                          *(f".w_pca[{i}].{c}" for i in range(5) for c in ("first", "stack", "params"))}, holes
    assert fresh["verdicts"][12]["proxy"] == "W-PCA (`w_pca_first`)" and _paths(full) == []
    record = {"shipped": False, "dtype": "float32", "machine": "m", "commit": "c" * 40, "generated": "d",
              "command": "python -m studies.published", "cache": "x"}
    stored = {**full, "own_runs": record, "nsc_table": {"flops": 1}}
    got = published_sources.carry_own_runs(fresh, stored)
    assert json.dumps(got, sort_keys=True) == json.dumps(stored, sort_keys=True)


def test_carrying_refuses_a_json_without_the_figure(bench):
    """A stored JSON that lacks an own-run figure, or holds another verdict where one is
    carried, is refused naming the place; a --small JSON before any work."""
    fresh = {"n": 500, "rows": [{"reproduced": published_sources.pending("w_pca_nsc/nsc_eval")}],
             "verdicts": [published_sources.pending("w_pca_nsc/nsc_eval", proxy="W-PCA", column="reproduced")],
             "seconds_per_arch": {}}
    with pytest.raises(published_sources.CarryError, match=r"summary\.rows\[0\]\.reproduced: .*'w_pca_nsc/nsc_eval'"):
        published_sources.carry(fresh, {"rows": [{}]})
    with pytest.raises(published_sources.CarryError, match=r"verdicts\[0\]: .*proxy differs"):
        published_sources.carry(fresh, {"rows": [{"reproduced": {"tau": 0.6}}],
                                        "verdicts": [{"proxy": "LPZero", "column": "reproduced"}]})
    with pytest.raises(published_sources.CarryError, match="40-arch page"):
        published_sources.carry_own_runs(fresh, {"small": True, "n": 40})
    assert "40-arch page" in published_sources.stored_problem({"small": True, "n": 40})
    assert "records neither" in published_sources.stored_problem({"n": 500})
    assert "--from-values" in published_sources.stored_problem({"n": 500, "own_runs": {"shipped": True, "file": "f"}})


def test_a_json_from_before_the_table_names_where_its_values_came_from():
    """A JSON written before the table has no records: its table rows were the leaderboard's
    float32 caches and its own runs were float32, not shipped (the sweep's default then)."""
    stored = {"provenance": {"command": "python -m studies.published", "generated": "2026-11-26",
                             "code": {"git_commit": "a" * 40, "dirty": True}},
              "machine": "x86_64, 2 CPUs", "sweep_folders": {s: [f"data/proxy-cache/leaderboard-{s}"]
                                                             for s in published_runs.SEMANTICS}}
    own = published_sources.own_record(stored)
    assert own["dtype"] == "float32" and not own["shipped"] and own["commit"] == "a" * 40
    assert "data/proxy-cache/leaderboard-authors/" in own["random_tokens"]
    assert published_sources.table_record(stored)["sha256"] is None
    text = published_sources.table_sentence(stored) + published_sources.own_sentence(stored)
    assert "`data/proxy-cache/leaderboard-<semantics>/`" in text and "--table-rows" in text
    assert "not shipped yet" in text and "`python -m studies.published` recomputes them in float64" in text


def test_the_page_says_where_each_group_of_figures_comes_from():
    """The committed page names the table it scored (or the caches it read before the
    table), and, while the own runs' values are not shipped, says so with the command
    that recomputes them, the precision and the machine they were computed on."""
    summary = json.loads((DOCS / "published.json").read_text())
    page = (DOCS / "published.md").read_text()
    table, own = published_sources.table_record(summary), published_sources.own_record(summary)
    if table["sha256"]:
        assert f"sha256 `{table['sha256'][:16]}…`, {table['dtype']}" in page
    else:
        assert f"`{published_sources.RECOMPUTE_TABLE}` recomputes these figures" in page
    if own["shipped"]:
        assert f"`docs/{own['file']}`, sha256 `{own['sha256'][:16]}…`" in page
    else:
        said = next(ln for ln in page.splitlines() if "not shipped yet" in ln)
        assert f"`{published_sources.RECOMPUTE_OWN}` recomputes them" in said
        assert all(str(w) in said for w in (own["dtype"], own["machine"], own["generated"], own["commit"][:7]))
        assert f"in {own['dtype']}, beside the random-token run" in page  # the real-text section's own runs


def test_gelu_rounds_to_zero_where_the_page_says():
    """The SWAP section's bound: the largest input whose GELU is exactly 0, per dtype."""
    torch = pytest.importorskip("torch")
    from studies.published_render import GELU_ZERO_BELOW

    for name, below in GELU_ZERO_BELOW.items():
        x = torch.arange(-20.0, 0.0, 1e-4, dtype=getattr(torch, name))
        last_zero = float(x[torch.nn.GELU()(x) == 0].max())
        assert round(last_zero, 1) == below, (name, last_zero)


# -- one-way imports, and the flags ------------------------------------------------------------------
def test_the_generators_modules_import_one_way():
    """studies/published*.py and studies/nsc_rows.py: no import circle (nsc_rows and the
    page's generator used to import each other), and only the command line imports the
    generator's entry module."""
    mods = {p.stem: p for p in (ROOT / "studies").glob("published*.py")} | {"nsc_rows": ROOT / "studies" / "nsc_rows.py"}
    edges = {}
    for name, path in mods.items():
        found = set()
        for node in ast.walk(ast.parse(path.read_text())):
            if isinstance(node, ast.ImportFrom) and node.module:
                names = [node.module.split(".")[-1]] + ([a.name for a in node.names] if node.module == "studies" else [])
                found |= {n for n in names if n in mods and n != name}
            elif isinstance(node, ast.Import):
                found |= {a.name.split(".")[-1] for a in node.names if a.name.startswith("studies.")} & set(mods)
        edges[name] = found
    assert not any("published" in e for n, e in edges.items() if n != "published"), edges

    def reach(a: str, seen: frozenset = frozenset()) -> set:
        return {b for n in edges[a] if n not in seen for b in {n} | reach(n, seen | {n})}

    assert not [m for m in mods if m in reach(m)], edges
    assert all(len(p.read_text().splitlines()) < 500 for p in mods.values())


@pytest.mark.parametrize("argv,words", [
    (["--from-values", "--own-only"], "--from-values does not combine with --own-only"),
    (["--render-only", "--from-values"], "--render-only does not combine with --from-values"),
    (["--jobs", "0"], "--jobs = 0 is not allowed"),
    (["--from-values"], "published_values.parquet does not exist"),
    (["--table-rows", "--small"], ("--table-rows computes only the table's figures into an existing 500-arch JSON; "
                                   "it does not combine with --small")),
    (["--table-rows", "--render-only"], "it does not combine with --render-only"),
    (["--table-rows"], "p.json does not exist"),
])
def test_flags_refuse_in_one_line_before_any_work(argv, words, tmp_path, capsys):
    from studies import published as pub

    with pytest.raises(SystemExit) as e:
        pub.main([*argv, "--out", str(tmp_path / "p.md")])
    err = capsys.readouterr().err.strip().splitlines()
    assert e.value.code == 2 and words.replace("published_values", "p_values") in err[-1], err
    assert list(tmp_path.iterdir()) == []


def test_table_rows_refuses_a_small_json_or_a_data_folder_without_the_table(bench, tmp_path, capsys):
    """--table-rows reads the page's JSON and the table before any work: a --small JSON and
    a data folder without the table are refused in one line, the JSON left as it was."""
    import shutil

    from studies import published as pub

    out = tmp_path / "p.md"
    out.with_suffix(".json").write_text(json.dumps({"small": True, "n": 40}))
    with pytest.raises(SystemExit) as e:
        pub.main(["--table-rows", "--out", str(out)])
    assert e.value.code == 2 and "it is a 40-arch page (--small)" in capsys.readouterr().err.strip().splitlines()[-1]
    data = tmp_path / "data"
    shutil.copytree(bench.data.path, data)
    manifest = json.loads((data / "manifest.json").read_text())
    manifest["tables"].pop("proxy_values", None)
    manifest.pop("proxy_values", None)
    (data / "manifest.json").write_text(json.dumps(manifest))
    page = json.loads((DOCS / "published.json").read_text())
    page.setdefault("own_runs", {})["shipped"] = False  # --table-rows' mode: the own runs carried over
    stored = json.dumps(page)
    out.with_suffix(".json").write_text(stored)
    with pytest.raises(SystemExit) as e:
        pub.main(["--table-rows", "--data", str(data), "--out", str(out)])
    err = capsys.readouterr().err.strip().splitlines()
    assert e.value.code == 2 and "the proxy-values table" in err[-1] and "build-proxy-values" in err[-1], err
    assert out.with_suffix(".json").read_text() == stored and not out.exists()
