"""The runs behind ``docs/published.md``: which values the page scores and where each comes from.

Two kinds of values, kept apart on purpose:

* **the table's** (:func:`table_values`): the model-based proxies under the three semantics
  on the package's default proxy batch (:data:`SWEEP_BATCH`) are read from the
  proxy-values table (``bench.proxy_values``, through :func:`studies.table_values.live`),
  never computed here;
* **the page's own runs** (:func:`runs`, :func:`own_values`): experiments in other
  protocols that the table does not hold (the W-PCA protocol runs, the NSC authors'
  construction on the sweep batch, real text beside a second random seed, SWAP at 16
  sequences, ZeroLM on instantiated weights). They are computed in the table's precision,
  float64 (:data:`DTYPE`), so that their comparisons with the table's values are like
  with like and their figures reproduce on another machine; each run keeps one part file
  per arch under the page's cache (an interrupted run resumes), and their per-arch values
  are written beside the page (:mod:`studies.published_values`). Until that file is
  committed, the page carries the figures of their earlier float32 run over
  (:mod:`studies.published_sources`).
"""

from __future__ import annotations

import dataclasses
import json
import os
import time
from dataclasses import dataclass
from pathlib import Path
from typing import Any, Sequence

import numpy as np

from studies.published_metrics import RULES

ROOT = Path(__file__).resolve().parent.parent
SEMANTICS = ("as_trained", "as_specified", "authors")
#: the precision of every own run: the proxy-values table's
#: (``nasbench_bert.proxies.values.DTYPE``, checked by a test; not imported here, since
#: that module loads torch and the page renders without it)
DTYPE = "float64"
#: the batch of the table's values (the package's default proxy batch: random tokens, 8
#: sequences of 128, seed 0); the page's own runs that compare with them use its shape. The
#: papers used 128 OpenWebText documents of 512 tokens (~40 s per arch on one core here).
SWEEP_BATCH = dict(source="random", batch_size=8, seq_len=128, seed=0)
#: the model-based proxies read from the table under each semantics
MODEL_PROXIES = ("w_pca_first", "w_pca", "lpzero", "swap", "num_params")
#: the closed forms on the spec (no model; computed, microseconds)
SPEC_PROXIES = ["nsc", "nsc_model", "zerolm", "zerolm_model"]
#: archs of the table's values the page scores: all 500
SWEEP_IDS = tuple(range(500))
#: the model-based published proxies on real text beside random tokens (authors' model)
TEXT_PROXIES = ("w_pca_first", "lpzero", "swap")
#: archs of the real-text run: all 500
TEXT_IDS = tuple(range(500))
#: archs of the second random seed (the seed-to-seed spread the text difference is read against)
SEED_IDS = tuple(range(500))
#: SWAP at 16 sequences, random and text, on every 2nd id: at 8 sequences its count is
#: bounded by 3^8 = 6561 patterns (256 = 2^8 where no activation is exactly 0), which it
#: reaches on most archs, so the 8 x 128 batch cannot rank SWAP (every 2nd id: the 2 CPUs
#: here are shared, 2-5 s per arch and run)
SWAP16_IDS = tuple(range(0, 500, 2))
#: archs of the NSC authors' construction on the sweep batch (a W-PCA protocol row): every
#: 10th id, for the same reason (~8 s per arch on the shared CPUs)
NSC_EVAL_IDS = tuple(range(0, 500, 10))
#: archs of the W-PCA protocol runs (the NSC authors' construction and the three semantics)
W_PCA_SEM_IDS = tuple(range(500))
#: the ``--small`` form's archs: 40, every 12th id (the table's values at those ids; its
#: own batch runs on every 4th of them)
SMALL_IDS = tuple(range(0, 480, 12))
#: what the real text is: every sentence pair of GLUE RTE's train, dev and test files,
#: one line each (the pair joined by a space), derived at run time into the cache folder
RTE_SPLITS = ("train", "dev", "test")
#: the proxies of the W-PCA protocol runs
W_PCA_PROXIES = ("w_pca_first", "w_pca", "num_params")


