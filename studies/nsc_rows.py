"""NSC's FlexiBERT table, complete: its #FLOPs, SNIP and GradNorm rows in the NSC authors'
protocol, beside the rows ``docs/published.md`` already reproduces.

    python -m studies.published --nsc-rows [--cache data/published-cache]

computes these rows only (about 15 CPU-minutes here, nearly all of it the gradient runs),
adds them to ``docs/published.json`` under ``nsc_table`` and renders the page; every other
figure of the JSON is kept as it is (the page's sweeps take hours and are not rerun).

* **#FLOPs**: the NSC authors' multiply-accumulate count of an arch
  (:func:`nasbench_bert.proxies.nsc.nsc_flops`, their ``ranking/compute_flops_all.py`` at
  S = 128) on all 500 archs, with the page's figures and its paired verdicts against the
  two trivial rules.
* **SNIP and GradNorm** as the NSC authors' ``ranking/eval_flexibert.py`` computes them:
  ``build_model`` (``torch.manual_seed(42)``, then the authors' ``ElectraModel`` at the
  arch's own H with layer 0's feed-forward width: the package's ``NSC_EVAL`` model, pinned
  to their weights bit for bit), left in train mode (only their W-PCA calls ``eval()``),
  then ``last_hidden_state.backward(ones)``. SNIP sums |w * g| over the Linear weights of
  each layer (their ``operation``, ``intermediate`` and ``output``: not the embedding
  projection, which the package's registered ``snip`` includes), GradNorm sums ‖g‖ over
  every Linear weight (:func:`nsc_gradients`).

  Their objective is the sum of the last LayerNorm's output, whose gain is 1 at
  initialisation: every token's normalised vector sums to 0, so the objective is constant
  (0 + the bias sum) and its gradient with respect to every Linear weight is 0 in exact
  arithmetic. What the two proxies sum is rounding error. The page prints them as noise,
  with no verdict: measured in float32 and float64, with 1 and 2 torch threads, and in
  eval mode, on every 5th arch (:data:`GRAD_IDS`), beside the size of a gradient that does
  not vanish (GradNorm with a random N(0, 1) cotangent in place of the ones).

Their batch, 128 WikiText-2 lines of 512 tokens, cannot be fetched here; the stand-in is
their own random batch for W-PCA (``W_PCA_NSC.batch``: ids uniform on the vocabulary,
4 x 64, seed 0). A vanishing gradient vanishes on any batch.
"""

from __future__ import annotations

import json
import os
import platform
import time
from dataclasses import dataclass
from pathlib import Path
from typing import Any, Sequence

import numpy as np

from nasbench_bert.sizes import flexibert_num_params
from studies.published_format import figures, verdict_cell
from studies.published_metrics import BOOTSTRAP, RULES, metrics, verdict
from studies.published_runs import describe_ids

#: the archs of the gradient runs: every 5th id (five runs of 100 archs fit the ~15
#: CPU-minutes this machine could give them; 500 would take over an hour)
GRAD_IDS: tuple[int, ...] = tuple(range(0, 500, 5))
#: the NSC authors' seed before each model (``build_model``)
MODEL_SEED = 42
#: NSC's README figures (Kendall tau and 10 %-PW tau against GLUE, 500 archs)
PAPER = {"flops": (0.552, 0.329), "snip": (0.289, 0.237), "grad_norm": (0.171, 0.164)}
#: the seed of the random cotangent that gives a non-vanishing gradient's size
REFERENCE_SEED = 0


@dataclass(frozen=True)
class GradRun:
    """One way of computing the two gradient proxies: precision, torch threads, mode."""

    dtype: str
    threads: int
    train: bool = True

    @property
    def label(self) -> str:
        return f"{self.dtype}, {self.threads} thread{'s' if self.threads > 1 else ''}, {'train' if self.train else 'eval'}"

    @property
    def key(self) -> str:
        return f"{self.dtype}-t{self.threads}-{'train' if self.train else 'eval'}"


#: the runs: the authors' (float32, train mode) on 1 and 2 threads, float64 on 1 and 2, and
#: float32 in eval mode. The first is the protocol's; the others say how much it moves.
RUNS: tuple[GradRun, ...] = (GradRun("float32", 1), GradRun("float32", 2), GradRun("float64", 1),
                             GradRun("float64", 2), GradRun("float32", 1, train=False))
#: the run that also measures a non-vanishing gradient (float64: no rounding in its way)
REFERENCE_RUN = GradRun("float64", 1)
#: the pairs of runs compared value by value
PAIRS: tuple[tuple[int, int], ...] = ((0, 1), (2, 3), (0, 2), (0, 4))


