"""Every verdict of README and the docs reads its figures from the generator's output, and
its words follow them (issue 29, item 2).

A verdict compares a proxy with ``depth_then_width`` and ``depth_width_then_size`` under
the tie-broken τ and the within-cell τ, by a paired difference over the same bootstrap
resamples (:mod:`studies.verdicts`); never with depth's tie-inflated τ-b alone. Here each
page's verdict is checked against its JSON (the leaderboard) or its generated evidence
table (the errata's ``errata_numbers.md``): every paired interval quoted is one the
generator computed, every direction word is the one that interval gives, every count
("k of these n") is the count of the rows listed. Each checker returns its problems, and
is also run on an edited page to show that it fails.
"""

from __future__ import annotations

import json
import math
import re
from pathlib import Path
from typing import Any

import numpy as np
import pytest

from nasbench_bert import metrics
from studies import leaderboard as lbmod
from studies.verdicts import METRICS, compare, word

ROOT = Path(__file__).resolve().parent.parent
DOCS = ROOT / "docs"

#: a signed figure as the pages print it (ASCII hyphen or the typographic minus)
NUM = r"[+\-−]?\d+\.\d{3}"
#: a paired difference's figure: always signed
SIGNED = r"[+\-−]\d+\.\d{3}"
#: "paired d [lo, hi]" (the word "paired" may be left out after the first of a list): signed figures
PAIRED = re.compile(rf"(?:paired )?({SIGNED}) \[({SIGNED}), ({SIGNED})\](?::\s*(above|below|level with|level))?")


def _num(s: str) -> float:
    return float(s.replace("−", "-"))


def _flat(text: str) -> str:
    return re.sub(r"\s+", " ", text)


def _lb() -> tuple[dict[str, Any], str]:
    return json.loads((DOCS / "leaderboard.json").read_text()), (DOCS / "leaderboard.md").read_text()


def _section(md: str, start: str, end: str) -> str:
    return md[md.index(start):md.index(end, md.index(start))]


# -- the paired difference itself ------------------------------------------------------------------
def test_compare_is_the_difference_of_the_package_metrics_on_shared_resamples():
    """Recomputed here one resample at a time from the package's metric functions and
    numpy's percentile: the same value, difference and interval."""
    rng = np.random.default_rng(3)
    n = 60
    cells = rng.integers(0, 3, n).astype(float)
    y = rng.normal(size=n)
    x = y + rng.normal(scale=1.0, size=n)
    rule = np.round(y + rng.normal(scale=0.7, size=n), 1)
    out = {(c.metric): c for c in compare({"x": x}, y, cells, {"r": rule}, bootstrap=40, seed=5)}
    C = metrics.resamples(n, 40, 5)
    idx = [np.repeat(np.arange(n), c.astype(int)) for c in C]
    fns = {"tau_tiebroken": lambda a, b, g: metrics.kendall_tau_tiebroken(a, b),
           "tau_within_cell": metrics.tau_within_cell, "tau_within_cell_tb": metrics.tau_within_cell_tb}
    for m in METRICS:
        f = fns[m]
        d0 = f(x, y, cells) - f(rule, y, cells)
        d = np.array([f(x[i], y[i], cells[i]) - f(rule[i], y[i], cells[i]) for i in idx])
        lo, hi = np.nanpercentile(d, [2.5, 97.5])
        c = out[m]
        assert c.value == pytest.approx(f(x, y, cells), abs=1e-12)
        assert c.diff == pytest.approx(d0, abs=1e-12)
        assert c.ci_low == pytest.approx(min(lo, d0), abs=1e-12)
        assert c.ci_high == pytest.approx(max(hi, d0), abs=1e-12)
        assert c.word == word(c.ci_low, c.ci_high)


