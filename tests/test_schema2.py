"""Data release 2 (schema version 2): canonical column names, the release-era names
answering with a DeprecationWarning, the schema version in the manifest, and tables of
schema 1 detected - rebuilt in the user cache, refused with one line elsewhere."""

from __future__ import annotations

import hashlib
import json
import shutil
import warnings
from pathlib import Path

import pyarrow.parquet as pq
import pytest

from nasbench_bert import Benchmark, DataIntegrityError, SourceUnavailableWarning, StaleDataError
from nasbench_bert.data.columns import LEGACY_NAMES, RENAMED, TableFrame
from nasbench_bert.data.resolve import resolve
from nasbench_bert.data.schemas import load_schema, table_columns
from nasbench_bert.data.tables import SCHEMA_VERSION, VERSION_DIR, DataDir
from nasbench_bert.semantics import PARAM_COLUMNS

#: data release 1's column lists where schema 2 renamed something (the other tables' lists
#: are unchanged: test_unrenamed_tables_keep_their_columns)
V1_COLUMNS = {
    "flexibert_params": ["num_params", "num_params_seed_compat", "num_params_as_trained"],
    "flexibert_proxies_params": ["num_params_seed_compat"],
}
V2_PARAMS = ["num_params_as_specified", "num_params_authors", "num_params_as_trained"]

#: a digest of every column (name, Arrow type, values) of each table as data release 1
#: built it from the pinned release (the code at commit 09b02e3, release files of
#: PINNED_SHA256); schema 2 renamed back to the release-era names must give the same
V1_DIGESTS = {
    "flexibert": "7decd35c7ab50620ac5ae541aabdaf9ff244e0871ade40e5fb89a0b92d6c3595",
    "flexibert_proxies": "a5877be20eb7efbbee612d43c1bfa115c32fea35210e44cf5156cf2098094bab",
    "flexibert_curves": "01a81b0e8907502e9a6c0d4c50631df436f555705f58e0a7780573fc01c00a02",
    "nlp_ptb": "611d60958029c8c68fefdbb76ca8e38520b4abe7c32d3c0e5c3f214dffbc777f",
    "nlp_wikitext2": "c6892c7694d6c3f38f7be968c6f345cc46c6f9cb92af16a2af65a8d01a90b410",
}


def _digest(table) -> str:  # type: ignore[no-untyped-def]
    """Names, types and exact values (floats through repr, NaN included) of every column."""
    h = hashlib.sha256()
    for name in table.column_names:
        h.update(json.dumps([name, str(table.schema.field(name).type), table.column(name).to_pylist()],
                            allow_nan=True, default=str).encode())
    return h.hexdigest()


# -- the columns ---------------------------------------------------------------------------
def test_schema_2_columns_are_the_v1_columns_under_their_new_names_with_equal_values(data_dir):
    d = DataDir.open(data_dir)
    flex = d.table("flexibert").column_names
    assert [c for c in flex if c.startswith("num_params")] == V2_PARAMS
    assert [c for c in d.table("flexibert_proxies").column_names if c.startswith("num_params")] == ["num_params_authors"]
    assert sorted(PARAM_COLUMNS.values()) == sorted(V2_PARAMS)
    for name, digest in V1_DIGESTS.items():
        t = d.table(name)
        back = {new: old for old, new in RENAMED.get(name, {}).items()}
        as_v1 = t.rename_columns([back.get(c, c) for c in t.column_names])
        assert _digest(as_v1) == digest, name  # the same columns, in the same order, with exactly the same values
    renamed_back = [{v: k for k, v in RENAMED["flexibert"].items()}.get(c, c) for c in flex]
    assert [c for c in renamed_back if c.startswith("num_params")] == V1_COLUMNS["flexibert_params"]


def test_the_naming_rule_holds_for_every_declared_column():
    """docs/data.md: no semantics alias in a column name; every FlexiBERT-table count names
    its semantics; NAS-Bench-NLP and the hardware table keep num_params (one reading)."""
    aliases = ("faithful", "seed_compat")
    for table, cols in table_columns().items():
        for c in cols:
            assert not any(a in c for a in aliases), (table, c)
            if table in ("flexibert", "flexibert_proxies") and c.startswith("num_params"):
                assert c in PARAM_COLUMNS.values(), (table, c)
    assert "num_params" in table_columns()["nlp_ptb"] and "num_params" in table_columns()["nlp_wikitext2"]
    assert "num_params" in table_columns()["flexibert_hardware"] and "semantics" in table_columns()["flexibert_hardware"]
    assert set(LEGACY_NAMES) == {"num_params", "num_params_seed_compat"}