# -- the NSC authors' SNIP and GradNorm ------------------------------------------------------------
def nsc_gradients(model: Any, batch: Any, cotangent: Any | None = None) -> tuple[float, float]:
    """(SNIP, GradNorm) of ``model`` (a :class:`~nasbench_bert.models.flexibert.FlexiBERTEncoder`)
    on ``batch`` as ``compute_snip`` / ``compute_gradnorm`` of the NSC authors'
    ``eval_flexibert.py`` compute them: ``out.backward(cotangent)`` (default: ones, theirs),
    SNIP = sum of |w * g| over the Linear weights inside the encoder layers (their
    ``ElectraLayer``'s ``operation``, ``intermediate`` and ``output``), GradNorm = sum of
    ‖g‖ over every Linear weight with a gradient (the embedding projection too). Each term
    in the model's dtype, summed as Python floats (their ``.item()`` sums). Leaves the
    gradients on the model."""
    import torch
    from torch import nn

    model.zero_grad()
    out = model(batch.input_ids, batch.attention_mask, batch.token_type_ids)
    out.backward(torch.ones_like(out) if cotangent is None else cotangent)

    def linears(module: Any) -> list[Any]:
        return [m for m in module.modules() if isinstance(m, nn.Linear) and m.weight.grad is not None]

    with torch.no_grad():
        snip = sum(float((m.weight * m.weight.grad).abs().sum()) for layer in model.layers for m in linears(layer))
        grad_norm = sum(float(m.weight.grad.norm()) for m in linears(model))
    return snip, grad_norm


def nsc_model(arch: Any, dtype: str, train: bool) -> Any:
    """The NSC authors' model for ``arch`` (``NSC_EVAL`` after ``torch.manual_seed(42)``),
    in ``dtype`` (built in float32, as theirs, then cast), in train or eval mode. The
    caller holds the RNG (their dropout masks come from the stream the build leaves)."""
    import torch

    from nasbench_bert.models.flexibert import FlexiBERTEncoder
    from nasbench_bert.proxies.protocols import NSC_EVAL

    torch.manual_seed(MODEL_SEED)
    model = FlexiBERTEncoder(NSC_EVAL.plan(arch))
    return model.train(train).to(getattr(torch, dtype))


def gradient_run(archs: dict[int, Any], ids: Sequence[int], run: GradRun, batch_spec: Any, cache: Path | None,
                 *, reference: bool = False) -> dict[str, Any]:
    """SNIP and GradNorm of ``ids`` in one :class:`GradRun`, each arch on a fresh model;
    with ``reference`` also GradNorm with a random N(0, 1) cotangent (seed
    :data:`REFERENCE_SEED`), a gradient that does not vanish. Kept in ``cache`` as one file
    per run (resumed when its ids, batch and torch version match)."""
    import torch

    from nasbench_bert.proxies.inputs import make_batch

    path = None if cache is None else cache / "nsc-gradients" / f"{run.key}.json"
    want = {"ids": list(ids), "batch": batch_spec.key, "torch": torch.__version__, "reference": reference}
    if path is not None and path.is_file():
        got = json.loads(path.read_text())
        if {k: got.get(k) for k in want} == want:
            return got
    batch = make_batch(batch_spec)
    threads = torch.get_num_threads()
    torch.set_num_threads(run.threads)
    out: dict[str, Any] = {**want, "snip": [], "grad_norm": [], "reference_grad_norm": [] if reference else None}
    t0 = time.process_time()
    try:
        for i in ids:
            with torch.random.fork_rng(devices=[]):
                model = nsc_model(archs[i], run.dtype, run.train)
                snip, gn = nsc_gradients(model, batch)
                if reference:
                    shape = (batch.input_ids.shape[0], batch.input_ids.shape[1], model.hidden_size)
                    g = torch.Generator().manual_seed(REFERENCE_SEED)
                    cot = torch.randn(shape, generator=g, dtype=torch.float64).to(getattr(torch, run.dtype))
                    # a fresh model: the same weights and dropout masks, no gradient left over
                    out["reference_grad_norm"].append(nsc_gradients(nsc_model(archs[i], run.dtype, run.train), batch, cot)[1])
            out["snip"].append(snip)
            out["grad_norm"].append(gn)
    finally:
        torch.set_num_threads(threads)
    out["cpu_seconds_per_arch"] = (time.process_time() - t0) / max(len(ids), 1)
    if path is not None:
        from nasbench_bert.atomic import atomic_write

        path.parent.mkdir(parents=True, exist_ok=True)
        atomic_write(path, json.dumps(out) + "\n")
    return out


