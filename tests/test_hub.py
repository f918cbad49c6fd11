"""Publish to and download from a real HTTP server that speaks the Hub protocol.

The client is the real ``huggingface_hub``; only the server is ours (tests/hubserver.py).
"""

from __future__ import annotations

import json
import os
import subprocess
import sys
import warnings
from pathlib import Path

import pandas as pd
import pytest

from nasbench_bert import Benchmark, DataIntegrityError, DataNotFoundError
from nasbench_bert import SourceUnavailableWarning
from nasbench_bert.data.hub import hub_cache_dir, materialised_dir
from nasbench_bert.data.tables import OPTIONAL_TABLES, TABLES, VERSION_DIR, DataDir

from conftest import ROOT, UPSTREAM
from hubserver import HubServer

REPO = "nasbench-bert/test-tables"


@pytest.fixture()
def cache(tmp_path, monkeypatch) -> Path:
    c = tmp_path / "cache"
    monkeypatch.setenv("NASBENCH_BERT_CACHE", str(c))
    monkeypatch.delenv("HF_HUB_OFFLINE", raising=False)
    return c


@pytest.fixture(scope="module")
def published_dir(data_dir, tmp_path_factory) -> Path:
    """The tables with what `build-data` adds (objectives-v1.json, the pinned surrogate):
    what `publish` uploads; it refuses a folder without them."""
    import shutil

    from nasbench_bert.benchmark.flexibert import complete_build

    out = tmp_path_factory.mktemp("published") / "data"
    shutil.copytree(data_dir, out)
    complete_build(DataDir.open(out))
    d = DataDir.open(out)
    if not d.has_table("proxy_values"):  # a checkout without the pinned table: a small one travels instead
        _add_small_proxy_values(d)
    return out


def _add_small_proxy_values(d: DataDir) -> None:
    """A two-row proxy-values table with this package's provenance (values made up: the
    Hub tests are about transport, the table's own tests about its numbers)."""
    from nasbench_bert import __version__
    from nasbench_bert.data import proxy_values as pv

    frame = pd.DataFrame({"benchmark": ["flexibert", "flexibert"], "id": [0, 1], "recipe_hash": [None, None],
                          "semantics": ["as_trained", "as_trained"], "nsc": [4303.3, 3548.1]})
    prov = {"format_version": pv.FORMAT_VERSION, "package_version": __version__, "dtype": "float64", "seed": 0,
            "benchmarks": {"flexibert": {"semantics": ["as_trained"], "batch": "random,B=8,T=128,seed=0",
                                         "proxies": {"nsc": {"version": 1, "group": ["published"]}}, "combined": {}}}}
    pv.add_to_data(d, pv.to_arrow(frame, ["nsc"], {"flexibert": ["nsc"]}), prov)


@pytest.fixture()
def hub(published_dir):
    from nasbench_bert.builders.publish import publish

    with HubServer() as server:
        server.published = publish(REPO, data=published_dir, endpoint=server.url)  # type: ignore[attr-defined]
        yield server


def _resolves(server: HubServer) -> list[tuple[str, str, dict]]:
    return [e for e in server.log if "/resolve/" in e[1]]