def test_unrenamed_tables_keep_their_columns():
    assert set(RENAMED) == {"flexibert", "flexibert_proxies"}
    for table, m in RENAMED.items():
        declared = table_columns()[table]
        assert all(new in declared and old not in declared for old, new in m.items())


# -- the release-era names answer, with a warning naming the replacement ---------------------
@pytest.mark.parametrize("old,new", sorted(LEGACY_NAMES.items()))
def test_dataframes_answer_to_the_old_names_with_a_deprecation_warning(bench, old, new):
    frames = {"to_pandas": bench.to_pandas(), "filter": bench.filter(hidden_size=256),
              "query_many": bench.query_many([0, 3], charge=False), "nearest": bench.nearest(bench.archs[0], k=3)}
    for where, df in frames.items():
        assert isinstance(df, TableFrame) and old not in df.columns and new in df.columns, where
        with pytest.warns(DeprecationWarning, match=f"'{old}'.*use '{new}'.*0.4"):
            got = df[old]
        assert got.tolist() == df[new].tolist(), where
        with pytest.warns(DeprecationWarning, match=f"use '{new}'"):
            assert getattr(df, old).tolist() == df[new].tolist()
        with pytest.warns(DeprecationWarning, match=f"use '{new}'"):
            assert df[["id", old]].columns.tolist() == ["id", new]
        with pytest.warns(DeprecationWarning, match=f"use '{new}'"):
            assert df.get(old).tolist() == df[new].tolist()
    with warnings.catch_warnings():
        warnings.simplefilter("error")  # the new names, and other columns, never warn
        df = bench.to_pandas()
        df[new], df.glue, df[["id", "glue"]], df.get("nope")
        with pytest.raises(KeyError):
            df["nope"]
        with pytest.raises(AttributeError):
            df.nope


def test_a_column_a_user_adds_under_an_old_name_is_theirs(bench):
    df = bench.to_pandas()
    df["num_params"] = 1
    with warnings.catch_warnings():
        warnings.simplefilter("error")
        assert (df["num_params"] == 1).all()


def test_results_answer_to_the_old_names_with_a_deprecation_warning(bench):
    r = bench.query(0, charge=False)
    row = bench.to_pandas().iloc[0]
    assert (r.num_params_as_specified, r.num_params_authors, r.num_params_as_trained) == tuple(int(row[c]) for c in V2_PARAMS)
    d = r.to_dict()
    assert [k for k in d if k.startswith("num_params")] == V2_PARAMS
    for old, new in LEGACY_NAMES.items():
        with pytest.warns(DeprecationWarning, match=f"attribute '{old}'.*use '{new}'"):
            assert getattr(r, old) == getattr(r, new)
        with pytest.warns(DeprecationWarning, match=f"key '{old}'.*use '{new}'"):
            assert d[old] == d[new]
        with pytest.warns(DeprecationWarning, match=f"use '{new}'"):
            assert d.get(old) == d[new]
    assert json.loads(json.dumps(d, default=str))["num_params_authors"] == r.num_params_authors
    with pytest.raises(KeyError):
        d["nope"]


def test_scoring_control_by_an_old_name_warns(bench):
    from nasbench_bert import scoring

    df = bench.data.table("flexibert_proxies").to_pandas()[["id", "head_confidence"]].head(60)
    with pytest.warns(DeprecationWarning, match="use 'num_params_authors'"):
        old = scoring.score(df, "glue", proxies=["head_confidence"], control="num_params_seed_compat", bootstrap=0,
                            bench=bench)
    new = scoring.score(df, "glue", proxies=["head_confidence"], control="num_params_authors", bootstrap=0, bench=bench)
    assert old["partial_tau_given_params"].tolist() == new["partial_tau_given_params"].tolist()


def test_export_legacy_names(bench, data_dir, tmp_path, capsys):
    import pandas as pd

    from nasbench_bert.cli import main

    assert main(["--data", str(data_dir), "-q", "export", "flexibert", "--out", str(tmp_path / "new.csv")]) == 0
    assert main(["--data", str(data_dir), "-q", "export", "flexibert", "--legacy-names", "--out", str(tmp_path / "old.csv")]) == 0
    assert "deprecated: column 'num_params_seed_compat'" in capsys.readouterr().err
    new, old = pd.read_csv(tmp_path / "new.csv"), pd.read_csv(tmp_path / "old.csv")
    assert [c for c in new if c.startswith("num_params")] == V2_PARAMS
    assert [c for c in old if c.startswith("num_params")] == V1_COLUMNS["flexibert_params"]
    assert old["num_params_seed_compat"].tolist() == new["num_params_authors"].tolist()
    assert main(["--data", str(data_dir), "-q", "export", "flexibert_proxies", "--legacy-names",
                 "--out", str(tmp_path / "p.csv")]) == 0
    assert "num_params_seed_compat" in pd.read_csv(tmp_path / "p.csv")


