"""Every defect a hostile test found, reproduced and guarded (one test per numbered item).

The Hub items (5, 6, 16: damaged copies, offline errors, deadlines, foreign manifests) are
in ``test_hub.py``; the Unicode arch strings (12) in ``test_flexibert_space.py``'s fuzzing
as well as here; every public entry point's fuzzing in ``test_fuzz.py``.
"""

from __future__ import annotations

import json
import os
import shutil
import subprocess
import sys
import warnings
from pathlib import Path

import numpy as np
import pytest

from conftest import UPSTREAM
from nasbench_bert import (
    Arch, Benchmark, DataIntegrityError, InvalidArchitectureError, InvalidRecipeError, NasBenchError, NotEvaluatedError,
    Recipe, parse_recipe, recipe_hash,
)
from nasbench_bert.data.release import FILES, build_tables
from nasbench_bert.data.tables import VERSION_DIR, DataDir, write_dataset

PARAMS = "training-free-nas/data/RNN_parameters.csv"


def _library_error(e: BaseException) -> bool:
    return isinstance(e, (NasBenchError, ValueError))


@pytest.fixture(scope="module")
def release_copy(tmp_path_factory) -> Path:
    d = tmp_path_factory.mktemp("release")
    for f in FILES:
        (d / f).parent.mkdir(parents=True, exist_ok=True)
        shutil.copyfile(UPSTREAM / f, d / f)
    return d


def _damaged(release_copy: Path, tmp_path: Path, rel: str, data: bytes) -> Path:
    d = tmp_path / "rel"
    shutil.copytree(release_copy, d)
    (d / rel).write_bytes(data)
    return d