def describe_ids(ids: Sequence[int], total: int = 500) -> str:
    """How a page names a set of ids: "all 500 ids", "every 5th id" for a stride from 0 to
    the end, "every 12th id, 0-468" for a stride that stops early, else the count. Why
    computed: the page said "every 5th id" in the ``--small`` form too, whose sweeps ran on
    every 12th id."""
    ids = list(ids)
    if ids == list(range(total)):
        return f"all {total} ids"
    steps = {b - a for a, b in zip(ids, ids[1:])}
    if len(ids) < 2 or len(steps) != 1 or ids[0] != 0:
        return f"{len(ids)} ids"
    d = steps.pop()
    nth = {1: "", 2: "2nd ", 3: "3rd "}.get(d, f"{d}th ")
    return f"every {nth}id" + ("" if ids[-1] + d >= total else f", {ids[0]}-{ids[-1]}")


@dataclass(frozen=True)
class Run:
    """One of the page's own sweeps: a label, what it computes, and how (protocol fields),
    always in :data:`DTYPE`."""

    label: str
    proxies: tuple[str, ...]
    semantics: str
    batch: dict[str, Any]
    seed: int
    ids: tuple[int, ...]

    def cache_dir(self, cache: Path) -> Path:
        """The run's own folder under the page's cache (the dtype in its name: a float32
        folder of an earlier form of the page is never mixed in)."""
        b = self.batch
        src = b["source"].split(":", 1)[0]
        return cache / f"{self.semantics}-{src}{b['batch_size']}x{b['seq_len']}-b{b['seed']}-s{self.seed}-{DTYPE}"


def release_dir() -> Path:
    """The release folder (``$NASBENCH_BERT_RELEASE``, else ``../shared/upstream``)."""
    return Path(os.environ.get("NASBENCH_BERT_RELEASE", ROOT.parent / "shared" / "upstream"))


def rte_text_available(release: Path | None = None) -> bool:
    """Whether the release folder holds GLUE RTE's three TSVs (the real text's source)."""
    src = (release or release_dir()) / "glue-rte"
    return all((src / f"{split}.tsv").is_file() for split in RTE_SPLITS)


def rte_text(cache: Path, release: Path | None = None) -> Path:
    """A plain-text file of GLUE RTE's sentence pairs (one pair a line, its two sentences
    joined by a space), derived from the release's ``glue-rte`` TSVs into ``cache`` (never
    the repository: the text is not ours to commit). Why pairs: one sentence a line leaves
    most of a 128-token row as padding (a hypothesis is ~10 tokens)."""
    from nasbench_bert.text import flat_text, read_documents

    src = (release or release_dir()) / "glue-rte"
    lines = [flat_text(d) for split in RTE_SPLITS for d in read_documents(f"glue:{src / f'{split}.tsv'}")]
    text = "\n".join(" ".join(ln.split()) for ln in lines) + "\n"
    path = cache / "rte" / "rte-pairs.txt"
    if not path.is_file() or path.read_text() != text:
        path.parent.mkdir(parents=True, exist_ok=True)
        tmp = path.with_suffix(".tmp")
        tmp.write_text(text)
        tmp.replace(path)
    return path


def runs(ids: tuple[int, ...], text: Path | None, *, text_ids: tuple[int, ...] = TEXT_IDS,
         seed_ids: tuple[int, ...] = SEED_IDS, swap16_ids: tuple[int, ...] = SWAP16_IDS,
         nsc_eval_ids: tuple[int, ...] = NSC_EVAL_IDS, w_pca_sem_ids: tuple[int, ...] = W_PCA_SEM_IDS) -> list[Run]:
    """The page's own runs (the table's values are not among them: :func:`table_values`),
    the longest first: real text, SWAP at 16 sequences, the second seed, then the W-PCA
    protocol runs and the NSC authors' construction on the sweep batch."""
    from nasbench_bert.proxies.protocols import W_PCA_NSC

    out = []
    # real text beside random tokens (LPZero and SWAP were run on OpenWebText, unavailable here),
    # and a second random seed for the spread the text difference is read against
    if text is not None:
        out.append(Run("text/RTE", TEXT_PROXIES, "authors", dict(SWEEP_BATCH, source=f"text:{text}"), 0, text_ids))
    swap16 = dict(SWEEP_BATCH, batch_size=16)
    out.append(Run("swap16/random", ("swap",), "authors", swap16, 0, swap16_ids))
    if text is not None:
        out.append(Run("swap16/text", ("swap",), "authors", dict(swap16, source=f"text:{text}"), 0, swap16_ids))
    out.append(Run("random seed 1", TEXT_PROXIES, "authors", dict(SWEEP_BATCH, seed=1), 0, seed_ids))
    # W-PCA in the NSC authors' protocol (uniform ids 4 x 64 at seed 0, model seed 42), and the
    # same batch and seed on the three semantics: which part of the protocol moves W-PCA
    wb = dataclasses.asdict(W_PCA_NSC.batch)
    wb.pop("space"), wb.pop("vocab_size")
    for sem in ("nsc_eval", *SEMANTICS):
        out.append(Run(f"w_pca_nsc/{sem}", W_PCA_PROXIES, sem, wb, W_PCA_NSC.seed,
                       ids if sem == "nsc_eval" else w_pca_sem_ids))
    # the NSC authors' construction on the sweep batch
    out.append(Run("nsc_eval", W_PCA_PROXIES, "nsc_eval", SWEEP_BATCH, 0, nsc_eval_ids))
    return out


