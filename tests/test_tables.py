"""Tables on disk: deterministic builds, integrity errors, atomic writes, URL sources."""

from __future__ import annotations

import functools
import http.server
import json
import os
import shutil
import signal
import subprocess
import sys
import threading

import pytest

from nasbench_bert.data.release import build_tables
from nasbench_bert import Benchmark, DataIntegrityError, DataNotFoundError
from nasbench_bert.data.resolve import resolve
from nasbench_bert.data.tables import VERSION_DIR, DataDir
from conftest import ROOT, UPSTREAM


def test_build_is_deterministic(data_dir, tmp_path):
    build_tables(UPSTREAM, tmp_path, progress=False)
    a = json.loads((data_dir / VERSION_DIR / "manifest.json").read_text())
    b = json.loads((tmp_path / VERSION_DIR / "manifest.json").read_text())
    assert a == b
    for name, meta in a["tables"].items():
        assert (data_dir / VERSION_DIR / meta["file"]).read_bytes() == (tmp_path / VERSION_DIR / meta["file"]).read_bytes()
    assert set(a["sources"]) >= {"training-free-nas/data/BERT_benchmark.json", "nas-bench-nlp/train_logs_wikitext-2/logs.zip"}


@pytest.fixture
def copy_of_data(data_dir, tmp_path):
    d = tmp_path / "copy"
    shutil.copytree(data_dir, d)
    return d


