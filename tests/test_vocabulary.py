"""The typed vocabulary (issue 38, item 3): every closed set that code branches on has
members (a ``StrEnum``) as well as its ``Literal``, and the two name the same values, so
a comparison with a member can never silently diverge from what a validator accepts."""

from __future__ import annotations

from typing import get_args

import pytest

from nasbench_bert import devices, executors, semantics, vocabulary
from nasbench_bert.data import objectives
from nasbench_bert.data.release_flexibert import curve_point_status


def _values(enum: type) -> tuple[str, ...]:
    return tuple(m.value for m in enum)


@pytest.mark.parametrize("members, literal", [
    (vocabulary.Space, vocabulary.SPACES),
    (vocabulary.ExecutorKind, vocabulary.EXECUTORS),
    (vocabulary.NLPDataset, vocabulary.DATASETS),
    (vocabulary.Direction, objectives.DIRECTIONS),
    (semantics.ObjectiveRule, get_args(semantics.Objective)),
    (semantics.NLPObjectiveRule, get_args(semantics.NLPObjective)),
])
def test_members_name_the_literal_values(members, literal):
    assert _values(members) == tuple(literal)


def test_a_member_equals_its_string_and_keys_a_dict_for_it():
    """What the library relies on: a validated plain string, a DataFrame cell or a
    ``torch.device.type`` compares equal to the member, and a table keyed by members
    answers the plain string."""
    assert vocabulary.ExecutorKind.SLURM == "slurm" and "slurm" == vocabulary.ExecutorKind.SLURM
    assert {vocabulary.ExecutorKind.LOCAL: 1}["local"] == 1
    assert vocabulary.DeviceKind.CPU != "cuda"


def test_every_executor_has_a_runner_and_a_device_check():
    assert set(executors._RUNNERS) == set(vocabulary.EXECUTORS)
    assert set(devices._BY_EXECUTOR) == set(vocabulary.EXECUTORS)


def test_device_kinds_are_what_the_device_syntax_accepts():
    assert [devices.parse_device(k.value)[0] for k in vocabulary.DeviceKind] == list(vocabulary.DeviceKind)
    assert devices.parse_device("CUDA:1") == (vocabulary.DeviceKind.CUDA, 1)


def test_curve_statuses_are_what_the_release_parser_writes():
    """The three statuses, each made by its case of the authors' file-name collision: a
    point of its own, a summed GLUE above 100 (recovered), a later checkpoint's copy (lost)."""
    rows = [(0, 50_000, [1.0], 150.0, 1.0), (0, 500_000, [1.0], 80.0, 1.0),
            (1, 100_000, [2.0], 60.0, 1.0), (1, 1_000_000, [2.0], 60.0, 1.0), (2, 50_000, [3.0], 70.0, 1.0)]
    status, corrected = curve_point_status(rows)
    assert status == ["recovered", "ok", "lost", "ok", "ok"]
    assert set(status) == set(_values(vocabulary.CurveStatus))
    assert corrected[0] == 70.0


def test_row_kinds_are_evaluates_kinds_and_the_reports_leaderboard_rows():
    """``Kind`` names every ``RowKind`` an evaluation writes, and one more: the report's rows
    copied from the leaderboard; a misspelt member fails where it is used, not by filtering
    to nothing."""
    assert set(vocabulary.ROW_KINDS) | {"leaderboard"} == set(_values(vocabulary.Kind))
    assert set(vocabulary.ROW_KINDS) < set(_values(vocabulary.Kind))