def test_publish_is_one_commit_with_card_manifest_and_tables(hub, published_dir):
    repo = hub.repos[REPO]
    # creation commit (.gitattributes) + exactly one publish commit
    assert len(repo.commits) == 2
    files = repo.commits[hub.published]
    d = DataDir.open(published_dir)
    assert set(TABLES) - set(d.names) <= OPTIONAL_TABLES  # every required table is published
    artifacts = {f"{VERSION_DIR}/{e['file']}": e for e in d.manifest["artifacts"].values()}
    assert {e["file"] for e in artifacts.values()} == {"objectives-v1.json", "surrogate-ensemble_cal-v1.npz"}
    expected = {"README.md", ".gitattributes", f"{VERSION_DIR}/manifest.json"} | {f"{VERSION_DIR}/{n}.parquet" for n in d.names}
    assert set(files) == expected | set(artifacts)  # the tables and every artifact (issue 37, item 6)
    for n in d.names:
        assert files[f"{VERSION_DIR}/{n}.parquet"] == d.table_path(n).read_bytes()
    for path, e in artifacts.items():
        assert files[path] == (d.path / e["file"]).read_bytes()
    card = files["README.md"].decode()
    import yaml

    meta = yaml.safe_load(card.split("---")[1])
    assert set(meta["license"]) == {"cc-by-4.0", "apache-2.0"}
    assert {c["config_name"]: c["data_files"][0]["path"] for c in meta["configs"]} == {n: f"{VERSION_DIR}/{n}.parquet" for n in d.names}
    assert "serianni2023training" in card and "klyuchnikov2022nasbenchnlp" in card
    assert "## What is known about the data" in card and "Operation types" in card
    # what changed since schema 1, from the manifest: every renamed column, old and new name
    assert f"## What changed in schema {d.manifest['schema_version']}" in card
    assert all(f"| `{t}` | `{old}` | `{new}` |" in card for t, m in d.manifest["renamed_columns"].items() for old, new in m.items())


def test_download_load_query_equals_local(hub, cache, bench):
    b = Benchmark.load(source="hub", repo_id=REPO, revision="main", endpoint=hub.url)
    assert b.data.path == materialised_dir(REPO, hub.published) / VERSION_DIR
    pd.testing.assert_frame_equal(b.to_pandas(), bench.to_pandas())
    assert b.query(17).to_dict() == bench.query(17).to_dict()
    assert b.nlp.query(int(bench.nlp.ptb.recipe_id.iloc[5]), "ptb").to_dict() == bench.nlp.query(int(bench.nlp.ptb.recipe_id.iloc[5]), "ptb").to_dict()
    # a second load of the pinned commit makes no request at all
    n = len(hub.log)
    b2 = Benchmark.load(source="hub", repo_id=REPO, revision=hub.published, endpoint=hub.url)
    assert len(hub.log) == n and b2.data.path == b.data.path


