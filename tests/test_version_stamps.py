"""Every export records the nasbench-bert version that wrote it (issue 37, item 4): a file
or log read later must say which package produced its values, since main (0.3.0.dev0)
and a release can differ. Here: the NAS-Bench-Suite-Zero files, CARP-S trials and the
hardware measurement. The others are checked where they are tested: the syne-tune
blackboxes (tests/test_syne_tune_repository.py, ``nasbench_bert_version``) and the
``proxies evaluate`` report (tests/test_report.py, ``package_version`` of values.parquet).
"""

from __future__ import annotations

import json

import pytest

import nasbench_bert
from conftest import UPSTREAM


def test_naszero_files_stamp_the_version_outside_every_task(bench, tmp_path):
    from nasbench_bert.integrations.naszero import STAMP, export_naszero, read_naszero

    for path in export_naszero(bench, tmp_path, tasks="glue"):
        data = json.loads(path.read_text())
        assert data[STAMP] == {"provenance": {"nasbench_bert_version": nasbench_bert.__version__,
                                              "generated_by": f"nasbench-bert {nasbench_bert.__version__}"}}
        tasks = set(read_naszero(path)["task"])
        assert STAMP not in tasks and tasks == set(data) - {STAMP}
        # NAS-Bench-Suite-Zero's loader keeps json.load(f)[dataset] only: the stamp is no task's
        assert all(STAMP not in data[t] for t in tasks)


def test_carps_trials_carry_the_version(data_dir):
    pytest.importorskip("carps")
    from carps.utils.trials import TrialInfo

    from nasbench_bert.integrations import carps as nb_carps

    def subclasses(c: type) -> list[type]:
        return [s for d in c.__subclasses__() for s in (d, *subclasses(d))]

    import nasbench_bert.integrations.carps_fidelity  # noqa: F401 - its tasks are subclasses too

    tasks = [c for c in subclasses(nb_carps._Base) if "_evaluate" in c.__dict__]
    assert {"FlexiBERTTabular", "FlexiBERTSurrogate", "NLPTabular"} <= {c.__name__ for c in tasks}
    assert all(getattr(c._evaluate, "_stamps_version", False) for c in tasks), tasks
    for f in (nb_carps.FlexiBERTTabular(data=str(data_dir)), nb_carps.NLPTabular(data=str(data_dir))):
        v = f.evaluate(TrialInfo(config=f.configspace.sample_configuration()))
        assert v.additional_info["nasbench_bert_version"] == nasbench_bert.__version__
        assert set(v.additional_info) > {"nasbench_bert_version"}  # beside what answered, not instead


def test_the_hardware_measurement_stamps_the_version(tmp_path):
    pytest.importorskip("torch")
    from nasbench_bert.builders import hardware

    out = tmp_path / "measured"
    rc = hardware.main(["--ids", "0", "--semantics", "as_trained", "--quick", "--noise-archs", "1", "--noise-passes", "2",
                        "--docs", "", "--out", str(out), "--cache", str(tmp_path / "cache"), "--release", str(UPSTREAM)])
    assert rc == 0
    meta = json.loads((out / hardware.META_FILE).read_text())
    assert meta["package_version"] == nasbench_bert.__version__


@pytest.mark.parametrize("suffix", [".parquet", ".csv"])
def test_a_table_export_stamps_the_version_and_reads_back_unchanged(data_dir, tmp_path, suffix):
    """``export --format table``: parquet keeps the stamp in its schema metadata, a CSV in
    ``FILE.csv.json`` beside it; what pandas reads is the table, nothing added."""
    import pandas as pd
    import pyarrow.parquet as pq

    from nasbench_bert.cli import main
    from nasbench_bert.cli.common import STAMP_KEY

    out = tmp_path / f"flexibert{suffix}"
    assert main(["--data", str(data_dir), "-q", "export", "flexibert", "--out", str(out)]) == 0
    want = {"nasbench_bert_version": nasbench_bert.__version__,
            "generated_by": f"nasbench-bert {nasbench_bert.__version__}", "table": "flexibert"}
    if suffix == ".parquet":
        assert json.loads(pq.read_schema(out).metadata[STAMP_KEY]) == want
        df = pd.read_parquet(out)
    else:
        assert json.loads((tmp_path / "flexibert.csv.json").read_text()) == want
        df = pd.read_csv(out)
    assert len(df) == 500 and "glue" in df.columns