def small_kwargs(ids: tuple[int, ...]) -> dict[str, tuple[int, ...]]:
    """The ``--small`` form's ids per run: its own batch runs on every 4th of ``ids``."""
    return dict(text_ids=ids, seed_ids=ids[::4], swap16_ids=ids[::4], nsc_eval_ids=ids, w_pca_sem_ids=ids)


def _semantics(name: str) -> Any:
    from nasbench_bert.proxies.protocols import NSC_EVAL

    return NSC_EVAL if name == "nsc_eval" else name


def zerolm_weights(cache: Path, ids: tuple[int, ...], bench: Any) -> dict[str, Any]:
    """ZeroLM on instantiated weights, as the NSC repository's model-based run scores it
    (``run_realdata_proxy.py``: sum of ||W||_F^2 / min(m, n) over the Linear weights of each
    layer's token mixing, S_attn, and of its feed-forward stack, S_ffn) on the NSC authors'
    model (``NSC_EVAL`` after ``torch.manual_seed(42)``, N(0, 0.02) init). No forward pass.
    The model is drawn in float32 (their init) and summed in :data:`DTYPE`, as the sweep
    builds its float64 models."""
    path = cache / f"zerolm_weights-{DTYPE}.json"
    if path.is_file():
        got = json.loads(path.read_text())
        if got["ids"] == list(ids):
            return got
    import torch
    from torch import nn

    from nasbench_bert.models.flexibert import FlexiBERTEncoder
    from nasbench_bert.proxies.protocols import NSC_EVAL

    archs = bench.archs
    attn, ffn = [], []
    for i in ids:
        with torch.random.fork_rng(devices=[]):
            torch.manual_seed(42)
            model = FlexiBERTEncoder(NSC_EVAL.plan(archs[i])).to(getattr(torch, DTYPE))
        a = f = 0.0
        for layer in model.layers:
            for part, acc in ((layer.operation, "a"), (layer.feed_forward, "f")):
                for mod in part.modules():
                    if isinstance(mod, nn.Linear):
                        w = mod.weight.detach()
                        v = float((w ** 2).sum()) / min(w.shape)
                        a, f = (a + v, f) if acc == "a" else (a, f + v)
        attn.append(a)
        ffn.append(f)
    out = {"ids": list(ids), "attn": attn, "ffn": ffn}
    from nasbench_bert.atomic import atomic_write

    path.parent.mkdir(parents=True, exist_ok=True)
    atomic_write(path, json.dumps(out))
    return out