def test_words_follow_the_interval_and_a_rule_constant_within_cells_has_none():
    rng = np.random.default_rng(0)
    n = 120
    cells = np.repeat([0.0, 1.0], n // 2)
    y = rng.normal(size=n)
    cs = compare({"oracle": y, "noise": rng.normal(size=n), "same": y + cells},
                 y, cells, {"rule": y + rng.normal(scale=1.5, size=n), "cell": cells}, bootstrap=100)
    by = {(c.proxy, c.rule, c.metric): c for c in cs}
    assert by["oracle", "rule", "tau_tiebroken"].word == "above"
    assert by["noise", "rule", "tau_tiebroken"].word == "below"
    # a rule constant within every cell orders no pair there: no difference, no word
    c = by["oracle", "cell", "tau_within_cell"]
    assert math.isnan(c.rule_value) and math.isnan(c.diff) and c.word == "undefined"
    assert word(-0.1, 0.1) == "level with" and word(0.01, 0.2) == "above" and word(-0.2, -0.01) == "below"


# -- the leaderboard -------------------------------------------------------------------------------
def leaderboard_problems(stored: dict[str, Any], md: str) -> list[str]:
    """What in the leaderboard page's verdict does not follow from its JSON."""
    problems: list[str] = []
    lb = {(r["proxy"], r["semantics"], r["source"]): r for r in stored["leaderboard"]}
    comps = stored.get("verdict_comparisons") or []
    if not comps:
        return ["the JSON has no verdict_comparisons"]
    verdict = _flat(_section(md, "## Verdict", "## Published records"))
    rules = {r: lb[r, "as_trained", "trivial baseline (spec)"] for r in ("depth_then_width", "depth_width_then_size")}
    seen = set()
    for c in comps:
        key = (c["proxy"], c["semantics"], c["source"])
        seen.add(c["rule"])
        # the comparison's figures are the table's (computed independently by rank_metrics)
        if abs(c["value"] - lb[key][c["metric"]]) > 1e-9:
            problems.append(f"{key} {c['metric']}: {c['value']} vs the table's {lb[key][c['metric']]}")
        rv = rules[c["rule"]][c["metric"]]
        if not (math.isnan(rv) and math.isnan(c["rule_value"])) and abs(c["rule_value"] - rv) > 1e-9:
            problems.append(f"{c['rule']} {c['metric']}: {c['rule_value']} vs the table's {rv}")
        if math.isfinite(c["diff"]):
            if abs(c["diff"] - (c["value"] - c["rule_value"])) > 1e-9 or not c["ci_low"] <= c["diff"] <= c["ci_high"]:
                problems.append(f"{key} vs {c['rule']} {c['metric']}: inconsistent difference")
        if c["word"] != word(c["ci_low"], c["ci_high"]):
            problems.append(f"{key} vs {c['rule']} {c['metric']}: word {c['word']!r}")
    if seen != {"depth_then_width", "depth_width_then_size"}:
        problems.append(f"compared against {sorted(seen)}")
    if {c["metric"] for c in comps} != set(METRICS):
        problems.append("not every verdict metric compared")
    # every paired interval quoted carries the word its JSON record gives
    quoted = PAIRED.findall(verdict)
    finite = [c for c in comps if math.isfinite(c["diff"])]
    for d, lo, hi, w in quoted:
        match = [c for c in finite if (f"{c['diff']:+.3f}", f"{c['ci_low']:+.3f}", f"{c['ci_high']:+.3f}")
                 == (f"{_num(d):+.3f}", f"{_num(lo):+.3f}", f"{_num(hi):+.3f}")]
        if not match:
            problems.append(f"paired {d} [{lo}, {hi}] is in no JSON record")
        elif w and w != match[0]["word"]:
            problems.append(f"paired {d} [{lo}, {hi}] says {w!r}; its record says {match[0]['word']!r}")
    if not quoted:
        problems.append("the verdict quotes no paired difference")
    # the best proxy's tie-broken comparisons are the ones the first bullet names
    free = [r for r in stored["leaderboard"] if r["source"] in ("live", "stored (release)") and not r["size_like"]]
    best = max(free, key=lambda r: r["tau_tiebroken"])
    ws = {c["rule"]: c["word"] for c in comps if (c["proxy"], c["semantics"], c["source"])
          == (best["proxy"], best["semantics"], best["source"]) and c["metric"] == "tau_tiebroken"}
    first = verdict.split("* **")[1]
    if len(set(ws.values())) > 1:
        for r, w in ws.items():
            if f"{w} `{r}`" not in first:
                problems.append(f"the headline does not say the best proxy is {w} `{r}`")
    elif ws and {"below": "better than the best", "above": "better than the one-line",
                 "level with": "level with the one-line"}[next(iter(ws.values()))] not in first:
        problems.append(f"the headline does not follow the words {ws}")
    # "k of these n": n the rows listed, k those whose interval excludes zero
    m = re.search(r"\*\*Beyond the parameter count\*\*[^:]*: (.*?)\. (\d+) of these (\d+) intervals exclude zero", verdict)
    if m:
        listed = re.findall(rf"`[^`]+` \([^)]+\) ({NUM}) \[({NUM}), ({NUM})\]", m.group(1))
        k = sum(_num(lo) > 0 for _, lo, _ in listed)
        if (int(m.group(2)), int(m.group(3))) != (k, len(listed)):
            problems.append(f"'{m.group(2)} of these {m.group(3)}' but {k} of the {len(listed)} listed exclude zero")
        with_ci = [r for r in stored["leaderboard"] if r.get("partial_ci_low") is not None
                   and math.isfinite(r["partial_ci_low"])]
        if len(with_ci) != len(listed):
            problems.append(f"{len(listed)} rows listed of the {len(with_ci)} with an interval")
    elif "Beyond the parameter count" in verdict and "None is distinguishable" not in verdict:
        problems.append("the partial-τ bullet has no count")
    # depth's tie-inflated τ-b is no bar
    if "depth alone" in verdict or "0.682" in verdict:
        problems.append("the verdict compares against depth's τ-b")
    return problems


def test_leaderboard_verdict_follows_its_json():
    stored, md = _lb()
    assert leaderboard_problems(stored, md) == []


def test_leaderboard_page_is_its_render():
    """The committed page is what the render makes of the JSON (the verdict included)."""
    stored, md = _lb()
    assert lbmod.render_stored(stored) == md


@pytest.mark.parametrize("edit", [
    ("of these", lambda s: re.sub(r"(\d+) of these (\d+)", lambda m: f"{int(m.group(1)) - 1} of these {m.group(2)}", s)),
    ("word", lambda s: s.replace(": below)", ": level with)", 1)),
    ("figure", lambda s: re.sub(r"paired -0\.0(\d)", lambda m: f"paired -0.0{(int(m.group(1)) + 1) % 10}", s, count=1)),
    ("depth", lambda s: s.replace("## Verdict\n\n", "## Verdict\n\n* Below depth alone (0.682).\n", 1)),
])
def test_leaderboard_checker_fails_on_an_edited_verdict(edit):
    stored, md = _lb()
    edited = edit[1](md)
    assert edited != md
    assert leaderboard_problems(stored, edited)


def test_leaderboard_checker_fails_when_a_record_is_edited():
    stored, md = _lb()
    c = next(c for c in stored["verdict_comparisons"] if c["word"] == "below")
    c["word"] = "level with"
    assert leaderboard_problems(stored, md)


def test_verdict_candidates_are_the_best_rows():
    stored, _ = _lb()
    import pandas as pd

    lb = pd.DataFrame.from_records(stored["leaderboard"])
    cands = lbmod.verdict_candidates(lb)
    free = lb[lb.source.isin(["live", "stored (release)"]) & ~lb.size_like.astype(bool)]
    for col in ("tau_tiebroken", "tau_within_cell", "tau_within_cell_tb"):
        r = free.loc[free[col].idxmax()]
        assert (r.proxy, r.semantics, r.source) in cands
    named = {t for t in lbmod.NAMED_COMPARISONS if ((lb.proxy == t[0]) & (lb.semantics == t[1])).any()}
    assert {(c["proxy"], c["semantics"], c["source"]) for c in stored["verdict_comparisons"]} == set(cands) | named


# -- the errata ------------------------------------------------------------------------------------
def errata_table(numbers: str) -> dict[tuple[str, str, str], dict[str, Any]]:
    """The verdict table of ``errata_numbers.md``: (proxy, figure, rule) -> its row."""
    sec = numbers[numbers.index("## 9. Verdicts against the trivial rules"):]
    rows = {}
    for line in sec.splitlines():
        cells = [c.strip() for c in line.strip().strip("|").split("|")]
        if len(cells) == 7 and re.fullmatch(NUM, cells[4] or "x"):
            d, lo, hi = re.fullmatch(rf"({NUM}) \[({NUM}), ({NUM})\]", cells[5]).groups()
            rows[cells[0], cells[1], cells[3]] = {"value": _num(cells[2]), "rule_value": _num(cells[4]),
                                                  "diff": _num(d), "lo": _num(lo), "hi": _num(hi), "word": cells[6]}
    return rows


#: what docs/errata.md claims, as (a fragment of its text, the table row it rests on); the
#: fragment holds the figures and the word the row must give
ERRATA_CLAIMS: list[tuple[str, tuple[str, str, str]]] = [
    ("0.480 is below `depth_then_width`'s {rule_value} (paired {diff} [{lo}, {hi}])",
     ("activation_distance_dedup", "tie-broken τ", "depth_then_width")),
    ("and `depth_width_then_size`'s {rule_value} ({diff} [{lo}, {hi}])",
     ("activation_distance_dedup", "tie-broken τ", "depth_width_then_size")),
    ("it is level with the number of layers alone (tie-broken {rule_value}; paired {diff} [{lo}, {hi}])",
     ("activation_distance_dedup", "tie-broken τ", "depth")),
    ("ranks GLUE at {value}, level with `depth_width_then_size` (τ-b {rule_value}, paired {diff} [{lo}, {hi}];",
     ("activation_distance_dedup", "within-cell τ-b", "depth_width_then_size")),
    ("tie-broken {rule_value}, paired {diff} [{lo}, {hi}])",
     ("activation_distance_dedup", "within-cell tie-broken τ", "depth_width_then_size")),
    ("against `depth_then_width`'s {rule_value} paired {diff} [{lo}, {hi}]",
     ("sept_all_linear", "tie-broken τ", "depth_then_width")),
    ("against `depth_width_then_size`'s {rule_value} {diff} [{lo}, {hi}]",
     ("sept_all_linear", "tie-broken τ", "depth_width_then_size")),
    ("the block version {diff} [{lo}, {hi}]", ("sept", "tie-broken τ", "depth_then_width")),
    ("and {diff} [{lo}, {hi}] (", ("sept", "tie-broken τ", "depth_width_then_size")),
    ("the all-Linear one is above ({diff} [{lo}, {hi}])", ("sept_all_linear", "tie-broken τ", "depth")),
    ("and the block version level ({diff} [{lo}, {hi}])", ("sept", "tie-broken τ", "depth")),
]

#: the word each claim states, by the first word of the claim's verdict ("below" etc.)
ERRATA_WORDS: dict[tuple[str, str, str], str] = {
    ("activation_distance_dedup", "tie-broken τ", "depth_then_width"): "below",
    ("activation_distance_dedup", "tie-broken τ", "depth_width_then_size"): "below",
    ("activation_distance_norm", "tie-broken τ", "depth_then_width"): "below",
    ("activation_distance_norm", "tie-broken τ", "depth_width_then_size"): "below",
    ("activation_distance_dedup", "tie-broken τ", "depth"): "level with",
    ("activation_distance_dedup", "within-cell τ-b", "depth_width_then_size"): "level with",
    ("activation_distance_dedup", "within-cell tie-broken τ", "depth_width_then_size"): "level with",
    ("sept_all_linear", "tie-broken τ", "depth_then_width"): "below",
    ("sept_all_linear", "tie-broken τ", "depth_width_then_size"): "below",
    ("sept", "tie-broken τ", "depth_then_width"): "below",
    ("sept", "tie-broken τ", "depth_width_then_size"): "below",
    ("sept_all_linear", "tie-broken τ", "depth"): "above",
    ("sept", "tie-broken τ", "depth"): "level with",
    ("sept_all_linear", "within-cell τ-b", "depth_width_then_size"): "level with",
    ("sept_all_linear", "within-cell tie-broken τ", "depth_width_then_size"): "level with",
}


def _typo(v: float, signed: bool) -> str:
    s = f"{v:+.3f}" if signed else f"{v:.3f}"
    return s.replace("-", "−")


def errata_problems(numbers: str, page: str) -> list[str]:
    problems: list[str] = []
    rows = errata_table(numbers)
    text = _flat(page)
    for (proxy, fig, rule), w in ERRATA_WORDS.items():
        r = rows.get((proxy, fig, rule))
        if r is None:
            problems.append(f"no evidence row for {proxy} {fig} vs {rule}")
        elif r["word"] != w or r["word"] != word(r["lo"], r["hi"]):
            problems.append(f"{proxy} {fig} vs {rule}: the page says {w!r}, the evidence {r['word']!r}")
    for frag, key in ERRATA_CLAIMS:
        r = rows[key]
        f = frag.format(value=_typo(r["value"], False), rule_value=_typo(r["rule_value"], False),
                        diff=_typo(r["diff"], True), lo=_typo(r["lo"], True), hi=_typo(r["hi"], True))
        if f not in text:
            problems.append(f"docs/errata.md lacks {f!r}")
    # every paired interval on the page is one of the evidence table's
    known = {(round(r["diff"], 3), round(r["lo"], 3), round(r["hi"], 3)) for r in rows.values()}
    for d, lo, hi, _ in PAIRED.findall(text):
        if (_num(d), _num(lo), _num(hi)) not in known:
            problems.append(f"docs/errata.md quotes {d} [{lo}, {hi}], which the evidence does not give")
    for bad in ("below depth alone", "depth alone: 0.682", "below depth alone (0.682)"):
        if bad in text:
            problems.append(f"docs/errata.md still compares against depth's τ-b ({bad!r})")
    return problems


def test_errata_verdicts_follow_the_generated_evidence():
    numbers, page = (DOCS / "errata_numbers.md").read_text(), (DOCS / "errata.md").read_text()
    assert errata_problems(numbers, page) == []


@pytest.mark.parametrize("edit", [
    lambda s: s.replace("0.480 is below", "0.480 is level with", 1),
    lambda s: s.replace("−0.214 [−0.251,", "−0.214 [−0.261,", 1),
    lambda s: s.replace("the all-Linear one is above", "the all-Linear one is below", 1),
])
def test_errata_checker_fails_on_an_edited_sentence(edit):
    numbers, page = (DOCS / "errata_numbers.md").read_text(), (DOCS / "errata.md").read_text()
    assert edit(page) != page
    assert errata_problems(numbers, edit(page))


def test_errata_checker_fails_when_the_evidence_says_otherwise():
    numbers, page = (DOCS / "errata_numbers.md").read_text(), (DOCS / "errata.md").read_text()
    edited = numbers.replace("| -0.003 [-0.039, +0.031] | level with |", "| -0.003 [-0.039, +0.031] | below |")
    assert edited != numbers
    assert errata_problems(edited, page)


# -- README and the hand-written proxies page quote the leaderboard's paired figures ---------------
@pytest.mark.parametrize("page", ["README.md", "docs/proxies.md"])
def test_quoted_paired_figures_are_the_leaderboards(page):
    stored, _ = _lb()
    known = {(f"{c['diff']:+.3f}", f"{c['ci_low']:+.3f}", f"{c['ci_high']:+.3f}"): c["word"]
             for c in stored["verdict_comparisons"] if math.isfinite(c["diff"])}
    text = _flat((ROOT / page).read_text())
    quoted = PAIRED.findall(text)
    assert quoted, f"{page} quotes no paired difference"
    for d, lo, hi, w in quoted:
        key = (f"{_num(d):+.3f}", f"{_num(lo):+.3f}", f"{_num(hi):+.3f}")
        assert key in known, f"{page}: {d} [{lo}, {hi}] is no paired difference of docs/leaderboard.json"
        if w:
            assert known[key].startswith(w), f"{page}: {d} [{lo}, {hi}] says {w!r}, the JSON {known[key]!r}"


# -- beyond ----------------------------------------------------------------------------------------
def beyond_problems(stored: dict[str, Any], md: str) -> list[str]:
    """What in beyond's finding on the chosen attempt does not follow from its JSON."""
    comps = stored.get("verdict_comparisons") or []
    if not comps:
        return ["the JSON has no verdict_comparisons"]
    problems: list[str] = []
    held = next(a for a in stored["attempts"] if a["key"] == stored["chosen"])["held"]
    base = {b["key"]: b["held"] for b in stored["baselines"]}
    for c in comps:
        # the paired records are on the rows and resamples of the page's own figures (rounded to 4 places there)
        if c["proxy"] != stored["chosen"] or abs(c["value"] - held[c["metric"]][0]) > 6e-5:
            problems.append(f"{c['proxy']} {c['metric']}: {c['value']} vs the page's {held[c['metric']][0]}")
        rv = base[c["rule"]][c["metric"]][0]
        if math.isfinite(c["rule_value"]) and abs(c["rule_value"] - rv) > 6e-5:
            problems.append(f"{c['rule']} {c['metric']}: {c['rule_value']} vs the page's {rv}")
        if c["word"] != word(c["ci_low"], c["ci_high"]):
            problems.append(f"{c['rule']} {c['metric']}: word {c['word']!r}")
    if {c["rule"] for c in comps} != {"depth_then_width", "depth_width_then_size"}:
        problems.append("not compared against both rules")
    line = _flat(next(x for x in md.splitlines() if x.startswith("* The chosen attempt against")))
    finite = {(f"{c['diff']:+.3f}", f"{c['ci_low']:+.3f}", f"{c['ci_high']:+.3f}"): c["word"]
              for c in comps if math.isfinite(c["diff"])}
    quoted = PAIRED.findall(line)
    if len(quoted) != len(finite):
        problems.append(f"{len(quoted)} paired differences quoted of {len(finite)}")
    for d, lo, hi, w in quoted:
        key = (f"{_num(d):+.3f}", f"{_num(lo):+.3f}", f"{_num(hi):+.3f}")
        if key not in finite:
            problems.append(f"paired {d} [{lo}, {hi}] is in no JSON record")
        elif w != finite[key]:
            problems.append(f"paired {d} [{lo}, {hi}] says {w!r}; its record says {finite[key]!r}")
    if "intervals overlap" in line:
        problems.append("the finding reads overlapping intervals as a verdict")
    return problems


def _beyond() -> tuple[dict[str, Any], str]:
    return json.loads((DOCS / "beyond.json").read_text()), (DOCS / "beyond.md").read_text()


def test_beyond_verdict_follows_its_json():
    stored, md = _beyond()
    assert beyond_problems(stored, md) == []


def test_beyond_checker_fails_on_an_edited_word_or_record():
    stored, md = _beyond()
    assert beyond_problems(stored, md.replace(": above)", ": level with)", 1))
    stored["verdict_comparisons"][0]["value"] += 0.01
    assert beyond_problems(stored, md)
