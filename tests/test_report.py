"""The paper-ready report (``evaluate(..., report=DIR)``, ``--report DIR``): its files
exist, its tables carry the Evaluation's numbers (and the committed leaderboard's for the
rows marked †), the per-cell within-cell τ matches scipy's τ-b on each cell's rows, the
figures are real PNGs of the declared size, values.parquet round-trips the values with
their provenance, and bad input is refused before any work, leaving no partial folder.
A forward-only toy callable on 20 ids and one semantics keeps it fast."""

from __future__ import annotations

import json
import re
import struct

import numpy as np
import pandas as pd
import pytest
from hypothesis import given, settings
from hypothesis import strategies as st
from scipy.stats import kendalltau

torch = pytest.importorskip("torch")
pytest.importorskip("matplotlib")

from nasbench_bert import __version__, proxies, report  # noqa: E402
from nasbench_bert.errors import InvalidArgumentError  # noqa: E402
from nasbench_bert.proxies import registry  # noqa: E402
from nasbench_bert.proxies.sweep import default_batch  # noqa: E402

SMALL = {"batch_size": 2, "seq_len": 16}
IDS = list(range(0, 500, 25))  # 20 ids spread over the four (layers, hidden size) cells
SEM = "as_trained"
BOOT = 30


def out_spread(model, batch):
    """A forward-only score: the spread of the last hidden state's token vectors."""
    with torch.no_grad():
        out = model(batch.input_ids, batch.attention_mask, batch.token_type_ids)
    return float(out.double().mean(-1).std())


@pytest.fixture(scope="module")
def made(bench, tmp_path_factory):
    folder = tmp_path_factory.mktemp("rep") / "report"
    ev = proxies.evaluate(out_spread, semantics=SEM, benchmarks="flexibert", ids=IDS, batch=SMALL, bootstrap=BOOT,
                          tasks=False, bench=bench, progress=False, report=folder)
    return ev, folder


_NUM = r"(–|-?\d+\.\d{3})(?: \[(-?\d+\.\d{3}), (-?\d+\.\d{3})\])?"


def _md_rows(text: str, heading: str) -> dict[str, list[str]]:
    """The first table after ``heading``: score name -> its cells."""
    block = text.split(heading, 1)[1].split("\n\n", 2)[1]
    out = {}
    for line in block.splitlines()[2:]:
        cells = [c.strip() for c in line.strip("|").split("|")]
        out[cells[0].strip("*")] = cells
    return out


def _check_cell(cell: str, row: pd.Series, col: str, lo: str, hi: str) -> None:
    m = re.fullmatch(_NUM, cell)
    assert m, cell
    if m.group(1) == "–":
        assert not np.isfinite(row[col])
        return
    assert abs(float(m.group(1)) - row[col]) <= 5e-4 + 1e-12, (col, cell, row[col])
    if np.isfinite(row.get(lo, np.nan)):
        assert abs(float(m.group(2)) - row[lo]) <= 5e-4 + 1e-12 and abs(float(m.group(3)) - row[hi]) <= 5e-4 + 1e-12


def test_files_exist_and_nothing_else(made):
    ev, folder = made
    assert sorted(p.name for p in folder.iterdir()) == sorted(report.REPORT_FILES)
    assert not list(folder.parent.glob(".report.*"))  # no staging or old copy left beside it


def test_markdown_table_carries_the_evaluation_numbers(made):
    ev, folder = made
    text = (folder / "table.md").read_text()
    rows = _md_rows(text, f"## flexibert, semantics `{SEM}`")
    own = ev.rows[(ev.rows.target == "glue")]
    assert set(own.proxy) <= set(rows), set(own.proxy) - set(rows)
    assert rows[ev.proxy][1] == "proxy"
    for _, r in own.iterrows():
        cells = rows[r.proxy]
        assert int(cells[2]) == r.n
        for k, (col, _, lo, hi) in enumerate(report.METRICS):
            _check_cell(cells[3 + k], r, col, lo, hi)


def test_leaderboard_rows_are_the_committed_numbers(made):
    ev, folder = made
    if not report.LEADERBOARD.is_file():
        pytest.skip("no docs/leaderboard.json in this checkout")
    board = json.loads(report.LEADERBOARD.read_text())
    rows = _md_rows((folder / "table.md").read_text(), f"## flexibert, semantics `{SEM}`")
    marked = {name: cells for name, cells in rows.items() if "†" in cells[1]}
    assert marked, "no leaderboard row in the table"
    assert not set(marked) & set(ev.rows.proxy)  # only what the Evaluation did not compute
    for name, cells in marked.items():
        src = re.search(r"\((.*)\)", cells[1]).group(1)
        (want,) = [r for r in board["leaderboard"] if r["proxy"] == name and r["semantics"] == SEM
                   and r["target"] == "glue" and r["source"] == src]
        want = pd.Series({k: (np.nan if v is None else v) for k, v in want.items()})
        assert registry.REGISTRY["flexibert"][name].group
        for k, (col, _, lo, hi) in enumerate(report.METRICS):
            _check_cell(cells[3 + k], want, col, lo, hi)
    assert f"input batch {board['live_batch']}" in (folder / "table.md").read_text()