def own_values(cache: Path, ids: tuple[int, ...], bench: Any, jobs: int = 1, small: bool = False) -> dict[str, Any]:
    """The page's own runs, computed (or read back from their part caches under ``cache``)
    in :data:`DTYPE`: {label: {"ids", "batch", "seconds", "tokenizer", proxy: [value per id]}},
    plus ``zerolm_weights`` ({"ids", "attn", "ffn"}) and ``text_fill`` (what the real-text
    batches hold), or without ``text_fill`` where the release has no GLUE RTE."""
    from nasbench_bert import proxies

    text = rte_text(cache) if rte_text_available() else None
    values: dict[str, Any] = {}
    for run in runs(ids, text, **(small_kwargs(ids) if small else {})):
        t0 = time.time()
        df = proxies.compute(list(run.ids), list(run.proxies), semantics=_semantics(run.semantics), batch=run.batch,
                             seed=run.seed, dtype=DTYPE, bench=bench, cache=run.cache_dir(cache), progress=True,
                             jobs=jobs)
        bad = df[df["error"].notna()]
        if len(bad):
            raise RuntimeError(f"{run.label}: {len(bad)} archs failed, e.g. id {int(bad.iloc[0]['id'])}: "
                               f"{bad.iloc[0]['error']}")
        values[run.label] = {"ids": [int(i) for i in df["id"]], "batch": str(df["batch"].iloc[0]),
                             "seconds": float(df["seconds"].mean()), "tokenizer": str(df["tokenizer"].iloc[0]),
                             **{p: [float(v) for v in df[p]] for p in run.proxies}}
        print(f"{run.label} {list(run.proxies)}: {len(df)} archs, {int(df['cached'].sum())} cached, "
              f"{time.time() - t0:.0f} s", flush=True)
    values["zerolm_weights"] = zerolm_weights(cache, ids, bench)
    if text is not None:
        values["text_fill"] = text_fill(text)
    return values


def text_fill(text: Path) -> dict[str, Any]:
    """What the real-text batches hold: the share of real (unpadded) tokens, per batch size
    used, the tokenizer, and the corpus size (lines)."""
    from nasbench_bert.proxies.inputs import BatchSpec, make_batch

    out: dict[str, Any] = {"lines": sum(1 for _ in text.open())}
    for bsz in (SWEEP_BATCH["batch_size"], 16):
        b = make_batch(BatchSpec(source=f"text:{text}", batch_size=bsz, seq_len=SWEEP_BATCH["seq_len"], seed=0))
        out[f"fill_{bsz}"] = round(float(b.attention_mask.float().mean()), 4)
        out["tokenizer"] = b.tokenizer
    return out


def table_values(bench: Any, ids: Sequence[int]) -> dict[str, Any]:
    """The model-based proxies under each semantics at ``ids``, read from the proxy-values
    table (:func:`studies.table_values.live`; nothing computed): {semantics: {"ids",
    "batch", "seconds", proxy: [value per id]}}, ``seconds`` the table's recorded cost per
    arch of each proxy where it was built."""
    from studies.table_values import live, seconds_per_row

    out: dict[str, Any] = {}
    for sem in SEMANTICS:
        frame = live(bench, sem, MODEL_PROXIES)
        frame = frame.set_index("id").loc[list(ids)]
        out[sem] = {"ids": [int(i) for i in frame.index], "batch": frame.attrs["batch"] if "batch" in frame.attrs
                    else None, "seconds": {p: seconds_per_row(frame, p) for p in MODEL_PROXIES},
                    **{p: frame[p].to_numpy(float).tolist() for p in MODEL_PROXIES}}
    return out


def spec_values(bench: Any, ids: Sequence[int]) -> dict[str, Any]:
    """The closed forms on the spec under each semantics and the two trivial rules at
    ``ids``: computed (no model, microseconds), {"spec/<semantics>": ..., "rules": ...}."""
    from nasbench_bert import proxies

    values: dict[str, Any] = {}
    for sem in SEMANTICS:
        df = proxies.compute(list(ids), SPEC_PROXIES, semantics=sem, bench=bench)
        values[f"spec/{sem}"] = {"ids": [int(i) for i in df["id"]], **{p: df[p].to_numpy(float).tolist()
                                                                       for p in SPEC_PROXIES}}
    rules = proxies.compute(list(ids), list(RULES), semantics="as_trained", bench=bench)
    values["rules"] = {"ids": [int(i) for i in rules["id"]], **{r: rules[r].to_numpy(float).tolist() for r in RULES}}
    return values


def as_array(values: dict[str, Any], label: str, proxy: str, at: Sequence[int] | None = None) -> np.ndarray:
    """A run's values of ``proxy`` at ``at`` (default: the run's own ids)."""
    v = values[label]
    got = dict(zip(v["ids"], v[proxy]))
    return np.array([got[i] for i in (v["ids"] if at is None else at)], float)
