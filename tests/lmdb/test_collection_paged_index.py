"""The paged index (issue 13): past one page of rows the index lives in ``i ‖ p``
pages, rewritten only where a commit's rows fall; files in today's layout (one
``index`` value) still open, read and append; ``compact()`` returns to it."""

from __future__ import annotations

import json
import os
import shutil
from pathlib import Path
from typing import Any

import numpy as np
import pytest
from collection_helpers import X0, atoms, frame, keys, meta_of, new, put_meta, raw, snapshot

import mrecd
from mrecd.bindings.lmdb._keys import index_page_key
from mrecd.bindings.lmdb._meta import INDEX_PAGES, PAGE_ROWS
from mrecd.codecs import decode_blocks, encode_blocks

OWN = {"k": {"dtype": "i64"}, "label": {"dtype": "string", "nullable": True}}


def record(k: int) -> dict[str, Any]:
    """Record ``k``: ``k % 3`` frames (x shifted by ``k``)."""
    return {
        "meta": {"k": k},
        "trajectory": [frame(s, -1.0 * k, atoms=atoms(X0 + k, s)) for s in range(k % 3)],
    }


def own(k: int) -> dict[str, Any]:
    return {"k": k, "label": None if k % 5 == 0 else f"m{k}"}


def grow(col: mrecd.Collection, start: int, stop: int, *, one_by_one: bool = False) -> None:
    if one_by_one:
        for k in range(start, stop):
            assert col.append(record(k), index=own(k)) == k
    else:
        assert col.extend(
            [record(k) for k in range(start, stop)], index=[own(k) for k in range(start, stop)]
        ) == range(start, stop)


def check(col: mrecd.Collection, n: int) -> None:
    assert len(col) == n
    assert col.n_frames == sum(k % 3 for k in range(n))
    index = col.index
    assert index["k"].values.tolist() == list(range(n))
    assert index["n_frames"].values.tolist() == [k % 3 for k in range(n)]
    assert index["label"].validity is not None
    assert index["label"].validity.tolist() == [k % 5 != 0 for k in range(n)]
    for k in sorted({0, 1, PAGE_ROWS - 1, PAGE_ROWS, PAGE_ROWS + 1, n - 1} & set(range(n))):
        rec = col[k]
        assert rec.meta == {"k": k}
        assert len(rec.trajectory) == k % 3
        if k % 3:
            assert rec.trajectory[-1]["atoms"]["x"].values.tolist() == (X0 + k + k % 3 - 1).tolist()


def page_keys(path: Path) -> list[int]:
    return [
        int.from_bytes(key[1:], "big") for key in keys(path) if len(key) == 9 and key[:1] == b"i"
    ]


