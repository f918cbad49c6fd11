"""NAS-Bench-Suite-Zero's standard proxies (``nasbench_bert.proxies.standard``) run
through the public entry point under every semantics, and a few of their parts checked
by hand. Their values against NASLib's code: ``tests/reference/test_standard_proxies_reference.py``."""

from __future__ import annotations

import numpy as np
import pytest

torch = pytest.importorskip("torch")

from torch import nn  # noqa: E402

from nasbench_bert import proxies  # noqa: E402
from nasbench_bert.models.flexibert import build_flexibert  # noqa: E402
from nasbench_bert.proxies import engine, standard  # noqa: E402

SIX = ["epe_nas", "fisher", "grasp", "l2_norm", "plain", "zen"]
NLP_SET = ["epe_nas", "l2_norm", "plain"]
SMALL = {"batch_size": 2, "seq_len": 16}


def test_registered_in_the_standard_group():
    flex = {p.name: p for p in proxies.get("flexibert", "standard")}
    assert set(SIX) <= set(flex)
    assert {n for n in SIX if flex[n].model_only} == {"epe_nas", "fisher", "grasp", "zen"}
    assert flex["plain"].needs == {"forward", "backward"} and flex["l2_norm"].needs == {"forward"}
    nlp = {p.name: p for p in proxies.get("nlp", "standard")}
    assert set(NLP_SET) <= set(nlp) and not {"fisher", "grasp", "zen"} & set(nlp)
    assert all(p.higher_is_better for p in [*flex.values(), *nlp.values()] if p.name in SIX)


@pytest.mark.parametrize("semantics", ["as_trained", "as_specified", "authors"])
def test_six_run_and_are_finite(bench, semantics):
    before = torch.get_rng_state()
    df = proxies.compute([0, 1], SIX, semantics=semantics, bench=bench, batch=SMALL)
    assert torch.equal(before, torch.get_rng_state())  # the global generator is left alone
    errors = {c: df[c].tolist() for c in df.columns if c.endswith("__error")}
    assert df.error.isna().all() and not errors, errors
    for n in SIX:
        assert np.isfinite(df[n]).all(), (n, df[n].tolist())
    for n in ("l2_norm", "plain", "fisher", "grasp"):  # per encoder layer
        assert [len(v) for v in df[f"{n}__layers"]] == [bench.query(i, charge=False).arch.num_layers for i in (0, 1)]
    # deterministic: the same call gives the same values (train-mode dropout is seeded)
    again = proxies.compute([0, 1], SIX, semantics=semantics, bench=bench, batch=SMALL)
    assert np.array_equal(df[SIX].to_numpy(), again[SIX].to_numpy())


def test_l2_norm_and_plain_by_hand(bench):
    arch = bench.query(4, charge=False).arch
    df = proxies.compute([4], ["l2_norm", "plain", "snip"], semantics="as_trained", bench=bench, batch=SMALL, seed=0)
    model = build_flexibert(arch, "as_trained", seed=0)
    want = sum(float(m.weight.detach().double().norm()) for m in model.modules() if isinstance(m, nn.Linear))
    assert df.l2_norm.iloc[0] == pytest.approx(want, rel=1e-12)
    # plain is SNIP without the absolute value: |sum w g| <= sum |w g|, and not equal here
    assert abs(df.plain.iloc[0]) < df.snip.iloc[0]


def test_word_substitution_is_exact_and_zen_leaves_the_model(bench):
    arch = bench.query(2, charge=False).arch
    spec = proxies.BatchSpec(**SMALL)
    cap = engine.capture_flexibert(arch, {"model"}, proxies.make_batch(spec), "as_trained", 0)
    b = cap.batch
    with torch.no_grad():
        plain_out = cap.model(b.input_ids, b.attention_mask, b.token_type_ids)
        sub = standard._run(cap.model, cap, cap.model.embeddings.word(b.input_ids))
    assert torch.equal(plain_out, sub)
    w = [p.detach().clone() for p in cap.model.parameters()]
    v = standard.zen(cap).value
    assert np.isfinite(v) and all(torch.equal(a, p) for a, p in zip(w, cap.model.parameters()))
    assert standard.zen(cap).value == v


def test_epe_score_is_one_class_naslib_formula():
    rng = np.random.default_rng(0)
    rows = rng.standard_normal((5, 40))
    c = np.corrcoef(rows)
    assert standard.epe_score(rows) == pytest.approx(abs(np.log(np.abs(c) + 1e-5).sum()), rel=1e-14)
    rows[2] = 1.0  # a constant row: corrcoef undefined, NaN kept
    with np.errstate(all="ignore"):
        assert np.isnan(standard.epe_score(rows))


@pytest.mark.parametrize("semantics", ["as_trained", "authors"])
def test_nlp_ones_run(bench, semantics):
    ptb = bench.nlp.ptb
    rows = ptb[ptb.recipe.notna()].head(2)
    items = [(r.log_name, r.recipe) for r in rows.itertuples()]
    df = proxies.compute(items, NLP_SET, space="nlp", semantics=semantics, batch={"batch_size": 3, "seq_len": 6})
    assert df.error.isna().all(), df.error.tolist()
    for n in NLP_SET:
        assert np.isfinite(df[n]).all(), (n, df[n].tolist())
    assert [len(v) for v in df["plain__layers"]] == [3, 3]