# -- the figures ------------------------------------------------------------------------------------
def flops_row(archs: dict[int, Any], glue: dict[int, float], rules: dict[str, np.ndarray]) -> dict[str, Any]:
    """#FLOPs (NSC's formula) on all archs: the page's figures, tau with the as-specified
    parameter count, and the paired verdicts against the two trivial rules."""
    from nasbench_bert import Arch
    from nasbench_bert.proxies.nsc import NSC_FLOPS_SEQ_LEN, nsc_flops
    from nasbench_bert.sizes import flexibert_num_params

    ids = sorted(archs)
    parsed = {i: Arch.coerce(archs[i]) for i in ids}
    x = np.array([nsc_flops(archs[i]) for i in ids], float)
    y = np.array([glue[i] for i in ids], float)
    size = np.array([flexibert_num_params(archs[i], "as_specified") for i in ids], float)
    cells = np.array([len(parsed[i].layers) * 1000 + parsed[i].hidden_size for i in ids], float)
    return {"seq_len": NSC_FLOPS_SEQ_LEN, "paper": dict(zip(("tau", "pw10"), PAPER["flops"])),
            "figures": metrics(x, y, size), "tau_with_params": metrics(x, size)["tau"],
            "distinct": int(len(np.unique(x))), "verdict": verdict(x, rules, y, cells)}


def _rel(a: np.ndarray, b: np.ndarray) -> float:
    """The largest |a - b| / max(|a|, |b|) over the archs."""
    return float(np.max(np.abs(a - b) / np.maximum(np.abs(a), np.abs(b))))


#: what the size of the rounding error is compared with: arch quantities, as a function of the arch
STRUCTURE = {"params": lambda a: flexibert_num_params(a, "as_specified"), "layers": lambda a: len(a.layers),
             "hidden": lambda a: a.hidden_size, "lt_layers": lambda a: sum(x.operation_type == "LT" for x in a.layers)}


def gradient_rows(values: Sequence[dict[str, Any]], runs: Sequence[GradRun], archs: dict[int, Any],
                  glue: dict[int, float]) -> dict[str, Any]:
    """The gradient runs' figures: per run and proxy the page's figures, the tie-broken tau
    within (layers, hidden) cells, tau-b with each :data:`STRUCTURE` quantity (what the
    rounding error's size follows) and the values' median and range; per compared pair of
    runs the tau between their values, the largest relative difference and the change of
    tau-b against GLUE; and the non-vanishing gradient's size."""
    from nasbench_bert import Arch
    from nasbench_bert import metrics as mt

    ids = values[0]["ids"]
    assert all(v["ids"] == ids for v in values), "the runs disagree on the ids"
    parsed = [Arch.coerce(archs[i]) for i in ids]
    y = np.array([glue[i] for i in ids], float)
    quantity = {k: np.array([f(a) for a in parsed], float) for k, f in STRUCTURE.items()}
    cells = quantity["layers"] * 1000 + quantity["hidden"]
    out: dict[str, Any] = {"runs": [], "pairs": []}
    for run, v in zip(runs, values):
        entry: dict[str, Any] = {"label": run.label, "key": run.key, "cpu_seconds_per_arch": round(v["cpu_seconds_per_arch"], 3)}
        for p in ("snip", "grad_norm"):
            x = np.array(v[p], float)
            entry[p] = {"figures": metrics(x, y, quantity["params"]),
                        "tau_within_cell_tb": round(mt.tau_within_cell_tb(x, y, cells), 4),
                        "tau_with": {k: round(mt.kendall_tau_b(x, q), 4) for k, q in quantity.items()},
                        "median": float(np.median(x)), "min": float(x.min()), "max": float(x.max()), "values": v[p]}
        out["runs"].append(entry)
    for a, b in PAIRS:
        for p in ("snip", "grad_norm"):
            xa, xb = np.array(values[a][p], float), np.array(values[b][p], float)
            out["pairs"].append({"a": runs[a].label, "b": runs[b].label, "proxy": p,
                                 "tau_between": round(mt.kendall_tau_b(xa, xb), 4), "max_rel_diff": _rel(xa, xb),
                                 "tau_change": round(mt.kendall_tau_b(xb, y) - mt.kendall_tau_b(xa, y), 4)})
    with_ref = [k for k, v in enumerate(values) if v.get("reference_grad_norm")]
    if with_ref:
        v = values[with_ref[0]]
        r, base = np.array(v["reference_grad_norm"], float), np.array(v["grad_norm"], float)
        out["reference"] = {"run": runs[with_ref[0]].label, "median": float(np.median(r)), "min": float(r.min()),
                            "max": float(r.max()), "median_ratio": float(np.median(base / r)),
                            "values": v["reference_grad_norm"]}
    return out


