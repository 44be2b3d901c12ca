"""``Collection.batches``: a loader's epoch in batches, one read transaction each."""

from __future__ import annotations

from pathlib import Path
from typing import Any

import pytest
from collection_helpers import X0, atoms, frame, new

import mrecd

N = 23


@pytest.fixture(scope="module")
def col(tmp_path_factory: pytest.TempPathFactory) -> Any:
    path = tmp_path_factory.mktemp("batches") / "b.mrec.lmdb"
    collection = new(path)
    collection.extend(
        {
            "meta": {"k": k},
            "trajectory": [frame(s, -1.0, atoms=atoms(X0 + k, s)) for s in range(k % 3)],
        }
        for k in range(N)
    )
    yield collection
    collection.close()


def _ks(batches: list[list[mrecd.Record]]) -> list[list[int]]:
    return [[rec.meta["k"] for rec in batch] for batch in batches]


def test_an_epoch_covers_every_record_once(col: mrecd.Collection) -> None:
    ks = _ks(list(col.batches(5, seed=1)))
    assert [len(b) for b in ks] == [5, 5, 5, 5, 3]  # the last batch is partial
    flat = [k for b in ks for k in b]
    assert sorted(flat) == list(range(N)) and flat != list(range(N))


def test_a_seed_fixes_the_order(col: mrecd.Collection) -> None:
    assert _ks(list(col.batches(4, seed=7))) == _ks(list(col.batches(4, seed=7)))
    assert _ks(list(col.batches(4, seed=7))) != _ks(list(col.batches(4, seed=8)))


def test_in_order_and_drop_last(col: mrecd.Collection) -> None:
    ks = _ks(list(col.batches(10, shuffle=False, drop_last=True)))
    assert ks == [list(range(10)), list(range(10, 20))]
    assert _ks(list(col.batches(N, shuffle=False))) == [list(range(N))]
    assert (
        _ks(list(col.batches(100, seed=0))) != []
        and len(list(col.batches(100, drop_last=True))) == 0
    )


def test_records_come_whole_and_resolved(col: mrecd.Collection) -> None:
    for batch in col.batches(6, seed=3):
        for rec in batch:
            k = rec.meta["k"]
            assert len(rec.trajectory) == k % 3
            for s, f in enumerate(rec.trajectory):
                assert f.step == s and f["atoms"]["x"].values.tolist() == (X0 + k + s).tolist()


def test_lazy_batches(col: mrecd.Collection) -> None:
    (batch,) = list(col.batches(N, shuffle=False, frames=False))
    assert batch[2].trajectory[1]["atoms"]["y"].values.tolist() == (X0 + 4.0).tolist()


def test_one_read_transaction_per_batch(
    col: mrecd.Collection, monkeypatch: pytest.MonkeyPatch
) -> None:
    binding = col._binding
    opened = []
    original = binding.reading

    def counting(**options: Any) -> Any:
        opened.append(1)
        return original(**options)

    monkeypatch.setattr(binding, "reading", counting)
    batches = list(col.batches(8, seed=2))
    assert len(opened) == len(batches) == 3


def test_records_appended_meanwhile_wait_for_the_next_epoch(tmp_path: Path) -> None:
    with new(tmp_path / "grow.mrec.lmdb") as col:
        col.extend({"meta": {"k": k}, "trajectory": []} for k in range(6))
        seen = []
        for batch in col.batches(2, shuffle=False):
            seen += [rec.meta["k"] for rec in batch]
            col.append({"meta": {"k": 99}, "trajectory": []})
        assert seen == list(range(6)) and len(col) == 9


@pytest.mark.parametrize("size", [0, -1, 2.0, True, "3"])
def test_bad_batch_size(col: mrecd.Collection, size: Any) -> None:
    with pytest.raises(ValueError, match="size is a positive integer"):
        next(col.batches(size))