def test_proxy_values_travel_verified(hub, cache, published_dir):
    """The proxy-values table goes up with `publish` and comes down verified: the same
    values and provenance as the local folder; a flipped bit in it is refused."""
    local = Benchmark.load(str(published_dir)).proxy_values("as_trained")
    b = Benchmark.load(source="hub", repo_id=REPO, revision="main", endpoint=hub.url)
    remote = b.proxy_values("as_trained")
    pd.testing.assert_frame_equal(remote, local)
    assert remote.attrs["package_version"] == local.attrs["package_version"]
    assert b.data.manifest["proxy_values"] == DataDir.open(published_dir).manifest["proxy_values"]
    raw = bytearray((DataDir.open(published_dir).path / "proxy_values.parquet").read_bytes())
    raw[len(raw) // 2] ^= 0x01
    bad = hub.commit(REPO, "main", {f"{VERSION_DIR}/proxy_values.parquet": bytes(raw)})
    with pytest.raises(DataIntegrityError, match=r"proxy_values.*sha256"):
        Benchmark.load(source="hub", repo_id=REPO, revision="main", endpoint=hub.url)
    assert not materialised_dir(REPO, bad).exists()


def test_revision_pinning_and_branch(hub, cache, published_dir):
    from nasbench_bert.builders.publish import publish

    first = hub.published
    second = publish(REPO, data=published_dir, endpoint=hub.url, revision="dev", commit_message="again")
    assert hub.repos[REPO].branches["dev"] == second
    b_dev = Benchmark.load(source="hub", repo_id=REPO, revision="dev", endpoint=hub.url)
    b_main = Benchmark.load(source="hub", repo_id=REPO, revision=first, endpoint=hub.url)
    assert b_dev.data.path != b_main.data.path
    assert len(b_dev) == len(b_main) == 500


def test_offline_after_first_download(hub, cache):
    Benchmark.load(source="hub", repo_id=REPO, revision="main", endpoint=hub.url)
    code = (
        "from nasbench_bert import Benchmark;"
        f"b = Benchmark.load(source='hub', repo_id='{REPO}', revision='main');"
        "print(len(b), b.query(3).glue)"
    )
    env = {**os.environ, "HF_HUB_OFFLINE": "1", "HF_ENDPOINT": "http://127.0.0.1:9"}
    n = len(hub.log)
    out = subprocess.run([sys.executable, "-c", code], env=env, capture_output=True, text=True, cwd=ROOT, timeout=120)
    assert out.returncode == 0, out.stderr
    assert out.stdout.split()[0] == "500"
    assert len(hub.log) == n  # nothing reached the server


def test_hf_endpoint_env_is_honoured(hub, cache):
    code = f"from nasbench_bert import Benchmark; print(len(Benchmark.load(source='hub', repo_id='{REPO}')))"
    env = {**os.environ, "HF_ENDPOINT": hub.url}
    out = subprocess.run([sys.executable, "-c", code], env=env, capture_output=True, text=True, cwd=ROOT, timeout=120)
    assert out.returncode == 0, out.stderr
    assert out.stdout.strip() == "500"
    assert _resolves(hub)


def test_dropped_connection_is_retried(hub, cache, bench):
    hub.faults[f"{VERSION_DIR}/nlp_ptb.parquet"] = "drop"
    b = Benchmark.load(source="hub", repo_id=REPO, revision="main", endpoint=hub.url)
    gets = [p for (m, p, _) in _resolves(hub) if m == "GET" and p.endswith("nlp_ptb.parquet")]
    assert len(gets) == 2  # cut half-way, fetched again
    assert b.nlp.ptb.equals(bench.nlp.ptb)


def test_interrupted_download_resumes_without_refetching(hub, cache, bench, published_dir):
    # tables are fetched in name order, then the artifacts; the 4th table fails, so 3 are
    # already in the cache and only the rest is fetched again
    published = DataDir.open(published_dir)
    names = published.names
    hub.faults[f"{VERSION_DIR}/{names[3]}.parquet"] = "500"
    with pytest.raises(DataNotFoundError, match=f"{names[3]}.parquet"):
        Benchmark.load(source="hub", repo_id=REPO, revision="main", endpoint=hub.url)
    hub.log.clear()
    b = Benchmark.load(source="hub", repo_id=REPO, revision="main", endpoint=hub.url)
    fetched = sorted(p.rsplit("/", 1)[1] for (m, p, _) in _resolves(hub) if m == "GET")
    artifacts = [e["file"] for e in published.manifest.get("artifacts", {}).values()]
    assert fetched == sorted([f"{n}.parquet" for n in names[3:]] + artifacts)
    assert b.to_pandas().equals(bench.to_pandas())


def test_corrupted_file_is_refused_and_good_copy_kept(hub, cache, data_dir):
    good = Benchmark.load(source="hub", repo_id=REPO, revision="main", endpoint=hub.url).data.path
    before = {p.name: p.read_bytes() for p in good.iterdir()}
    # a new commit whose table is corrupted (same size, different bytes)
    raw = bytearray((data_dir / VERSION_DIR / "flexibert.parquet").read_bytes())
    raw[len(raw) // 2] ^= 0xFF
    bad = hub.commit(REPO, "main", {f"{VERSION_DIR}/flexibert.parquet": bytes(raw)})
    with pytest.raises(DataIntegrityError, match=r"flexibert.*sha256"):
        Benchmark.load(source="hub", repo_id=REPO, revision="main", endpoint=hub.url)
    assert not materialised_dir(REPO, bad).exists()
    assert {p.name: p.read_bytes() for p in good.iterdir()} == before
    # the bad blob was evicted: once the server is fixed, the next load downloads again
    hub.tamper(REPO, f"{VERSION_DIR}/flexibert.parquet", (data_dir / VERSION_DIR / "flexibert.parquet").read_bytes())
    assert len(Benchmark.load(source="hub", repo_id=REPO, revision="main", endpoint=hub.url)) == 500


def test_truncated_file_is_refused(hub, cache, data_dir):
    raw = (data_dir / VERSION_DIR / "nlp_wikitext2.parquet").read_bytes()
    bad = hub.tamper(REPO, f"{VERSION_DIR}/nlp_wikitext2.parquet", raw[: len(raw) // 3])
    with pytest.raises(DataIntegrityError, match=r"nlp_wikitext2.*bytes.*truncated"):
        Benchmark.load(source="hub", repo_id=REPO, revision="main", endpoint=hub.url)
    assert not materialised_dir(REPO, bad).exists()


def test_missing_file_repo_and_revision(hub, cache):
    hub.commit(REPO, "broken", {})  # a branch without tables
    hub.repos[REPO].branches["broken"] = hub.commit(REPO, "broken", {f"{VERSION_DIR}/manifest.json": None})
    with pytest.raises(DataNotFoundError, match=f"no file '{VERSION_DIR}/manifest.json'"):
        Benchmark.load(source="hub", repo_id=REPO, revision="broken", endpoint=hub.url)
    with pytest.raises(DataNotFoundError, match="repository not found"):
        Benchmark.load(source="hub", repo_id="nobody/nothing", endpoint=hub.url)
    with pytest.raises(DataNotFoundError, match="revision 'v9' not found"):
        Benchmark.load(source="hub", repo_id=REPO, revision="v9", endpoint=hub.url)
    with pytest.raises(ValueError, match="repo_id"):
        Benchmark.load(source="hub", repo_id="a/b/c", endpoint=hub.url)
    with pytest.raises(ValueError, match="allowed values"):
        Benchmark.load(source="ftp")


def test_sources_fall_through_in_order(hub, cache):
    with HubServer() as empty_mirror:  # a mirror that answers but lacks the repository
        dead = f"hub:{empty_mirror.url}"
        with pytest.warns(SourceUnavailableWarning, match=rf"(?s)'{dead}' failed.*repository not found.*trying 'hub:{hub.url}'"):
            b = Benchmark.load(source=[dead, f"hub:{hub.url}", "release"], repo_id=REPO, revision="main")
        assert len(b) == 500 and b.data.path == materialised_dir(REPO, hub.published) / VERSION_DIR
        # every source dead: one error listing each reason, in order. (A repository that
        # was downloaded before is served from the cache when the endpoint fails, the way
        # huggingface_hub does; so this uses one never downloaded.)
        with warnings.catch_warnings():
            warnings.simplefilter("ignore", SourceUnavailableWarning)
            with pytest.raises(DataNotFoundError, match=rf"(?s)no data source worked.*{dead}.*local:/nonexistent"):
                Benchmark.load(source=[dead, "local:/nonexistent"], repo_id="nobody/nothing")


def test_release_source_rebuilds_from_raw_files(cache):
    b = Benchmark.load(source=[f"release:{UPSTREAM}"], progress=False)
    assert len(b) == 500 and str(cache) in str(b.data.path)


def test_datasets_load_dataset_gives_the_same_rows(hub, cache, bench):
    datasets = pytest.importorskip("datasets")
    b = Benchmark.load(source="hub", repo_id=REPO, revision="main", endpoint=hub.url)
    for name in ("flexibert", "nlp_ptb", "flexibert_proxies"):
        ds = datasets.load_dataset("parquet", data_files=str(b.data.table_path(name)), split="train",
                                   cache_dir=str(cache / "datasets"))
        got = ds.to_pandas()
        want = b.data.table(name).to_pandas()
        pd.testing.assert_frame_equal(got.reset_index(drop=True), want.reset_index(drop=True))
    assert len(b.data.table("flexibert")) == len(bench)


def test_cli_download(hub, cache):
    out = subprocess.run(
        [sys.executable, "-m", "nasbench_bert.cli", "download", "--repo-id", REPO, "--endpoint", hub.url],
        capture_output=True, text=True, cwd=ROOT, timeout=120, env={**os.environ},
    )
    assert out.returncode == 0, out.stderr
    assert hub.published in out.stdout
    assert (materialised_dir(REPO, hub.published) / VERSION_DIR / "manifest.json").is_file()
    assert hub_cache_dir().is_dir()


# -- reliability (issue: every defect a hostile test found) ------------------------------------
def test_damaged_copy_is_repaired_on_the_next_load(hub, cache):
    """A verified copy truncated on disk later is found out, evicted and downloaded again
    (before, the same damaged folder came back forever)."""
    d = Benchmark.load(source="hub", repo_id=REPO, revision="main", endpoint=hub.url).data.path
    victim = d / "nlp_ptb.parquet"
    victim.write_bytes(victim.read_bytes()[:100])
    b = Benchmark.load(source="hub", repo_id=REPO, revision="main", endpoint=hub.url)
    b.data.verify_all()
    sha = d.parent.name
    b2 = Benchmark.load(source="hub", repo_id=REPO, revision=sha, endpoint=hub.url)  # the pinned-sha path too
    (b2.data.path / "flexibert.parquet").write_bytes(b"garbage")
    Benchmark.load(source="hub", repo_id=REPO, revision=sha, endpoint=hub.url).data.verify_all()


def test_unreachable_hub_is_named_as_such(cache):
    """A dead endpoint (or HF_HUB_OFFLINE) says the Hub is unreachable, never that the
    repository lacks the manifest; the quick probe answers without the client's retries."""
    from nasbench_bert.data.hub import download

    with pytest.raises(DataNotFoundError, match="unreachable") as e:
        download(REPO, "main", endpoint="http://127.0.0.1:9")
    assert "not a nasbench-bert data repository" not in str(e.value)
    env = {**os.environ, "HF_HUB_OFFLINE": "1", "NASBENCH_BERT_CACHE": str(cache)}
    code = f"from nasbench_bert.data.hub import download; download({REPO!r}, 'main')"
    r = subprocess.run([sys.executable, "-c", code], env=env, capture_output=True, text=True)
    assert r.returncode != 0 and "unreachable (HF_HUB_OFFLINE is set)" in r.stderr


def test_download_has_an_overall_deadline(hub, cache):
    from nasbench_bert.data.hub import download

    hub.faults[f"{VERSION_DIR}/manifest.json"] = "slow"
    with pytest.raises(DataNotFoundError, match="did not finish within timeout=1"):
        download(REPO, "main", endpoint=hub.url, timeout=1)


def test_foreign_manifest_is_refused_before_anything_is_kept(hub, cache):
    """schema_version 99, or a table file that leaves the folder: refused, and nothing is
    materialised or kept in the download cache."""
    from nasbench_bert.data.hub import download, hub_cache_dir

    good = json.loads(hub.repos[REPO].commits[hub.resolve_rev(REPO, "main")][f"{VERSION_DIR}/manifest.json"])
    for bad in (dict(good, schema_version=99),
                dict(good, tables=dict(good["tables"], nlp_ptb=dict(good["tables"]["nlp_ptb"], file="../escape.parquet")))):
        hub.commit(REPO, "evil", {f"{VERSION_DIR}/manifest.json": json.dumps(bad).encode()})
        with pytest.raises(DataIntegrityError):
            download(REPO, "evil", endpoint=hub.url)
        assert not list((cache / "hub").glob("nasbench-bert--test-tables/*")), "nothing materialised"
        assert not [p for p in hub_cache_dir().rglob("manifest.json") if p.resolve().is_file()
                    and json.loads(p.read_text()) == bad], "the bad manifest was evicted"


def test_a_revision_with_only_schema_1_tables_is_refused_with_one_line(hub, cache, data_dir):
    """A revision published by nasbench-bert 0.2 (``v1/`` only) is never read with the
    wrong column names: one line says to use a schema-2 revision or build locally."""
    from nasbench_bert import StaleDataError

    files = hub.repos[REPO].commits[hub.published]
    old = {p: None for p in files if p.startswith(f"{VERSION_DIR}/")}
    old.update({"v1/" + p[len(VERSION_DIR) + 1:]: c for p, c in files.items() if p.startswith(f"{VERSION_DIR}/")})
    m = json.loads(old["v1/manifest.json"])
    old["v1/manifest.json"] = json.dumps(dict(m, schema_version=1)).encode()
    hub.commit(REPO, "schema1", {})
    sha = hub.commit(REPO, "schema1", old)
    with pytest.raises(StaleDataError) as e:
        Benchmark.load(source="hub", repo_id=REPO, revision="schema1", endpoint=hub.url)
    msg = str(e.value)
    assert "\n" not in msg and "schema-1 tables only" in msg and "`nasbench-bert build-data`" in msg, msg
    assert not materialised_dir(REPO, sha).exists()


def test_download_then_load_and_query_in_the_same_cache(hub, cache):
    """`nasbench-bert download --revision <sha>` and then `Benchmark.load()` or `nasbench-bert
    query 0` in the same cache load the download (issue 37, item 5): before, they raised
    DataNotFoundError, whose fix advised the download that had just run."""
    env = {k: v for k, v in os.environ.items() if k != "NASBENCH_BERT_DATA"}
    env.update(NASBENCH_BERT_CACHE=str(cache), NASBENCH_BERT_RELEASE=str(cache / "no-release-here"))

    def cli(*args: str, **extra: str) -> subprocess.CompletedProcess:
        return subprocess.run([sys.executable, "-m", "nasbench_bert.cli", *args], capture_output=True, text=True, cwd=ROOT,
                              timeout=300, env={**env, **extra})

    r = cli("download", "--repo-id", REPO, "--revision", hub.published, "--endpoint", hub.url)
    assert r.returncode == 0, r.stderr
    n = len(hub.log)
    q = cli("query", "0", HF_HUB_OFFLINE="1")  # from the cache alone: nothing reaches the server
    assert q.returncode == 0, q.stderr
    assert "74.73375" in q.stdout and len(hub.log) == n
    code = "from nasbench_bert import Benchmark; b = Benchmark.load(progress=False); print(b.data.path, len(b))"
    out = subprocess.run([sys.executable, "-c", code], capture_output=True, text=True, cwd=ROOT, timeout=300,
                         env={**env, "HF_HUB_OFFLINE": "1"})
    assert out.returncode == 0, out.stderr
    assert out.stdout.split() == [str(materialised_dir(REPO, hub.published) / VERSION_DIR), "500"]
    # a record whose folder was removed is passed over with a warning, never a traceback
    import shutil

    shutil.rmtree(materialised_dir(REPO, hub.published))
    gone = cli("query", "0", HF_HUB_OFFLINE="1")
    assert gone.returncode == 2 and "names a download that cannot be used" in gone.stderr and "Traceback" not in gone.stderr


def test_publish_refuses_tables_without_their_artifacts(data_dir, tmp_path):
    """A folder without objectives-v1.json and the pinned surrogate (build_tables alone, or
    build-data --no-surrogate) is refused with one line naming build-surrogate, before
    anything reaches the server; the CLI prints no "(pin this)" (issue 37, item 6)."""
    from nasbench_bert.builders.publish import publish

    with HubServer() as server:
        with pytest.raises(DataNotFoundError) as e:
            publish(REPO, data=data_dir, endpoint=server.url)
        msg = str(e.value)
        assert "\n" not in msg and "objectives and surrogate files" in msg, msg
        assert f"`nasbench-bert build-surrogate --data {data_dir}`" in msg, msg
        assert server.log == [] and REPO not in server.repos  # nothing was uploaded, no repository created
        r = subprocess.run([sys.executable, "-m", "nasbench_bert.cli", "--data", str(data_dir), "publish", "--repo-id", REPO,
                            "--endpoint", server.url], capture_output=True, text=True, cwd=ROOT, timeout=300)
        assert r.returncode == 2 and "pin this" not in r.stdout and "build-surrogate" in r.stderr, (r.stdout, r.stderr)
        assert len(r.stderr.strip().splitlines()) == 1, r.stderr
        assert server.log == []