def compute(bench: Any, cache: Path | None, ids: Sequence[int] = GRAD_IDS, runs: Sequence[GradRun] = RUNS) -> dict[str, Any]:
    """The ``nsc_table`` entry of the page's JSON (see the module doc)."""
    import torch

    from nasbench_bert import proxies
    from nasbench_bert.proxies.protocols import W_PCA_NSC
    from studies.pages import provenance

    table = bench.to_pandas().sort_values("id")
    all_ids = [int(i) for i in table["id"]]
    archs = dict(zip(all_ids, table["arch"]))
    glue = dict(zip(all_ids, table["glue"].astype(float)))
    rule_df = proxies.compute(all_ids, list(RULES), semantics="as_trained", bench=bench)
    assert [int(i) for i in rule_df["id"]] == all_ids
    rules = {r: rule_df[r].to_numpy(float) for r in RULES}
    flops = flops_row(archs, glue, rules)
    values = []
    for run in runs:
        t0 = time.time()
        values.append(gradient_run(archs, ids, run, W_PCA_NSC.batch, cache, reference=run == REFERENCE_RUN))
        print(f"nsc gradients {run.label}: {len(ids)} archs, {time.time() - t0:.0f} s", flush=True)
    grads = gradient_rows(values, runs, archs, glue)
    grads.update({"ids": describe_ids(ids), "n": len(ids), "batch": W_PCA_NSC.batch.key, "model_seed": MODEL_SEED,
                  "paper": {p: dict(zip(("tau", "pw10"), PAPER[p])) for p in ("snip", "grad_norm")}})
    return {"flops": flops, "gradients": grads,
            "machine": f"{platform.machine()}, {os.cpu_count()} CPUs, torch {torch.__version__}",
            "provenance": provenance("python -m studies.published --nsc-rows", bench, ids=describe_ids(ids),
                                     batch=W_PCA_NSC.batch.key, model_seed=MODEL_SEED,
                                     runs=[r.label for r in runs], reference_seed=REFERENCE_SEED,
                                     bootstrap=BOOTSTRAP, bootstrap_seed=0)}


# -- the page ---------------------------------------------------------------------------------------
def _sci(v: float) -> str:
    return f"{v:.1e}"