def test_corrupted_table_is_named(copy_of_data):
    p = copy_of_data / VERSION_DIR / "flexibert.parquet"
    b = bytearray(p.read_bytes())
    b[len(b) // 2] ^= 0xFF
    p.write_bytes(bytes(b))
    with pytest.raises(DataIntegrityError, match=r"flexibert.*sha256.*build-data --force"):
        Benchmark.load(str(copy_of_data))


def test_truncated_table_is_named(copy_of_data):
    p = copy_of_data / VERSION_DIR / "nlp_ptb.parquet"
    p.write_bytes(p.read_bytes()[:1000])
    bench = Benchmark.load(str(copy_of_data))  # lazy: the NLP table is read on first use
    with pytest.raises(DataIntegrityError, match=r"nlp_ptb.*truncated"):
        bench.nlp.ptb


def test_manifest_mismatch_and_missing_file(copy_of_data):
    m = copy_of_data / VERSION_DIR / "manifest.json"
    man = json.loads(m.read_text())
    man["tables"]["flexibert"]["sha256"] = "0" * 64
    m.write_text(json.dumps(man))
    with pytest.raises(DataIntegrityError, match="manifest says 0000"):
        Benchmark.load(str(copy_of_data))
    (copy_of_data / VERSION_DIR / "flexibert.parquet").unlink()
    with pytest.raises(DataIntegrityError, match="missing"):
        Benchmark.load(str(copy_of_data))
    m.write_text("{broken")
    with pytest.raises(DataIntegrityError, match="not valid JSON"):
        Benchmark.load(str(copy_of_data))


def test_no_data_gives_a_clear_error(tmp_path, monkeypatch):
    with pytest.raises(DataNotFoundError, match="build-data"):
        DataDir.open(tmp_path)
    monkeypatch.setenv("NASBENCH_BERT_DATA", str(tmp_path))
    with pytest.raises(DataNotFoundError, match="NASBENCH_BERT_DATA"):
        resolve()


def test_env_var_and_release_resolution(tmp_path, monkeypatch, data_dir):
    monkeypatch.setenv("NASBENCH_BERT_DATA", str(data_dir))
    assert resolve().path == data_dir / VERSION_DIR


def test_killed_build_leaves_nothing_half_written(tmp_path):
    out = tmp_path / "data"
    env = {**os.environ, "NASBENCH_BERT_TEST_SLOW_BUILD": "30", "PYTHONPATH": str(ROOT)}
    p = subprocess.Popen(
        [sys.executable, "-m", "nasbench_bert.data.release", "--release", str(UPSTREAM), "--out", str(out)],
        env=env, stdout=subprocess.PIPE, text=True, cwd=ROOT,
    )
    try:
        line = p.stdout.readline()  # the first table is written, the build sleeps
        assert line.startswith("wrote"), line
        p.send_signal(signal.SIGKILL)
        p.wait(10)
    finally:
        p.kill()
    assert any(x.name.startswith(f".{VERSION_DIR}.staging") for x in out.iterdir())  # staged, not published
    assert not (out / VERSION_DIR).exists()
    with pytest.raises(DataNotFoundError):
        DataDir.open(out)
    build_tables(UPSTREAM, out, progress=False)  # the next build cleans up and publishes
    assert [x.name for x in out.iterdir()] == [VERSION_DIR]
    assert len(Benchmark.load(str(out))) == 500


def test_build_from_url(tmp_path):
    handler = functools.partial(http.server.SimpleHTTPRequestHandler, directory=str(UPSTREAM))
    handler.log_message = lambda *a: None
    srv = http.server.ThreadingHTTPServer(("127.0.0.1", 0), handler)
    threading.Thread(target=srv.serve_forever, daemon=True).start()
    try:
        url = f"http://127.0.0.1:{srv.server_address[1]}/"
        build_tables(url, tmp_path / "d", progress=False)
        with pytest.raises(FileNotFoundError, match="cannot download"):
            build_tables(url + "nothing-here/", tmp_path / "e", progress=False)
    finally:
        srv.shutdown()
    assert not (tmp_path / "e" / VERSION_DIR).exists()
    assert len(Benchmark.load(str(tmp_path / "d"))) == 500


def test_cli_smoke(data_dir, tmp_path):
    from nasbench_bert.cli import main

    assert main(["--data", str(data_dir), "-q", "info"]) == 0
    assert main(["--data", str(data_dir), "query", "17", "--json"]) == 0
    assert main(["--data", str(data_dir), "query", "128/SA-SDX-h2-512x1/SA-SDP-h2-512x1"]) == 2
    out = tmp_path / "x.parquet"
    assert main(["--data", str(data_dir), "export", "flexibert_proxies", "--out", str(out)]) == 0
    import pandas as pd

    assert len(pd.read_parquet(out)) == 500


def test_the_lookup_api_imports_no_heavy_dependency():
    """`import nasbench_bert` stays close to `import pandas, pyarrow` (bench/bench_import.py
    measures the ratio): nothing heavier is loaded until a feature needs it."""
    import subprocess
    import sys

    code = ("import sys, nasbench_bert; from nasbench_bert import Benchmark, Arch, FLEXIBERT_SPACE; "
            "print(sorted(m for m in ('torch', 'networkx', 'scipy', 'sklearn', 'huggingface_hub', 'jsonschema', "
            "'matplotlib', 'rich') if m in sys.modules))")
    out = subprocess.run([sys.executable, "-c", code], capture_output=True, text=True, check=True).stdout.strip()
    assert out == "[]", f"imported at `import nasbench_bert`: {out}"


def test_integrity_errors_of_a_flat_folder_name_that_folder(data_dir, tmp_path):
    """A data folder whose manifest lies in it (no v2/ inside): the commands an integrity
    error suggests name that folder, not its parent (issue 37, item 11), and work."""
    from nasbench_bert.data.artifacts import add_artifact, read_artifact

    flat = tmp_path / "flat"
    shutil.copytree(data_dir / VERSION_DIR, flat)
    add_artifact(DataDir.open(flat), "objectives", "objectives-v1.json", b"{}", format="nasbench-bert-objectives",
                 format_version=1)
    (flat / "objectives-v1.json").write_bytes(b"{ }")  # damaged after it was listed
    with pytest.raises(DataIntegrityError) as e:
        read_artifact(DataDir.open(flat), "objectives")
    assert f"`nasbench-bert build-surrogate --data {flat}`" in str(e.value), str(e.value)
    r = subprocess.run([sys.executable, "-m", "nasbench_bert.cli", "build-surrogate", "--data", str(flat)],
                       capture_output=True, text=True, cwd=ROOT, timeout=600)
    assert r.returncode == 0, r.stderr
    assert json.loads(read_artifact(DataDir.open(flat), "objectives"))  # the suggested command repaired it
    (flat / "nlp_ptb.parquet").write_bytes(b"damaged")
    with pytest.raises(DataIntegrityError) as e:
        DataDir.open(flat).table("nlp_ptb")
    assert f"`nasbench-bert build-data --force --out {flat}`" in str(e.value), str(e.value)
