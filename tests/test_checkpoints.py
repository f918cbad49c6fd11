"""Pretraining checkpoints are read without unpickling code (issue 37, item 16).

A workdir can be a shared cluster file system or a copied results folder; before, a
build resumed with ``torch.load(..., weights_only=False)``, so a ``step-*.pt`` planted
there ran arbitrary code. Now the weights-only unpickler reads exactly what a checkpoint
holds, and a foreign object is refused with one line, never run.
"""

from __future__ import annotations

import pickle
import zipfile

import numpy as np
import pytest

torch = pytest.importorskip("torch")

from nasbench_bert.builders import pretrain as pretrain_mod  # noqa: E402
from nasbench_bert.builders.pretrain import PretrainConfig, build_model, make_optimizer  # noqa: E402
from nasbench_bert.errors import DataIntegrityError  # noqa: E402

ARCH = "128/SA-SDP-h2-512x1/LT-DFT-h2-512x1"
CFG = PretrainConfig(vocab_size=300, seq_len=16)


class _RunsCode:
    """Unpickling this calls ``exec`` on a line that writes ``marker``: what a planted
    checkpoint would do."""

    def __init__(self, marker: str) -> None:
        self.marker = marker

    def __reduce__(self):  # noqa: ANN204
        return (exec, (f"open({self.marker!r}, 'w').write('ran')",))


def _model_and_optimizer():
    torch.manual_seed(0)
    model = build_model(ARCH, CFG)
    opt = make_optimizer(model, CFG)
    for p in model.parameters():  # one step, so the optimizer state holds its tensors
        p.grad = torch.randn_like(p) if p.requires_grad else None
    opt.step(np.float32(1e-4), 1)
    return model, opt


def _checkpoint(folder, step: int) -> None:
    from nasbench_bert.builders import checkpoints

    model, opt = _model_and_optimizer()
    checkpoints.save(folder, step, model, opt, [1.5, 1.25], [0.5, 0.25], [1.0, 1.0])


def test_a_checkpoint_names_nothing_beyond_the_weights_only_defaults(tmp_path):
    """"Exactly the types the checkpoint holds": a written checkpoint names no global that
    torch's weights-only unpickler does not allow by itself, and reads back whole."""
    from nasbench_bert.builders import checkpoints

    model, opt = _model_and_optimizer()
    path = checkpoints.save(tmp_path, 7, model, opt, [1.5], [0.5], [1.0])
    assert torch.serialization.get_unsafe_globals_in_checkpoint(path) == []
    assert checkpoints.ALLOWED_GLOBALS == ()
    st = checkpoints.load(path)
    assert st["step"] == 7 and st["losses"] == [1.5]
    assert all(torch.equal(st["model"][k], v) for k, v in model.state_dict().items())
    assert st["optimizer"]["param_groups"] == opt.state_dict()["param_groups"]
    assert all(torch.equal(a, b) for i, s in opt.state_dict()["state"].items() for a, b in
               zip(s.values(), st["optimizer"]["state"][i].values()))


def test_a_planted_checkpoint_is_refused_with_one_line_and_never_run(tmp_path):
    wd = tmp_path / "wd"
    (wd / "checkpoints").mkdir(parents=True)
    _checkpoint(wd / "checkpoints", 10)  # a good older checkpoint: the planted one is not silently passed over
    marker = tmp_path / "ran.txt"
    planted = wd / "checkpoints" / "step-00000020.pt"
    model, opt = _model_and_optimizer()
    # a checkpoint that resumes like a real one, with one extra object whose unpickling runs code
    torch.save({"step": 20, "model": model.state_dict(), "optimizer": opt.state_dict(), "losses": [1.0] * 20,
                "disc_losses": [0.5] * 20, "gen_losses": [1.0] * 20, "note": _RunsCode(str(marker))}, planted)
    with pytest.raises(DataIntegrityError) as e:
        pretrain_mod._resume(wd, CFG, model, opt, torch.device("cpu"))  # what pretrain(workdir=wd) runs first
    assert not marker.exists(), "the planted checkpoint's code ran"
    msg = str(e.value)
    assert "\n" not in msg and str(planted) in msg and "(exec)" in msg and "nothing in it ran" in msg, msg


def test_a_damaged_newest_checkpoint_falls_back_to_the_one_before(tmp_path):
    from nasbench_bert.builders import checkpoints

    _checkpoint(tmp_path, 10)
    _checkpoint(tmp_path, 20)
    newest = tmp_path / "step-00000020.pt"
    newest.write_bytes(newest.read_bytes()[: 2000])  # truncated (a full disk)
    path, st = checkpoints.latest(tmp_path)
    assert path.name == "step-00000010.pt" and st["step"] == 10
    with pytest.raises((RuntimeError, zipfile.BadZipFile, EOFError, pickle.UnpicklingError)):
        checkpoints.load(newest)