# -- the schema version -------------------------------------------------------------------
def test_manifest_records_schema_version_2_and_what_was_renamed(data_dir):
    m = json.loads((data_dir / VERSION_DIR / "manifest.json").read_text())
    assert SCHEMA_VERSION == 2 and VERSION_DIR == "v2"
    assert m["schema_version"] == SCHEMA_VERSION == load_schema("manifest")["properties"]["schema_version"]["const"]
    assert m["renamed_columns"] == RENAMED
    assert m["tables"]["flexibert"]["columns"] == DataDir.open(data_dir).table("flexibert").column_names


def _fake_v1(data_dir: Path, root: Path) -> Path:
    """A data folder as nasbench-bert 0.2 left it: ``v1/`` with schema_version 1 and the
    release-era column names in its manifest."""
    root.mkdir(parents=True, exist_ok=True)
    shutil.copytree(data_dir / VERSION_DIR, root / "v1")
    mpath = root / "v1" / "manifest.json"
    m = json.loads(mpath.read_text())
    m["schema_version"] = 1
    del m["renamed_columns"]
    for table, ren in RENAMED.items():
        back = {new: old for old, new in ren.items()}
        m["tables"][table]["columns"] = [back.get(c, c) for c in m["tables"][table]["columns"]]
    mpath.write_text(json.dumps(m))
    return root


def _one_line(e: pytest.ExceptionInfo) -> str:
    msg = str(e.value)
    assert "\n" not in msg and "`nasbench-bert build-data" in msg and "schema-1" in msg, msg
    return msg


def test_a_v1_folder_given_by_path_or_env_is_refused_with_one_line(data_dir, tmp_path, monkeypatch):
    old = _fake_v1(data_dir, tmp_path / "old")
    with pytest.raises(StaleDataError) as e:
        Benchmark.load(str(old))
    assert f"--out {old}`" in _one_line(e)
    with pytest.raises(StaleDataError) as e:  # the version folder itself
        DataDir.open(old / "v1")
    assert f"--out {old}" in _one_line(e)
    monkeypatch.setenv("NASBENCH_BERT_DATA", str(old))
    with pytest.raises(StaleDataError) as e:
        resolve(progress=False)
    assert "NASBENCH_BERT_DATA" in _one_line(e)
    assert sorted(p.name for p in old.iterdir()) == ["v1"]  # nothing built behind the user's back


def test_a_v1_manifest_in_the_v2_folder_is_never_read(data_dir, tmp_path):
    d = tmp_path / "d"
    shutil.copytree(data_dir, d)
    mpath = d / VERSION_DIR / "manifest.json"
    m = json.loads(mpath.read_text())
    for version, error in ((1, StaleDataError), (3, DataIntegrityError)):
        mpath.write_text(json.dumps(dict(m, schema_version=version)))
        with pytest.raises(error, match=f"schema.{version}|schema_version {version}") as e:
            DataDir.open(d)
        assert (version == 1) == isinstance(e.value, StaleDataError)
    assert "upgrade nasbench-bert" in str(e.value)


def test_a_v1_user_cache_is_rebuilt_beside_it_or_refused_with_one_line(data_dir, tmp_path, monkeypatch):
    cache = _fake_v1(data_dir, tmp_path / "cache")
    before = {p.name: p.read_bytes() for p in (cache / "v1").iterdir()}
    monkeypatch.setenv("NASBENCH_BERT_CACHE", str(cache))
    monkeypatch.delenv("NASBENCH_BERT_DATA", raising=False)
    with pytest.raises(StaleDataError) as e:  # nothing may be fetched or built: refused
        Benchmark.load(source="local")
    assert "user cache" in _one_line(e)
    with pytest.warns(SourceUnavailableWarning, match="schema-1 tables only"):
        d = resolve(progress=False)  # release files available ($NASBENCH_BERT_RELEASE): rebuilt
    assert d.path == cache / VERSION_DIR and d.manifest["schema_version"] == SCHEMA_VERSION
    assert "num_params_authors" in d.table("flexibert").column_names
    assert {p.name: p.read_bytes() for p in (cache / "v1").iterdir()} == before  # left for nasbench-bert 0.2
    assert resolve(hub=False, build=False).path == cache / VERSION_DIR


def test_v2_tables_read_back_as_written(data_dir):
    t = pq.read_table(data_dir / VERSION_DIR / "flexibert.parquet")
    meta = t.schema.metadata
    assert b"num_params_authors" in meta and b"num_params_seed_compat" not in meta  # field notes under the new names