# -- 1: a corrupt release never builds "successfully" ---------------------------------------
@pytest.mark.parametrize("kind", ["empty", "header only", "truncated", "one byte flipped"])
def test_1_corrupt_release_is_refused_and_good_tables_stay(kind, release_copy, tmp_path, data_dir):
    raw = (UPSTREAM / PARAMS).read_bytes()
    data = {"empty": b"", "header only": raw.split(b"\n", 1)[0] + b"\n", "truncated": raw[: len(raw) // 3],
            "one byte flipped": raw[:500] + bytes([raw[500] ^ 0x01]) + raw[501:]}[kind]
    rel = _damaged(release_copy, tmp_path, PARAMS, data)
    out = tmp_path / "data"
    shutil.copytree(data_dir, out)
    before = (out / VERSION_DIR / "manifest.json").read_bytes()
    with pytest.raises(DataIntegrityError, match="RNN_parameters.csv"):
        build_tables(rel, out, progress=False)
    assert (out / VERSION_DIR / "manifest.json").read_bytes() == before  # the good tables were not replaced
    DataDir.open(out).verify_all()


def test_1_modified_release_opt_out_is_recorded_and_still_checked(release_copy, tmp_path):
    raw = (UPSTREAM / PARAMS).read_bytes()
    ok_edit = raw.replace(b"\r\n", b"\n") + b"\n"  # a harmless edit: same rows, different bytes
    rel = _damaged(release_copy, tmp_path, PARAMS, ok_edit if ok_edit != raw else raw + b"\n")
    with pytest.raises(DataIntegrityError, match="allow-modified-release"):
        build_tables(rel, tmp_path / "a", progress=False)
    d = DataDir.open(build_tables(rel, tmp_path / "a", progress=False, allow_modified=True))
    assert PARAMS in d.manifest["modified_release"]
    # the opt-out does not switch off the content checks: an empty file still fails them
    rel2 = _damaged(release_copy, tmp_path / "x", PARAMS, raw.split(b"\n", 1)[0] + b"\n")
    with pytest.raises(DataIntegrityError, match="num_params"):
        build_tables(rel2, tmp_path / "b", progress=False, allow_modified=True)


# -- 2: malformed manifests and swapped tables ----------------------------------------------
def test_2_malformed_manifests_raise_data_integrity_errors(data_dir, tmp_path):
    good = json.loads((data_dir / VERSION_DIR / "manifest.json").read_text())
    t0 = dict(good["tables"]["flexibert"])
    variants = [[], None, dict(good, tables=None), dict(good, tables={}), "text", 3]
    for key in ("file", "bytes", "sha256", "rows"):
        variants.append(dict(good, tables=dict(good["tables"], flexibert={k: v for k, v in t0.items() if k != key})))
    variants += [dict(good, tables=dict(good["tables"], flexibert=dict(t0, file=123))),
                 dict(good, tables=dict(good["tables"], flexibert=dict(t0, file="../../etc/passwd.parquet"))),
                 dict(good, tables=dict(good["tables"], flexibert=dict(t0, file="sub/flexibert.parquet")))]
    for i, m in enumerate(variants):
        d = tmp_path / f"d{i}"
        shutil.copytree(data_dir, d)
        (d / VERSION_DIR / "manifest.json").write_text(json.dumps(m))
        with pytest.raises(DataIntegrityError):
            DataDir.open(d)


def test_2_a_swapped_table_never_loads_as_another(data_dir, tmp_path):
    d = tmp_path / "swap"
    shutil.copytree(data_dir, d)
    m = json.loads((d / VERSION_DIR / "manifest.json").read_text())
    m["tables"]["nlp_ptb"] = dict(m["tables"]["nlp_wikitext2"])  # the manifest agrees with the swapped file
    (d / VERSION_DIR / "manifest.json").write_text(json.dumps(m))
    with pytest.raises(DataIntegrityError, match="swapped"):
        DataDir.open(d).table("nlp_ptb")


def test_2_tables_of_another_version_are_named_stale_and_a_stale_user_cache_is_rebuilt(data_dir, tmp_path, monkeypatch):
    from nasbench_bert import SourceUnavailableWarning, StaleDataError
    from nasbench_bert.data.resolve import resolve

    stale = tmp_path / "cache"
    shutil.copytree(data_dir, stale)
    mpath = stale / VERSION_DIR / "manifest.json"
    m = json.loads(mpath.read_text())
    m["tables"]["flexibert_curves"]["columns"].remove("status")  # as an older nasbench-bert wrote it
    mpath.write_text(json.dumps(m))
    with pytest.raises(StaleDataError, match="another version of nasbench-bert.*flexibert_curves.*status"):
        DataDir.open(stale)  # an explicit folder: said, never rebuilt behind the user's back
    monkeypatch.setenv("NASBENCH_BERT_CACHE", str(stale))
    monkeypatch.delenv("NASBENCH_BERT_DATA", raising=False)
    with pytest.warns(SourceUnavailableWarning, match="another nasbench-bert version"):
        d = resolve(progress=False)  # the user cache is the package's own build output: rebuilt
    assert d.path == stale / VERSION_DIR and "status" in d.table("flexibert_curves").column_names
    with pytest.raises(StaleDataError):
        mpath.write_text(json.dumps(m))
        resolve(hub=False, build=False)


# -- 3: corrupt release files raise DataIntegrityError naming the file -----------------------
@pytest.mark.parametrize("rel, data, name", [
    ("training-free-nas/data/BERT_benchmark.json", b'{"not": "a list"', "BERT_benchmark.json"),
    ("training-free-nas/data/BERT_benchmark.json", b"\xff\xfe\x00garbage", "BERT_benchmark.json"),
    ("training-free-nas/data/BERT_benchmark.json", b"[]", "BERT_benchmark.json"),
    ("nas-bench-nlp/train_logs_wikitext-2/logs.zip", b"PK\x03\x04 not really a zip", "logs.zip"),
    ("training-free-nas/data/RNN_results.csv", None, "RNN_results.csv"),
    ("training-free-nas/data/BERT_benchmark_train_ablation.json", b'[{"id": 0}]', "train_ablation"),
])
def test_3_unparseable_release_files_name_themselves(rel, data, name, release_copy, tmp_path):
    if data is None:  # a CSV with a non-number where a float belongs
        lines = (UPSTREAM / rel).read_text(encoding="utf-8-sig").splitlines()
        cells = lines[1].split(",")
        cells[1] = "not-a-float"
        data = "\n".join([lines[0], ",".join(cells), *lines[2:]]).encode()
    d = _damaged(release_copy, tmp_path, rel, data)
    with pytest.raises(DataIntegrityError, match=name):
        build_tables(d, tmp_path / "out", progress=False, allow_modified=True)


# -- 4: the repair advice is true --------------------------------------------------------------
def test_4_the_advice_names_a_command_that_exists(data_dir, tmp_path):
    d = tmp_path / "d"
    shutil.copytree(data_dir, d)
    (d / VERSION_DIR / "flexibert.parquet").write_bytes(b"x")
    with pytest.raises(DataIntegrityError, match=r"build-data --force --out") as e:
        DataDir.open(d).table("flexibert")
    cmd = str(e.value).split("`")[1]  # e.g. nasbench-bert build-data --force --out <d>
    args = cmd.split()[1:] + ["--release", str(UPSTREAM)]
    r = subprocess.run([sys.executable, "-m", "nasbench_bert.cli", *args], capture_output=True, text=True)
    assert r.returncode == 0, r.stdout + r.stderr
    DataDir.open(d).verify_all()
    r = subprocess.run([sys.executable, "-m", "nasbench_bert.cli", "build-data", "--out", str(d)], capture_output=True, text=True)
    assert r.returncode == 0 and "already holds verified tables" in r.stdout


# -- 7: regenerated entries are validated; the load never stops half-way ---------------------
def _entry(a: Arch, glue: float = 70.0) -> dict:
    return {"id": None, "completed": True, "time_to_train": 10.0, "scores": {"rte": glue, "glue": glue},
            "hparams": {"learning_rate": 5e-4, "train_batch_size": 8, "num_train_steps": 10,
                        "model_hparam_overrides": a.to_release()},
            "num_params": 1, "semantics": "as_trained", "source": "regenerated", "arch": str(a)}


def test_7_bad_entries_are_skipped_or_refused(bench, tmp_path):
    from nasbench_bert import FLEXIBERT_SPACE

    res = tmp_path / "res"
    (res / "entries").mkdir(parents=True)
    good = FLEXIBERT_SPACE.sample(2, seed=9)
    for a in good:
        (res / "entries" / f"{a.index:08d}.json").write_text(json.dumps(_entry(a)))
    other = FLEXIBERT_SPACE.sample(1, seed=10)[0]
    bad = {
        "empty.json": "", "truncated.json": json.dumps(_entry(other))[:40], "binary.json": "\x00\xff",
        "list.json": "[]", "missing.json": json.dumps({"id": 1}),
        "string_score.json": json.dumps(dict(_entry(other), scores={"glue": "high"})),
        "bad_time.json": json.dumps(dict(_entry(other), time_to_train="abc")),
        "negative_time.json": json.dumps(dict(_entry(other), time_to_train=-5)),
        f"{(other.index + 1):08d}.json": json.dumps(_entry(other)),  # the file name disagrees with the arch
    }
    for name, text in bad.items():
        (res / "entries" / name).write_text(text)
    (res / "entries" / "dir.json").mkdir()
    b = Benchmark(bench.data)
    with warnings.catch_warnings(record=True) as w:
        warnings.simplefilter("always")
        assert b.attach_results(res) == 2
    skipped = [str(x.message) for x in w if "skipped" in str(x.message)]
    assert len(skipped) == len(bad) + 1 and all(any(n in m for m in skipped) for n in bad)
    assert b.query(good[0]).source == "regenerated"
    with pytest.raises(DataIntegrityError, match="nothing attached"):
        Benchmark(bench.data).attach_results(res, strict=True)
    for k in (500, -1):  # an id is an id, never an arch key
        with pytest.raises(NotEvaluatedError, match="0 <= id < 500"):
            b.query(k)


def test_7_a_regenerated_bundled_arch_warns_and_query_all_returns_both(bench, tmp_path):
    res = tmp_path / "res"
    (res / "entries").mkdir(parents=True)
    a = bench.query(0).arch
    (res / "entries" / f"{a.index:08d}.json").write_text(json.dumps(_entry(a, 50.0)))
    b = Benchmark(bench.data)
    with pytest.warns(UserWarning, match="query\\(\\) keeps answering with the bundled result"):
        b.attach_results(res)
    assert b.query(a).source == "bundled" and [r.source for r in b.query_all(a)][-1] == "regenerated"


# -- 8: the proxy cache trusts nothing -------------------------------------------------------
def test_8_cache_parts_are_checked_against_their_key(bench, tmp_path):
    pytest.importorskip("torch")
    from nasbench_bert import proxies

    cache = tmp_path / "cache"
    small = {"batch_size": 2, "seq_len": 8}
    df = proxies.compute([0, 1], ["num_params"], bench=bench, batch=small, cache=cache)
    parts = sorted(cache.glob("*.parquet"))
    assert len(parts) == 2
    # a part copied under another arch's name is not returned for that arch
    shutil.copyfile(parts[0], parts[1])
    again = proxies.compute([0, 1], ["num_params"], bench=bench, batch=small, cache=cache)
    assert again.num_params.tolist() == df.num_params.tolist() and again.cached.sum() == 1
    # a part whose proxy_versions is not an object is recomputed, not fatal
    import pyarrow as pa
    import pyarrow.parquet as pq

    row = pq.read_table(parts[0]).to_pylist()[0]
    pq.write_table(pa.Table.from_pylist([dict(row, proxy_versions="[1, 2]")]), parts[0])
    assert not proxies.compute([0], ["num_params"], bench=bench, batch=small, cache=cache).cached.any()
    # a part path that is a folder, or a cache path that is a file: a clear error
    shutil.rmtree(cache)
    from nasbench_bert.sweep import PartCache

    ident = [str(bench.query(0).arch), "as_trained", 0, proxies.BatchSpec(**small).key, "projection", "float32", "cpu"]
    name = PartCache(Path("."), "parquet", "arch").path(ident).name  # a ProxyTask's identity
    (cache / name).mkdir(parents=True)
    with pytest.raises(ValueError, match="is a folder"):
        proxies.compute([0], ["num_params"], bench=bench, batch=small, cache=cache)
    f = tmp_path / "file"
    f.write_text("x")
    with pytest.raises(ValueError, match="is a file"):
        proxies.compute([0], ["num_params"], bench=bench, batch=small, cache=f)


# -- 9: builder claims -------------------------------------------------------------------------
def test_9_stale_lock_takeover_is_atomic_and_empty_locks_expire(tmp_path):
    from nasbench_bert.builders.results import EMPTY_LOCK_SECONDS, ArchClaimed, ResultsTable

    t = ResultsTable(tmp_path)
    a = Arch.coerce("128/SA-SDP-h2-512x1/SA-SDP-h2-512x1")
    lock = t.entries_dir / f".{t.key(a)}.lock"
    import socket

    dead = f"{socket.gethostname()}:999999999:deadbeef"
    lock.write_text(dead)  # a builder that died
    stale_inode = lock.stat().st_ino
    # forced interleaving: B judged the lock stale, then A took it over and claimed first
    with t.claim(a):
        fresh = lock.read_text()
        assert ResultsTable._take_over(lock, stale_inode, dead) is False  # B's rename caught A's fresh lock: put back
        assert lock.read_text() == fresh
        with pytest.raises(ArchClaimed):
            with ResultsTable(tmp_path).claim(a):
                pass
    assert not lock.exists()
    # an empty lock (killed between create and write) is stale once old enough
    lock.write_text("")
    with pytest.raises(ArchClaimed):
        with t.claim(a):
            pass
    old = lock.stat().st_mtime - EMPTY_LOCK_SECONDS - 1
    os.utime(lock, (old, old))
    with t.claim(a):
        assert lock.read_text() != ""
    # an entry that cannot be serialised raises before any file is written
    with pytest.raises(ValueError, match="cannot be written"):
        t.write(dict(_entry(a), scores={"glue": float("nan"), "rte": 1.0}))
    assert not [p for p in t.entries_dir.iterdir() if p.name.endswith(".tmp") or "tmp-" in p.name]


# -- 10: NAS-Bench-NLP recipes -----------------------------------------------------------------
def test_10_recipes_are_bounded_and_always_validated():
    from nasbench_bert.spaces.nlp import MAX_NODES

    chain = {f"n{i}": {"op": "activation_tanh", "input": [f"n{i - 1}" if i else "x"]} for i in range(MAX_NODES - 1)}
    chain["h_new_0"] = {"op": "linear", "input": [f"n{MAX_NODES - 2}"]}
    assert len(recipe_hash(chain)) == 32  # linear-ish: a 1,000-node chain hashes (it took 11.6 s before)
    too_big = dict(chain, extra={"op": "activation_tanh", "input": ["x"]})
    with pytest.raises(InvalidRecipeError, match="at most 1000"):
        parse_recipe(too_big)
    for bad in ("[" * 100000, {"h_new_\u0660": {"op": "linear", "input": ["x"]}},
                {"h_new_0": {"op": "linear", "input": ["x"]}, "h_new_\u0660": {"op": "linear", "input": ["x"]}}):
        with pytest.raises(InvalidRecipeError):
            parse_recipe(bad)
    with pytest.raises(InvalidRecipeError, match="op"):
        Recipe((("h_new_0", "nope", ("x",)),))
    with pytest.raises(InvalidRecipeError, match="cycle"):
        Recipe((("a", "activation_tanh", ("h_new_0",)), ("h_new_0", "linear", ("a",))))
    assert Recipe((("h_new_0", "linear", ("x", "h_prev_0")),)).num_states == 1


# -- 11: read-only destinations ------------------------------------------------------------------
def test_11_unwritable_destinations_give_clear_errors(tmp_path, data_dir):
    blocker = tmp_path / "a_file"
    blocker.write_text("x")  # a folder cannot be made under a file, even as root
    env = {**os.environ, "NASBENCH_BERT_DATA": str(data_dir)}
    for args in (["build-data", "--release", str(UPSTREAM), "--out", str(blocker / "data")],
                 ["export", "flexibert", "--out", str(blocker / "x.csv")]):
        r = subprocess.run([sys.executable, "-m", "nasbench_bert.cli", *args], capture_output=True, text=True, env=env)
        said = "not writable" in r.stderr or f"'{blocker}' is a file; allowed: a folder" in r.stderr
        assert r.returncode == 2 and said and "Traceback" not in r.stderr, (args, r.stdout, r.stderr)


# -- 12: arch strings are ASCII ---------------------------------------------------------------------
@pytest.mark.parametrize("s", ["256/SA-SDP-h\u00b2-512x1/SA-SDP-h2-512x1", "256/SA-SDP-h\u2460-512x1/SA-SDP-h2-512x1",
                               "\uff12\uff15\uff16/SA-SDP-h2-512x1/SA-SDP-h2-512x1", "256/\u017fa-sdp-h2-512x1/SA-SDP-h2-512x1"])
def test_12_unicode_digits_and_letters_are_refused(s):
    with pytest.raises(InvalidArchitectureError, match="ASCII"):
        Arch.from_string(s)


# -- 13: every argument is validated -----------------------------------------------------------------
def test_13_unvalidated_arguments_get_the_library_error(bench):
    calls = [
        lambda: bench.filter(hidden_size=128.0), lambda: bench.filter(semantics=[]), lambda: bench.filter(min_params=""),
        lambda: bench.filter(colour="red"), lambda: bench.curve_point(0, []), lambda: bench.set_budget(10**400),
        lambda: bench.set_budget(True), lambda: bench.nearest(bench.archs[0], k={}), lambda: bench.nearest(bench.archs[0], k=-3),
        lambda: bench.sample(3, seed=-1), lambda: bench.sample(3, seed="x"), lambda: bench.query_many(None),
        lambda: Benchmark.load(source=123), lambda: Benchmark.load(source=None), lambda: Benchmark.load(path=123),
        lambda: Benchmark.load(results=123),
    ]
    for i, call in enumerate(calls):
        with pytest.raises(Exception) as e:
            call()
        assert _library_error(e.value), (i, type(e.value), e.value)
    bench.set_budget(np.int64(10))  # numpy integers are numbers
    bench.set_budget(None)


# -- 14/17: the command line ---------------------------------------------------------------------------
def _cli(*args: str, env: dict | None = None) -> subprocess.CompletedProcess:
    return subprocess.run([sys.executable, "-m", "nasbench_bert.cli", *args], capture_output=True, text=True,
                          env={**os.environ, **(env or {})})


def test_14_17_cli_rough_edges(data_dir, tmp_path):
    env = {"NASBENCH_BERT_DATA": str(data_dir), "COLUMNS": "60"}
    r = _cli("proxies", "compute", "--ids", "0-99999999999", "--out", str(tmp_path / "p.csv"), env=env)
    assert r.returncode == 2 and "not within 0-499" in r.stderr
    r = _cli("query", "/nonexistent.json", env=env)
    assert r.returncode == 2 and "does not exist" in r.stderr
    r = _cli("query", "-1", env=env)
    assert r.returncode == 2 and "0 <= id < 500" in r.stderr
    r = _cli("build-data", "--release", "/nonexistent", "--out", str(tmp_path / "d"), env=env)
    assert r.returncode == 2 and "does not exist" in r.stderr and r.stderr.count("training-free-nas") <= 1
    two = tmp_path / "two.csv"
    two.write_text("id,p\n0,1.0\n1,2.0\n")
    r = _cli("proxies", "score", "--values", str(two), "--bootstrap", "0", env=env)
    assert r.returncode == 0 and "3 needed" in r.stdout
    r = _cli("sample", "-n", "3", env=env)  # a 60-column terminal: arch strings wrap, never end in an ellipsis
    assert r.returncode == 0 and "\u2026" not in r.stdout and "..." not in r.stdout


def test_17_every_option_has_help():
    import argparse

    from nasbench_bert import cli

    parser_holder = {}
    orig = argparse.ArgumentParser.parse_args

    def grab(self, args=None, namespace=None):  # noqa: ANN001
        parser_holder["p"] = self
        raise SystemExit(0)

    argparse.ArgumentParser.parse_args = grab  # type: ignore[method-assign]
    try:
        with pytest.raises(SystemExit):
            cli.main(["info"])
    finally:
        argparse.ArgumentParser.parse_args = orig  # type: ignore[method-assign]
    missing = []

    def walk(p: argparse.ArgumentParser, path: str) -> None:
        for act in p._actions:
            if isinstance(act, argparse._SubParsersAction):
                for name, sub in act.choices.items():
                    walk(sub, f"{path} {name}")
            elif not isinstance(act, argparse._HelpAction) and not act.help:
                missing.append(f"{path} {'/'.join(act.option_strings) or act.dest}")

    walk(parser_holder["p"], "nasbench-bert")
    assert not missing, missing


# -- 15: a kill between the two renames of a data swap loses nothing -----------------------------------
def test_15_kill_between_renames_is_recovered(data_dir, tmp_path, monkeypatch):
    import nasbench_bert.atomic as atomic

    d = tmp_path / "d"
    shutil.copytree(data_dir, d)
    tables = {n: DataDir.open(d).table(n) for n in DataDir.open(d).manifest["tables"]}
    real = os.replace
    calls = {"n": 0}

    def dying(src, dst):  # noqa: ANN001
        calls["n"] += 1
        if calls["n"] == 2:  # the staging -> v1 rename: the process "dies" after the first rename
            raise KeyboardInterrupt("killed")
        return real(src, dst)

    monkeypatch.setattr(atomic.os, "replace", dying)
    with pytest.raises(KeyboardInterrupt):
        write_dataset(tables, d, {}, extra=None)
    monkeypatch.setattr(atomic.os, "replace", real)
    assert not (d / VERSION_DIR).exists() and list(d.glob(f".{VERSION_DIR}.old-*"))
    DataDir.open(d).verify_all()  # the good copy is put back on the next read
    assert (d / VERSION_DIR).exists() and not list(d.glob(f".{VERSION_DIR}.old-*"))


def test_a_part_holding_more_proxies_returns_only_those_asked_for(tmp_path, bench):
    """A cache filled by a wider sweep answers a narrower one with the narrower columns:
    values of proxies nobody asked for never leak into the frame (a study reading a shared
    cache would otherwise score half-filled columns)."""
    from nasbench_bert import proxies

    small = {"batch_size": 2, "seq_len": 8}
    wide = proxies.compute([0], ["num_params", "flops"], bench=bench, batch=small, cache=tmp_path)
    narrow = proxies.compute([0, 1], ["num_params"], bench=bench, batch=small, cache=tmp_path)
    assert narrow.cached.tolist() == [True, False] and "flops" in wide
    assert "flops" not in narrow and not any(c.startswith("flops__") for c in narrow.columns)
    assert narrow.num_params.iloc[0] == wide.num_params.iloc[0]
