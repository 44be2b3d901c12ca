"""A conditional append through a handle that has not seen another process's commits.

Each process keeps its own view of a trajectory. ``If-Match`` (``expected_nstep``)
and a producer's sequence must be judged against the store as it is once the
writer lease is held, not against that view. The worker-kill soak caught a
retried POST that reached the other worker while its first attempt committed:
judged against the old view, the retry passed ``If-Match`` and was refused
as out of step order (409), telling the client its landed batch was bad.
Two catalogs on one directory stand for two worker processes (their leases
exclude each other as two processes' do).
"""

from __future__ import annotations

from pathlib import Path

import numpy as np
import pytest

import mrecd
from mrecd import api
from mrecd.api import Producer
from mrecd.api._trajectory import Trajectory
from mrecd.errors import PreconditionFailed


def steps(first: int, n: int) -> list[mrecd.Frame]:
    """Frames ``first .. first + n - 1``, each with its own step and values."""
    return [
        mrecd.Frame({"atoms": {"x": np.full(3, float(k))}}, step=k) for k in range(first, first + n)
    ]


def catalogs(tmp_path: Path) -> tuple[api.Catalog, api.Catalog]:
    return api.open(str(tmp_path)), api.open(str(tmp_path))


def trajectory_of(record: api.StoredRecord) -> Trajectory:
    """A writable record's trajectory (never ``None`` there: the first append creates it)."""
    traj = record.trajectory
    assert traj is not None, "a writable record always has a trajectory object"
    return traj


def test_if_match_zero_through_an_unborn_handle_sees_the_birth_elsewhere(tmp_path: Path) -> None:
    here, there = catalogs(tmp_path)
    late = trajectory_of(here.create_record("run"))  # this worker saw the record unborn
    assert len(late) == 0
    first = trajectory_of(there.record("run", "r+"))
    first.extend(steps(0, 4), expected_nstep=0)  # the first attempt, answer lost
    first.release_writer()
    with pytest.raises(PreconditionFailed) as refused:
        late.extend(steps(0, 4), expected_nstep=0)  # its retry (not a step-order 409)
    assert refused.value.nstep == 4
    late.release_writer()
    assert len(there.record("run").trajectory or []) == 4


def test_if_match_through_a_stale_reader_is_judged_under_the_lease(tmp_path: Path) -> None:
    here, there = catalogs(tmp_path)
    writer = trajectory_of(there.create_record("run"))
    writer.extend(steps(0, 2), expected_nstep=0)
    writer.flush()
    stale = trajectory_of(here.record("run", "r+"))
    assert len(stale) == 2  # seen at 2, no writer held here
    writer.extend(steps(2, 3), expected_nstep=2)
    writer.release_writer()
    with pytest.raises(PreconditionFailed) as refused:
        stale.append(steps(5, 1)[0], expected_nstep=2)
    assert refused.value.nstep == 5
    assert stale.extend(steps(5, 1), expected_nstep=5) == 6  # the fresh nstep holds
    stale.release_writer()


def test_a_producer_retry_through_an_unborn_handle_is_a_duplicate(tmp_path: Path) -> None:
    here, there = catalogs(tmp_path)
    late = trajectory_of(here.create_record("run"))
    first = trajectory_of(there.record("run", "r+"))
    batch = Producer("sim-1", 0, 0)
    assert first.extend_once(steps(0, 4), batch).first == 0
    first.release_writer()
    again = late.extend_once(steps(0, 4), batch)  # the retry, through the other worker
    assert again.duplicate and (again.first, again.count, again.nstep) == (0, 4, 4)
    late.release_writer()
    assert len(there.record("run").trajectory or []) == 4