@pytest.fixture(scope="module")
def built(tmp_path_factory: pytest.TempPathFactory) -> Path:
    """2.5 pages of rows, grown by extends and single appends across the page edges."""
    path = tmp_path_factory.mktemp("paged") / "paged.mrec.lmdb"
    with new(path, index_columns=OWN) as col:
        grow(col, 0, PAGE_ROWS - 2)
        grow(col, PAGE_ROWS - 2, PAGE_ROWS + 3, one_by_one=True)  # crosses into pages
        grow(col, PAGE_ROWS + 3, 2 * PAGE_ROWS + 1)
        grow(col, 2 * PAGE_ROWS + 1, 2 * PAGE_ROWS + PAGE_ROWS // 2, one_by_one=True)
    return path


@pytest.fixture
def paged(built: Path, tmp_path: Path) -> Path:
    """A copy of the built file (the lock file is not copied: LMDB makes a fresh one)."""
    path = tmp_path / "paged.mrec.lmdb"
    shutil.copyfile(built, path)
    return path


N_PAGED = 2 * PAGE_ROWS + PAGE_ROWS // 2


def test_small_collections_keep_the_one_index_value(tmp_path: Path) -> None:
    path = tmp_path / "small.mrec.lmdb"
    with new(path, index_columns=OWN) as col:
        grow(col, 0, PAGE_ROWS)
    assert b"index" in keys(path) and not page_keys(path)
    assert INDEX_PAGES not in meta_of(path)


def test_past_one_page_the_index_is_paged(paged: Path) -> None:
    values = keys(paged)
    assert b"index" not in values
    assert page_keys(paged) == [0, 1, 2]
    assert meta_of(paged)[INDEX_PAGES] == PAGE_ROWS
    counts = [decode_blocks(values[index_page_key(p)])[0]["records"].count for p in range(3)]
    assert counts == [PAGE_ROWS, PAGE_ROWS, PAGE_ROWS // 2]
    with mrecd.open_collection(paged) as col:
        check(col, N_PAGED)


def test_an_append_rewrites_only_the_last_page(paged: Path) -> None:
    with mrecd.open_collection(paged, "r+") as col:
        before = snapshot(col)
        col.append(record(N_PAGED), index=own(N_PAGED))
        after = snapshot(col)
    changed = {key for key in after if before.get(key) != after[key]}
    index_keys = {key for key in changed if key in (b"meta", b"index") or key[:1] == b"i"}
    assert index_keys == {b"meta", index_page_key(2)}


def test_reopened_writer_and_fresh_reader_agree(paged: Path) -> None:
    with mrecd.open_collection(paged, "r+") as col:
        grow(col, N_PAGED, N_PAGED + PAGE_ROWS, one_by_one=False)
        check(col, N_PAGED + PAGE_ROWS)
    with mrecd.open_collection(paged) as col:
        check(col, N_PAGED + PAGE_ROWS)
    assert page_keys(paged) == [0, 1, 2, 3]


def test_compact_returns_to_the_one_index_value(paged: Path, tmp_path: Path) -> None:
    copy = tmp_path / "copy.mrec.lmdb"
    with mrecd.open_collection(paged) as col:
        col.compact(copy)
        expected = col.index
    values = keys(copy)
    assert not page_keys(copy) and INDEX_PAGES not in meta_of(copy)
    (stored,) = decode_blocks(values[b"index"])[0].values()
    assert stored == expected
    source = keys(paged)
    same = {k: v for k, v in source.items() if k != b"meta" and not (len(k) == 9 and k[:1] == b"i")}
    assert {k: v for k, v in values.items() if k not in (b"meta", b"index")} == same
    with mrecd.open_collection(copy, "r+") as col:
        check(col, N_PAGED)
        col.append(record(N_PAGED), index=own(N_PAGED))  # paged again
        check(col, N_PAGED + 1)
    assert page_keys(copy) == [0, 1, 2]


def _to_todays_layout(path: Path) -> None:
    """Rewrite a paged file by hand as today's writer leaves it: one ``index``
    value with every row, no page keys, lmdb.md §3's six meta keys."""
    with raw(path, write=True) as txn:
        pages = sorted(bytes(k) for k, _ in txn.cursor() if len(k) == 9 and bytes(k)[:1] == b"i")
        blocks = [decode_blocks(bytes(txn.get(k)), copy=True)[0]["records"] for k in pages]
        columns = {name: np.concatenate([b[name].values for b in blocks]) for name in blocks[0]}
        masks = np.concatenate([b["label"].validity for b in blocks])
        joined = mrecd.model.Block(
            {
                n: mrecd.model.Column(v, validity=masks if n == "label" else None)
                for n, v in columns.items()
            }
        )
        for key in pages:
            txn.delete(key)
        txn.put(b"index", encode_blocks({"records": joined}, {"meta": {}}))
    meta = meta_of(path)
    del meta[INDEX_PAGES]
    put_meta(path, meta)


def test_a_file_in_todays_layout_opens_reads_and_appends(paged: Path) -> None:
    _to_todays_layout(paged)
    assert b"index" in keys(paged) and not page_keys(paged)
    with mrecd.open_collection(paged) as col:
        check(col, N_PAGED)
    with mrecd.open_collection(paged, "r+") as col:
        col.append(record(N_PAGED), index=own(N_PAGED))
        check(col, N_PAGED + 1)
    assert b"index" not in keys(paged) and page_keys(paged) == [0, 1, 2]
    with mrecd.open_collection(paged) as col:
        check(col, N_PAGED + 1)


def test_compact_in_place(paged: Path) -> None:
    with mrecd.open_collection(paged, "r+") as col, mrecd.open_collection(paged) as reader:
        size = paged.stat().st_size
        held = reader[PAGE_ROWS + 3].trajectory  # 2 frames
        col.compact()
        assert paged.stat().st_size < size
        values = snapshot(col)
        assert b"index" in values and not [k for k in values if len(k) == 9 and k[:1] == b"i"]
        assert INDEX_PAGES not in json.loads(values[b"meta"])
        check(col, N_PAGED)
        check(reader, N_PAGED)  # the same process switched to the new file
        assert held[1]["atoms"]["x"].values.tolist() == (X0 + PAGE_ROWS + 4).tolist()
        col.append(record(N_PAGED), index=own(N_PAGED))
        check(reader, N_PAGED + 1)
    assert not [p for p in paged.parent.iterdir() if "compacting" in p.name]
    with mrecd.open_collection(paged) as col:
        check(col, N_PAGED + 1)


def test_compact_in_place_needs_r_plus(paged: Path) -> None:
    with mrecd.open_collection(paged) as col, pytest.raises(mrecd.ReadOnlyError, match="r\\+"):
        col.compact()


# -- refusals -------------------------------------------------------------------------------


def _tamper(path: Path, edit: Any) -> None:
    with raw(path, write=True) as txn:
        edit(txn)


def _repage(p: int, rows: slice) -> Any:
    def edit(txn: Any) -> None:
        blocks, _ = decode_blocks(bytes(txn.get(index_page_key(p))), copy=True)
        records = blocks["records"]
        cut = mrecd.model.Block({n: c.values[rows] for n, c in records.items() if n != "label"})
        txn.put(index_page_key(p), encode_blocks({"records": cut}, {"meta": {}}))

    return edit


@pytest.mark.parametrize(
    ("edit", "match"),
    [
        (lambda txn: txn.delete(index_page_key(1)), r"index page 1 \(key i‖1\) is missing"),
        (
            lambda txn: txn.put(index_page_key(3), txn.get(index_page_key(2))),
            "index page 3 exists past",
        ),
        (lambda txn: txn.put(b"index", txn.get(index_page_key(0))), "ambiguous"),
        (
            _repage(2, slice(0, 10)),
            r"index page 2 has 10 rows; with \d+ records in pages of 512 it holds 256",
        ),
        (_repage(1, slice(None)), "index page 1's columns differ from page 0's"),
    ],
)
def test_page_refusals(paged: Path, edit: Any, match: str) -> None:
    _tamper(paged, edit)
    with pytest.raises(mrecd.InvalidRecord, match=match):
        mrecd.open_collection(paged)


@pytest.mark.parametrize("value", [0, -1, "512", None, True, 2**30])
def test_bad_rows_per_page_is_refused(paged: Path, value: Any) -> None:
    meta = meta_of(paged)
    meta[INDEX_PAGES] = value
    put_meta(paged, meta)
    with pytest.raises(
        mrecd.InvalidRecord, match=f"meta.{INDEX_PAGES}: {INDEX_PAGES} is the index's rows per page"
    ):
        mrecd.open_collection(paged)


def test_a_prefix_sum_broken_across_pages_is_refused(paged: Path) -> None:
    def shift(txn: Any) -> None:
        blocks, _ = decode_blocks(bytes(txn.get(index_page_key(1))), copy=True)
        records = dict(blocks["records"].columns)
        first = records["first_frame"].values.copy()
        first += np.uint64(1)
        records["first_frame"] = mrecd.model.Column(first)
        txn.put(
            index_page_key(1), encode_blocks({"records": mrecd.model.Block(records)}, {"meta": {}})
        )

    _tamper(paged, shift)
    with pytest.raises(mrecd.InvalidRecord, match=rf"first_frame\[{PAGE_ROWS}\] is"):
        mrecd.open_collection(paged)


def test_meta_key_of_the_extension_is_json(paged: Path) -> None:
    assert json.loads(keys(paged)[b"meta"])[INDEX_PAGES] == PAGE_ROWS


def test_a_writer_refuses_a_file_replaced_under_it(paged: Path, tmp_path: Path) -> None:
    """What another process's in-place compaction looks like from here: the path
    now names another file, so an append would land in the unlinked old one."""
    copy = tmp_path / "copy.mrec.lmdb"
    with mrecd.open_collection(paged, "r+") as col:
        shutil.copyfile(paged, copy)
        os.replace(copy, paged)
        with pytest.raises(mrecd.RetryableError, match="reopen the collection"):
            col.append(record(N_PAGED), index=own(N_PAGED))
        check(col, N_PAGED)  # still reads its snapshot
    with mrecd.open_collection(paged, "r+") as col:
        assert col.append(record(N_PAGED), index=own(N_PAGED)) == N_PAGED