_TEX_NUM = r"(--|\$-?\d+\.\d{3}\$)(?: \{\\scriptsize \$\[(-?\d+\.\d{3}), (-?\d+\.\d{3})\]\$\})?"


def test_latex_is_booktabs_with_the_same_numbers(made):
    ev, folder = made
    tex = (folder / "table.tex").read_text()
    body = [ln for ln in tex.splitlines() if not ln.startswith("%")]
    assert body[0].startswith(r"\begin{tabular}{ll") and body[-1] == r"\end{tabular}"
    assert [ln for ln in body if ln in (r"\toprule", r"\bottomrule")] == [r"\toprule", r"\bottomrule"]
    ncol = 3 + len(report.METRICS)
    text = "\n".join(body)
    assert text.count("{") == text.count("}")
    for ln in body:
        bare = re.sub(r"\\[&%_$#{}]", "", ln)
        text_mode = re.sub(r"\$[^$]*\$", "", bare)  # math mode may subscript
        assert "_" not in text_mode and "%" not in bare, ln  # every special escaped
        if ln.endswith(r"\\") and not ln.startswith(r"\multicolumn"):
            assert bare.count("&") == ncol - 1, ln
            assert bare.count("$") % 2 == 0, ln
    r = ev.candidate().iloc[0]
    (line,) = [ln for ln in body if ln.startswith(r"\textbf{" + report.tex_escape(ev.proxy))]
    cells = [c.strip() for c in line.removesuffix(r"\\").split(" & ")]
    for k, (col, _, lo, hi) in enumerate(report.METRICS):
        m = re.fullmatch(_TEX_NUM, cells[3 + k])
        assert m, cells[3 + k]
        _check_cell(m.group(1).strip("$").replace("--", "–"), r, col, lo, hi) if m.group(2) is None else \
            _check_cell(f"{m.group(1).strip('$')} [{m.group(2)}, {m.group(3)}]", r, col, lo, hi)


def test_tex_escape():
    assert report.tex_escape("a_b 10 % & c#") == r"a\_b 10 \% \& c\#"


def _png_size(path) -> tuple[int, int]:
    data = path.read_bytes()
    assert data[:8] == b"\x89PNG\r\n\x1a\n" and data[12:16] == b"IHDR"
    return struct.unpack(">II", data[16:24])


def test_figures_are_pngs_of_the_declared_size(made):
    import matplotlib.image as mpimg

    _, folder = made
    w, h = report.PANEL_SIZE
    dpi = report.FIG_DPI
    assert _png_size(folder / "scatter.png") == (round(w * dpi), round((h + report.SCATTER_TITLE) * dpi))
    assert _png_size(folder / "cells.png") == (round(w * dpi), round((h + 1.2) * dpi))
    for f in ("scatter.png", "cells.png"):
        img = mpimg.imread(folder / f)
        assert img.std() > 0.05  # something is drawn


def test_per_cell_tau_is_scipy_on_the_cell_rows(made, bench):
    ev, _ = made
    data = report._ReportData.of(ev, bench, report.Provenance({}, 0, "float32", BOOT))
    got = report.cell_taus(ev, data, SEM, ev.proxy)
    flex = bench.to_pandas().set_index("id").loc[IDS]
    x = ev.values.set_index("id").loc[IDS, ev.proxy].to_numpy(float)
    assert got.n.sum() == len(IDS)
    for _, r in got.iterrows():
        k = ((flex.num_layers == r.layers) & (flex.hidden_size == r.hidden_size)).to_numpy()
        if k.sum() < 3:
            assert np.isnan(r.kendall_tau)
            continue
        assert r.kendall_tau == pytest.approx(kendalltau(x[k], flex.glue.to_numpy(float)[k]).statistic, abs=1e-12)
        assert r.kendall_tau_ci_low <= r.kendall_tau <= r.kendall_tau_ci_high


def test_values_parquet_round_trips_with_provenance(made):
    ev, folder = made
    got = pd.read_parquet(folder / "values.parquet")
    cand = got[got.proxy == ev.proxy].set_index("id").loc[IDS]
    want = ev.values.set_index("id").loc[IDS, ev.proxy].to_numpy(float)
    np.testing.assert_array_equal(cand.value.to_numpy(float), want)
    assert set(cand.semantics) == {SEM} and set(cand.kind) == {"candidate"}
    assert set(cand.batch) == {default_batch("flexibert", **SMALL).key}
    assert set(cand.proxy_version) == {str(registry.REGISTRY["flexibert"][ev.proxy].version)}
    assert set(cand.package_version) == {__version__} and set(cand.seed) == {0}
    assert cand.model_key.notna().all()
    base = got[got.proxy == "depth_width_then_size"]
    assert len(base) == len(IDS) and base.batch.isna().all()  # analytic: no input batch
    assert set(got.proxy) == set(ev.rows.proxy)