def lines(summary: dict[str, Any]) -> list[str]:
    """The page's section for ``summary['nsc_table']`` (none without it)."""
    t = summary.get("nsc_table")
    if not t:
        return []
    f, g = t["flops"], t["gradients"]
    dtw, dws = "depth_then_width", "depth_width_then_size"
    cells = [verdict_cell(f["verdict"][r][k])
             for r, k in ((dtw, "tau_tiebroken"), (dws, "tau_tiebroken"), (dws, "tau_within_cell_tb"))]
    first = g["runs"][0]
    gt = first["grad_norm"]["tau_with"]
    f64 = next(r for r in g["runs"] if r["label"] == REFERENCE_RUN.label)
    n = g["n"]
    out = [
        "## NSC's table, the other rows: #FLOPs, SNIP and GradNorm",
        "",
        "NSC's FlexiBERT table has three more rows, computed here in the NSC authors' own protocol "
        "(`python -m studies.published --nsc-rows`; tau-b [95 % interval] / tie-broken tau / rho / 10 %-PW tau "
        "against GLUE, as above):",
        "",
        f"| row | NSC's figure (tau, 10 %-PW) | reproduced here | tie-broken tau − `{dtw}` | tie-broken tau − "
        f"`{dws}` | within-cell tie-broken tau − `{dws}` |",
        "|---|---|---|---|---|---|",
        f"| #FLOPs (their MAC formula, S = {f['seq_len']}) | {f['paper']['tau']:.3f}, {f['paper']['pw10']:.3f} | "
        f"{figures(f['figures'])} | " + " | ".join(cells) + " |",
        *[f"| {name} ({first['label']}) | {g['paper'][p]['tau']:.3f}, {g['paper'][p]['pw10']:.3f} | "
          f"{figures(first[p]['figures'], full=500)} | noise | noise | noise |"
          for name, p in (("SNIP", "snip"), ("GradNorm", "grad_norm"))],
        "",
        f"**#FLOPs** is `nasbench_bert.proxies.nsc.nsc_flops`, their `flexibert_layer_macs` summed over the layers "
        f"(`ranking/compute_flops_all.py`): at S = {f['seq_len']} tokens and the arch's H, SA costs S·H·3H + 2·S²·H + "
        "S·H², LT 2·S·H², DSC S·H², and each of a layer's n feed-forward branches 2·S·H·(F // n); then a pooler S·H² "
        f"and a classifier 2·H. It gives tau {f['figures']['tau']:.3f} against their {f['paper']['tau']:.3f}, and "
        f"10 %-PW {f['figures']['pw10']:.3f} against their {f['paper']['pw10']:.3f} with the pair rule that "
        f"reproduces their #Params row exactly. Its {f['distinct']} distinct values track size (tau "
        f"{f['tau_with_params']:.3f} with the as-specified parameter count).",
        "",
        "**SNIP and GradNorm** follow their `eval_flexibert.py` (`build_model`, `compute_snip`, "
        "`compute_gradnorm`): `torch.manual_seed(42)`, their model at the arch's own H with layer 0's feed-forward "
        "width (`NSC_EVAL`), left in train mode as their `build_model` leaves it, then "
        "`last_hidden_state.backward(ones)`; SNIP sums |w·g| over the Linear weights of each layer's operation and "
        "feed-forward stack (not the embedding projection, which the package's `snip` includes), GradNorm sums ‖g‖ "
        "over every Linear weight. Their batch, 128 WikiText-2 lines of 512 tokens, cannot be fetched here; the "
        f"stand-in is their own random batch for W-PCA (`{g['batch']}`), on {g['ids']} ({n} archs; the CPUs here "
        "could not give 500 archs five runs). Rounding error depends on the batch, so NSC's own figures, on their "
        "batch, are not expected to equal these.",
        "",
        "**They are noise in this protocol.** The objective is the sum of the last LayerNorm's output, whose gain is 1 "
        "at initialisation: each token's normalised vector sums to 0, so the objective is a constant and its gradient "
        "with respect to every Linear weight is exactly 0 in exact arithmetic. What remains is rounding error: "
        f"GradNorm's median is {_sci(first['grad_norm']['median'])} in float32 and "
        f"{_sci(f64['grad_norm']['median'])} in float64"
        + (f", against {_sci(g['reference']['median'])} for the same models with a random N(0, 1) cotangent in place "
           f"of the ones (a gradient that does not vanish; median ratio {_sci(g['reference']['median_ratio'])} in "
           "float64)" if g.get("reference") else "")
        + ". The ranking of that rounding error barely moves with precision, threads or mode (below), because its "
        "size follows the arch: the float32 GradNorm's tau-b is "
        + ", ".join(f"{gt[k]:.3f} with {name}" for k, name in (("lt_layers", "the number of LT layers"),
                                                               ("hidden", "the hidden size"), ("layers", "depth"),
                                                               ("params", "the parameter count")))
        + ". That is what their tau against GLUE measures: within a (layers, hidden) cell their tie-broken tau against "
        f"GLUE is {first['snip']['tau_within_cell_tb']:+.3f} (SNIP) and {first['grad_norm']['tau_within_cell_tb']:+.3f} "
        "(GradNorm). They measure the size of rounding error, not a gradient: the table above gives them no verdict "
        "word. How they move with precision, threads and mode:",
        "",
        "| run | SNIP | GradNorm | within-cell tie-broken tau: SNIP / GradNorm | GradNorm's median [min, max] | "
        "CPU s per arch |",
        "|---|---|---|---|---|---|",
        *[f"| {r['label']} | {figures(r['snip']['figures'], full=500)} | {figures(r['grad_norm']['figures'], full=500)} | "
          f"{r['snip']['tau_within_cell_tb']:+.3f} / {r['grad_norm']['tau_within_cell_tb']:+.3f} | "
          f"{_sci(r['grad_norm']['median'])} [{_sci(r['grad_norm']['min'])}, {_sci(r['grad_norm']['max'])}] | "
          f"{r['cpu_seconds_per_arch']:.2f} |" for r in g["runs"]],
        "",
        "Value by value, between two runs on the same archs (tau-b between their values; the largest relative "
        "difference; the change of tau-b against GLUE, second run less first):",
        "",
        "| proxy | first run | second run | tau between | largest relative difference | tau-b change |",
        "|---|---|---|---|---|---|",
        *[f"| {'SNIP' if q['proxy'] == 'snip' else 'GradNorm'} | {q['a']} | {q['b']} | {q['tau_between']:.3f} | "
          f"{q['max_rel_diff']:.2f} | {q['tau_change']:+.3f} |" for q in g["pairs"]],
        "",
    ]
    return out


def merge(stored: dict[str, Any], bench: Any, cache: Path | None) -> dict[str, Any]:
    """``stored`` (the page's JSON) with ``nsc_table`` computed afresh; nothing else changed."""
    return {**stored, "nsc_table": compute(bench, cache)}
