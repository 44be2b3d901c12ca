"""The directory store's whole-object puts leave nothing behind but the key."""

from __future__ import annotations

from pathlib import Path

import pytest

from mrecd.errors import PreconditionFailed
from mrecd.storage import DirectoryStore, IfMatch


def _files(root: Path) -> list[str]:
    """Every file under ``root``, hidden ones and lock files included."""
    return sorted(str(p.relative_to(root)) for p in root.rglob("*") if p.is_file())


def test_puts_of_every_mode_leave_only_the_key(tmp_path: Path) -> None:
    store = DirectoryStore(tmp_path)
    etag = store.put("a/b/doc", b"1", mode="create")
    etag = store.put("a/b/doc", b"2", mode=IfMatch(etag))
    store.put("a/b/doc", b"3")
    store.put("fresh/deeper/doc", b"4")  # parents made on demand
    assert store.get("a/b/doc") == b"3"
    assert store.get("fresh/deeper/doc") == b"4"
    leftovers = [f for f in _files(tmp_path) if f not in ("a/b/doc", "fresh/deeper/doc")]
    assert leftovers == ["a/b/.doc.lock"]  # the conditional put's lock file, nothing else


@pytest.mark.parametrize("mode", ["create", "if-match"])
def test_a_refused_put_leaves_the_old_object_and_no_temporary(tmp_path: Path, mode: str) -> None:
    store = DirectoryStore(tmp_path)
    store.put("k/doc", b"old")
    with pytest.raises(PreconditionFailed):
        store.put("k/doc", b"new", mode="create" if mode == "create" else IfMatch('"stale"'))
    assert store.get("k/doc") == b"old"
    assert not [f for f in _files(tmp_path) if f.endswith(".tmp")]


def test_a_failed_write_removes_its_temporary(tmp_path: Path) -> None:
    store = DirectoryStore(tmp_path)
    store.put("k/doc", b"old")
    with pytest.raises(TypeError):
        store.put("k/doc", object())  # type: ignore[arg-type]
    assert store.get("k/doc") == b"old"
    assert _files(tmp_path) == ["k/doc"]