@pytest.mark.parametrize("bad", [123, True, "", ["x"]])
def test_bad_report_argument(bench, bad):
    with pytest.raises(InvalidArgumentError, match="report"):
        proxies.evaluate("depth", benchmarks="flexibert", ids=[0, 1, 2], bench=bench, progress=False, report=bad)


@given(st.one_of(st.integers(), st.floats(), st.booleans(), st.lists(st.text()), st.dictionaries(st.text(), st.text()),
                 st.just(""), st.just("   ")))
@settings(max_examples=40, deadline=None)
def test_check_report_dir_refuses_what_is_not_a_path(value):
    with pytest.raises(InvalidArgumentError, match="report"):
        report.check_report_dir(value)


def test_report_never_replaces_a_users_folder_or_file(bench, tmp_path):
    (tmp_path / "paper").mkdir()
    keep = tmp_path / "paper" / "draft.tex"
    keep.write_text("mine")
    for target in (tmp_path / "paper", keep):
        with pytest.raises(InvalidArgumentError, match="report"):
            proxies.evaluate("depth", benchmarks="flexibert", ids=[0, 1, 2], bench=bench, progress=False, report=target)
    assert keep.read_text() == "mine"


@pytest.mark.parametrize("cache, folder, how", [("x", "x", "is"), ("x", "x/report", "lies inside"),
                                                ("x/cache", "x", "holds")])
def test_report_and_cache_folders_are_kept_apart_before_any_work(bench, tmp_path, monkeypatch, capsys, cache, folder,
                                                                 how):
    """Issue 37, item 9: ``--cache X --report X`` computed every model, then refused the
    report folder because the cache's parts were in it. The report folder may not be, lie
    inside or hold the cache: refused before any model, from Python and from the command
    line (there before the benchmark is loaded: ``--data`` points nowhere)."""
    from nasbench_bert import cli, evaluation

    def computed(*a, **k):
        raise AssertionError("a model was computed before the report folder was refused")

    monkeypatch.setattr(evaluation, "_evaluate", computed)
    cache_dir, report_dir = tmp_path / cache, tmp_path / folder
    with pytest.raises(InvalidArgumentError, match=f"^report = {re.escape(repr(str(report_dir)))} {how} the cache folder "
                                                   f"cache = {re.escape(repr(str(cache_dir)))}; allowed: "):
        proxies.evaluate("depth", benchmarks="flexibert", ids=[0, 1], bench=bench, progress=False, cache=cache_dir,
                         report=report_dir)
    assert cli.main(["--data", str(tmp_path / "no-data"), "-q", "proxies", "evaluate", "depth", "--ids", "0-1",
                     "--benchmarks", "flexibert", "--cache", str(cache_dir), "--report", str(report_dir)]) == 2
    err = capsys.readouterr().err.strip().splitlines()
    assert len(err) == 1 and err[0].startswith(f"error: --report = {str(report_dir)!r} {how} the cache folder --cache = "
                                               f"{str(cache_dir)!r}; allowed: "), err
    assert list(tmp_path.iterdir()) == []


def test_an_error_leaves_no_partial_report(bench, tmp_path, monkeypatch):
    def boom(*a, **k):
        raise RuntimeError("drawing failed")

    monkeypatch.setattr(report, "_cells_png", boom)
    with pytest.raises(RuntimeError, match="drawing failed"):
        proxies.evaluate("depth_width_then_size", benchmarks="flexibert", ids=list(range(12)), tasks=False, bootstrap=0,
                         bench=bench, progress=False, report=tmp_path / "rep")
    assert list(tmp_path.iterdir()) == []


def test_cli_report(tmp_path, data_dir, capsys):
    from nasbench_bert import cli

    out = tmp_path / "rep"
    assert cli.main(["--data", str(data_dir), "-q", "proxies", "evaluate", "depth_width_then_size", "--ids", "0-39",
                     "--no-tasks", "--bootstrap", "20", "--report", str(out)]) == 0
    assert sorted(p.name for p in out.iterdir()) == sorted(report.REPORT_FILES)
    # an earlier report is replaced as a whole
    assert cli.main(["--data", str(data_dir), "-q", "proxies", "evaluate", "depth_width_then_size", "--ids", "0-19",
                     "--no-tasks", "--bootstrap", "0", "--report", str(out)]) == 0
    assert "n = 20" in (out / "table.md").read_text()
    capsys.readouterr()
