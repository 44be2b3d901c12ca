"""Reading the ragged trajectory layout (trajectory.md §2-§10, seed 000).

Frame ``i`` resolves per block by a binary search over that block's
``step_index`` (O(log n_updates) chunk reads, decoded chunks cached) or by
arithmetic for a regular block, then reads only the inner chunks holding the
update's rows. Every array is read to its logical length, bound by ``nstep``;
longer arrays (an uncommitted tail) are tolerated, shorter ones refused.
"""

from __future__ import annotations

from bisect import bisect_left
from collections import OrderedDict
from collections.abc import Iterable, Mapping, Sequence
from typing import Any, Final

import numpy as np
import numpy.typing as npt

from ...errors import InvalidRecord
from ...model import (
    DTYPE_OF_ZARR,
    TAG_LAYOUT,
    Block,
    Box,
    Column,
    Declaration,
    Frame,
    check_tag,
    loads_strict,
    on_grid,
)
from ._producers import ATTRIBUTE as PRODUCERS
from ._producers import ProducerTable
from ._shard import ArrayReader
from ._tree import Tree, join

__all__ = ["BlockReader", "TrajectoryReader", "read_group_attributes"]

RESERVED_CHILDREN: Final = frozenset({"step", "time", "meta", "box"})


def read_group_attributes(tree: Tree, key: str) -> dict[str, Any] | None:
    """Attributes of the Zarr group at ``key`` (``None`` when there is no node)."""
    node = tree.node(key)
    if node is None:
        return None
    if node.kind != "group":
        raise InvalidRecord(f"expected a Zarr group, found an {node.kind}", path=key)
    return node.attributes


def _open_array(tree: Tree, key: str) -> ArrayReader | None:
    node = tree.node(key)
    if node is None:
        return None
    if node.kind != "array":
        raise InvalidRecord("expected a Zarr array, found a group", path=key)
    zarr_type = node.metadata.get("data_type")
    if zarr_type not in DTYPE_OF_ZARR:
        raise InvalidRecord(
            f"data_type {zarr_type!r} is not a column dtype (float32/float16 are refused,"
            " never widened;"
            " fixed-length strings and raw bytes are not columns, frame.md §2)",
            path=key,
        )
    reader = ArrayReader(tree, key, node.metadata)
    old = tree.retired.pop(key, None)
    if old is not None:
        reader.adopt(old)
        old.close()
    tree.readers[key] = reader
    return reader


def _int_attr(value: Any, name: str, path: str, *, positive: bool = False) -> int:
    if isinstance(value, bool) or not isinstance(value, int) or value < (1 if positive else 0):
        kind = "positive" if positive else "non-negative"
        raise InvalidRecord(
            f"{name} must be a {kind} integer, not {value!r} (trajectory.md §5.4)", path=path
        )
    return value


_INDEX_CHUNK_CACHE: Final = 1024  # decoded chunks of one index array kept (8 KiB each at most)
_INDEX_LIST_CACHE: Final = 256  # of those, kept as Python ints too (what a search compares)


class _IndexArray:
    """Entries of a dense u64 index array (``step_index`` / ``offset``), read chunk by chunk.

    A search decodes only the chunks its bisection visits (O(log n) of them,
    kept in a cache), never the whole array. Visited chunks are also kept as
    lists of Python ints: a frame read makes about ten lookups, and a list
    index or ``bisect`` costs a fraction of a numpy scalar access.
    """

    def __init__(self, reader: ArrayReader, name: str) -> None:
        if reader.dtype != "u64" or len(reader.shape) != 1:
            raise InvalidRecord(f"{name} must be u64[n]", path=reader.key)
        reader.cache_chunks = _INDEX_CHUNK_CACHE
        self.reader = reader
        self.length = reader.shape[0]
        self._rows = reader.inner_rows if reader._fast else 0
        self._lists: OrderedDict[int, list[int]] = OrderedDict()

    def _entries(self, chunk: int) -> list[int]:
        """Inner chunk ``chunk`` as Python ints (its decoded chunk is cached by the reader)."""
        found = self._lists.get(chunk)
        if found is None:
            found = self.reader.chunk_of(chunk).tolist()
            if len(self._lists) >= _INDEX_LIST_CACHE:
                self._lists.popitem(last=False)
            self._lists[chunk] = found
        return found

    def __getitem__(self, k: int) -> int:
        if self._rows:
            chunk, within = divmod(k, self._rows)
            return self._entries(chunk)[within]
        return int(self.reader.read(k, k + 1)[0])

    def count_below(self, value: int, limit: int) -> int:
        """Number of leading entries ``< value`` among the first ``limit`` (ascending entries)."""
        n = min(limit, self.length)
        if not self._rows:
            lo, hi = 0, n
            while lo < hi:
                mid = (lo + hi) // 2
                if self[mid] < value:
                    lo = mid + 1
                else:
                    hi = mid
            return lo
        rows = self._rows
        lo, hi = 0, -(-n // rows)  # bisect chunks by their first entry
        while hi - lo > 1:
            mid = (lo + hi) // 2
            if self._entries(mid)[0] < value:
                lo = mid
            else:
                hi = mid
        if n == 0:
            return 0
        # the same binary search as numpy's searchsorted(side="left"), on the ints
        return lo * rows + bisect_left(self._entries(lo), value, 0, min(rows, n - lo * rows))

    def all(self, n: int) -> npt.NDArray[np.uint64]:
        return self.reader.read(0, n).astype(np.uint64)


class BlockReader:
    """One declared block's group: markers or index, columns, masks."""

    def __init__(self, tree: Tree, path: str, name: str, spec: Any, nstep: int) -> None:
        self.path = path
        self.name = name
        self.spec = spec
        attributes = read_group_attributes(tree, path) or {}
        self.markers = "uniform_rows" in attributes or "dense_updates" in attributes
        uniform = attributes.get("uniform_rows")
        dense = attributes.get("dense_updates")
        self.columns: dict[str, ArrayReader] = {}
        for column, cspec in spec.columns.items():
            array = _open_array(tree, join(path, column))
            if array is None:
                continue
            if array.dtype != cspec.dtype or array.shape[1:] != tuple(cspec.trailing):
                raise InvalidRecord(
                    f"stored as {array.dtype}{list(array.shape[1:])}, declared"
                    f" {cspec.dtype}{list(cspec.trailing)}",
                    path=join(path, column),
                )
            self.columns[column] = array
        self.masks: dict[str, ArrayReader] = {}
        for column, cspec in spec.columns.items():
            mask = _open_array(tree, join(path, "_validity", column)) if cspec.nullable else None
            if mask is not None:
                if mask.dtype != "bool" or len(mask.shape) != 1:
                    raise InvalidRecord("a validity mask is bool[total_rows]", path=mask.key)
                self.masks[column] = mask
        step_index = _open_array(tree, join(path, "step_index"))
        offset = _open_array(tree, join(path, "offset"))
        if step_index is not None and offset is None:
            raise InvalidRecord("step_index without offset: they come as a pair", path=path)
        # offset without step_index is what a commit cut short leaves (writers put
        # offset first): no update of it is committed, so it is ignored.
        self.indexed = step_index is not None and offset is not None
        self.uniform_rows = 0
        if self.indexed:  # arrays win over markers left by a crash between the two writes
            assert step_index is not None and offset is not None
            self.step_index = _IndexArray(step_index, "step_index")
            self.offset = _IndexArray(offset, "offset")
            self.n_updates = self.step_index.count_below(nstep, self.step_index.length)
            # With no committed update the block is absent whatever its arrays hold
            # (a writer killed during the block's first commit leaves them partial).
            if self.n_updates and self.offset.length < self.n_updates + 1:
                raise InvalidRecord(
                    f"offset holds {self.offset.length} entries, the logical length is"
                    f" {self.n_updates + 1}",
                    path=join(path, "offset"),
                )
            self.total_rows = self.offset[self.n_updates] if self.n_updates else 0
        elif uniform is not None or dense is not None:
            if uniform is None or dense is not True:
                raise InvalidRecord(
                    "uniform_rows and dense_updates: true are a pair (trajectory.md §5.4)",
                    path=path,
                )
            self.uniform_rows = _int_attr(uniform, "uniform_rows", path, positive=True)
            if not spec.columns:
                raise InvalidRecord("elision markers on a block with no columns", path=path)
            if len(self.columns) != len(spec.columns):
                raise InvalidRecord("a regular block lacks a declared column array", path=path)
            shortest = min(a.shape[0] for a in self.columns.values())
            self.n_updates = min(shortest // self.uniform_rows, nstep)
            self.total_rows = self.n_updates * self.uniform_rows
        else:  # a declared block with no updates
            self.n_updates = 0
            self.total_rows = 0
        self._mark_committed()
        self._check_lengths()
        #: (column, array, mask, dtype) of each declared column in order, for rows()
        self._plan = [
            (c, self.columns[c], self.masks.get(c), cspec.dtype)
            for c, cspec in spec.columns.items()
            if c in self.columns  # all of them when there are updates (_check_lengths)
        ]

    def _mark_committed(self) -> None:
        """Tell each array how many of its rows are committed (their chunks never change)."""
        for array in [*self.columns.values(), *self.masks.values()]:
            array.committed_rows = self.total_rows
        if self.indexed:
            self.step_index.reader.committed_rows = self.n_updates
            self.offset.reader.committed_rows = self.n_updates + 1

    def _check_lengths(self) -> None:
        if not self.n_updates:
            return
        for column in self.spec.columns:
            array = self.columns.get(column)
            if array is None:
                raise InvalidRecord(f"declared column {column!r} has no array", path=self.path)
            if array.shape[0] < self.total_rows:
                raise InvalidRecord(
                    f"holds {array.shape[0]} rows, shorter than the logical {self.total_rows}",
                    path=array.key,
                )
        for mask in self.masks.values():
            if mask.shape[0] < self.total_rows:
                raise InvalidRecord(
                    f"mask holds {mask.shape[0]} rows, shorter than the logical {self.total_rows}",
                    path=mask.key,
                )

    def locate(self, i: int) -> tuple[int, int, int] | None:
        """``(update j, first row, stop row)`` frame ``i`` resolves to; ``None`` when absent."""
        if not self.n_updates:
            return None
        if not self.indexed:
            j = min(i, self.n_updates - 1)
            return j, j * self.uniform_rows, (j + 1) * self.uniform_rows
        j = self.step_index.count_below(i + 1, self.n_updates) - 1
        if j < 0:
            return None
        here = self.step_index[j]
        for k in (j - 1, j + 1):  # the neighbours of the entry found must be strictly ordered
            if 0 <= k < self.n_updates and (self.step_index[k] < here) != (k < j):
                raise InvalidRecord(
                    f"step_index repeats or decreases around update {j}",
                    path=join(self.path, "step_index"),
                )
        start, stop = self.offset[j], self.offset[j + 1]
        if stop < start:
            raise InvalidRecord(
                f"offset decreases at update {j} ({start} then {stop})",
                path=join(self.path, "offset"),
            )
        if stop > self.total_rows:
            raise InvalidRecord(
                f"offset {stop} is past the logical {self.total_rows} rows", path=self.path
            )
        return j, start, stop

    def rows(self, start: int, stop: int, columns: Iterable[str] | None = None) -> Block:
        """The block holding rows ``[start, stop)`` of the selected columns (masks applied)."""
        plan = self._plan if columns is None else [p for p in self._plan if p[0] in columns]
        built: dict[str, Column] = {}
        for column, array, mask, dtype in plan:
            values = array.read(start, stop)
            validity = None if mask is None else mask.read(start, stop)
            built[column] = Column._trusted(values, dtype, validity)
        return Block._trusted(
            built, stop - start, self.spec.structural_shape, self.spec.targets, None
        )

    def close(self) -> None:
        """Release the shard entries of this block's arrays."""
        arrays = [*self.columns.values(), *self.masks.values()]
        if self.indexed:
            arrays += [self.step_index.reader, self.offset.reader]
        for array in arrays:
            array.close()

    def validate(self) -> list[tuple[str, str]]:
        """Whole-array checks a resolving reader makes only locally: ``[(path, message)]``."""
        problems: list[tuple[str, str]] = []
        if self.indexed and self.n_updates:
            steps = self.step_index.all(self.n_updates)
            if len(steps) > 1 and not bool(np.all(np.diff(steps.astype(np.int64)) > 0)):
                problems.append(
                    (
                        join(self.path, "step_index"),
                        "step_index repeats or decreases (trajectory.md §5.1)",
                    )
                )
            offsets = self.offset.all(self.n_updates + 1).astype(np.int64)
            if offsets[0] != 0:
                problems.append(
                    (join(self.path, "offset"), "offset[0] must be 0 (trajectory.md §5.1)")
                )
            if len(offsets) > 1 and not bool(np.all(np.diff(offsets) >= 0)):
                problems.append(
                    (join(self.path, "offset"), "offset is not monotonic (trajectory.md §5.1)")
                )
        return problems

    def counts(self) -> list[tuple[int, int]]:
        """``[(ordinal, row count)]`` of every committed update (for alignment checks)."""
        if not self.n_updates:
            return []
        if not self.indexed:
            return [(j, self.uniform_rows) for j in range(self.n_updates)]
        steps = self.step_index.all(self.n_updates)
        offsets = self.offset.all(self.n_updates + 1).astype(np.int64)
        return [(int(s), int(c)) for s, c in zip(steps, np.diff(offsets), strict=True)]


class TrajectoryReader:
    """The committed frames of ``<root>/trajectory``.

    Parameters
    ----------
    root
        The record root directory.
    system
        The record's ``system`` blocks, to hold same-named blocks to their row count.
    """

    def __init__(self, tree: Tree, *, system: Mapping[str, Block] | None = None) -> None:
        self.tree = tree
        self.path = "trajectory"
        self.system = dict(system or {})
        self.refresh()

    # -- group-level state -----------------------------------------------------------------

    def refresh(self) -> bool:
        """Re-read the commit marker; returns whether ``nstep`` (or anything) changed."""
        attributes = read_group_attributes(self.tree, self.path)
        if attributes is None:
            raise InvalidRecord("no trajectory group", path=self.path)
        previous = getattr(self, "_attributes", None)
        if previous == attributes:
            return False
        self._attributes = attributes
        if "sequence_schema" in attributes:
            self.declaration = Declaration.from_dict(attributes["sequence_schema"])
            self.foreign = False
        else:
            self.declaration = self._derive_declaration()
            self.foreign = True
        #: what every whole-frame read walks, computed once per state
        self._names = tuple(self.declaration.blocks)
        self._aligned = any(b.aligned_with is not None for b in self.declaration.blocks.values())
        self.tree.retire_readers()  # committed chunks carry over to the new readers
        self._blocks: dict[str, BlockReader | None] = {}
        self._dense: dict[str, ArrayReader | None] = {}
        self._box: Any = None
        self.step_progression = self._progression("step_progression", int)
        self.time_progression = self._progression("time_progression", float)
        if "nstep" in attributes:
            self.nstep = _int_attr(attributes["nstep"], "nstep", self.path)
        else:
            if self.step_progression is not None or self.time_progression is not None:
                raise InvalidRecord(
                    "a progression attribute without nstep is malformed (trajectory.md §3.1)",
                    path=self.path,
                )
            step = self._dense_array("step")
            self.nstep = 0 if step is None else step.shape[0]
        if self.step_progression is None:
            step = self._dense_array("step")
            if self.nstep and (step is None or step.shape[0] < self.nstep):
                raise InvalidRecord(
                    f"steps are neither a progression nor a step array of length >= nstep"
                    f" {self.nstep}",
                    path=join(self.path, "step"),
                )
        return True

    def attribute(self, name: str) -> Any:
        """The committed marker's attribute ``name`` as stored (``None`` when absent)."""
        return self._attributes.get(name)

    def _progression(self, name: str, kind: type) -> dict[str, Any] | None:
        value = self._attributes.get(name)
        if value is None:
            return None
        ok = isinstance(value, dict) and set(value) <= {"start", "stride"} and "start" in value
        if ok and kind is int:
            ok = all(isinstance(v, int) and not isinstance(v, bool) for v in value.values())
        if ok and kind is float:
            ok = all(
                isinstance(v, (int, float)) and not isinstance(v, bool) for v in value.values()
            )
        if not ok:
            raise InvalidRecord(f"{name} must be {{start, stride?}} numbers", path=self.path)
        return {k: kind(v) for k, v in value.items()}

    def _derive_declaration(self) -> Declaration:
        """A foreign store without sequence_schema: declare what its groups hold."""
        blocks: dict[str, Any] = {}
        meta: dict[str, Any] = {}
        for name, node in self.tree.children(self.path).items():
            key = join(self.path, name)
            if name == "meta":
                for array_name, array in self.tree.children(key).items():
                    tag = array.attributes.get("meta_dtype") if array.kind == "array" else None
                    if tag is None:
                        raise InvalidRecord(
                            "a meta array carries meta_dtype (trajectory.md §3.3)",
                            path=join(key, array_name),
                        )
                    meta[array_name] = {"dtype": tag}
                continue
            if name in RESERVED_CHILDREN or node.kind != "group":
                continue
            columns = {}
            masks = self.tree.children(join(key, "_validity"))
            for column, child in self.tree.children(key).items():
                if column in ("step_index", "offset", "_validity") or child.kind != "array":
                    continue
                reader = _open_array(self.tree, join(key, column))
                assert reader is not None
                columns[column] = {
                    "dtype": reader.dtype,
                    "trailing": list(reader.shape[1:]),
                    "nullable": column in masks,
                }
            if columns:
                blocks[name] = {"columns": columns}
        return Declaration.from_dict({"blocks": blocks, "meta": meta}, path=self.path)

    def _close_readers(self) -> None:
        for reader in getattr(self, "_blocks", {}).values():
            if reader is not None:
                reader.close()
        for array in getattr(self, "_dense", {}).values():
            if array is not None:
                array.close()
        box = getattr(self, "_box", None)
        if box:
            box.close()

    def close(self) -> None:
        """Release the shard entries held open."""
        self._close_readers()

    # -- parts -------------------------------------------------------------------------------

    def block(self, name: str) -> BlockReader | None:
        """The reader of declared block ``name`` (``None``: no group, absent everywhere)."""
        if name not in self._blocks:
            spec = self.declaration.blocks[name]
            path = join(self.path, name)
            exists = read_group_attributes(self.tree, path) is not None
            self._blocks[name] = (
                BlockReader(self.tree, path, name, spec, self.nstep) if exists else None
            )
        return self._blocks[name]

    def dense_array(self, key: str) -> ArrayReader | None:
        """The dense array ``key`` (``step``, ``time``) when it exists."""
        return self._dense_array(key)

    def _dense_array(self, key: str) -> ArrayReader | None:
        if key not in self._dense:
            array = _open_array(self.tree, join(self.path, key))
            if array is not None:
                array.committed_rows = getattr(self, "nstep", 0)
            self._dense[key] = array
        return self._dense[key]

    def meta_array(self, key: str) -> ArrayReader:
        """``meta/<key>``, checked against its ``meta_dtype`` and the declaration."""
        name = f"meta/{key}"
        if name not in self._dense:
            where = join(self.path, "meta", key)
            array = _open_array(self.tree, where)
            if array is None:
                raise InvalidRecord("declared meta key has no array", path=where)
            tag = array.metadata.get("attributes", {}).get("meta_dtype")
            if tag is None:
                raise InvalidRecord(
                    "a meta array carries meta_dtype (trajectory.md §3.3)", path=where
                )
            check_tag(tag, path=where)
            declared = self.declaration.meta[key].dtype
            if tag != declared:
                raise InvalidRecord(
                    f"meta_dtype {tag!r} differs from the declared {declared!r}", path=where
                )
            element, width = TAG_LAYOUT[tag]
            stored = "string" if element == "json" else element
            trailing = () if width is None else (width,)
            if array.dtype != stored or array.shape[1:] != trailing:
                raise InvalidRecord(
                    f"stored as {array.dtype}{list(array.shape[1:])} but meta_dtype {tag!r}"
                    " prescribes"
                    f" {stored}{list(trailing)}",
                    path=where,
                )
            if array.shape[0] < self.nstep:
                raise InvalidRecord(
                    f"holds {array.shape[0]} steps, nstep is {self.nstep}", path=where
                )
            array.committed_rows = self.nstep
            self._dense[name] = array
        array = self._dense[name]
        assert array is not None
        return array

    # -- values at one ordinal ---------------------------------------------------------------

    def step_at(self, i: int) -> int:
        """Step number of frame ``i``."""
        if self.step_progression is not None:
            return int(self.step_progression["start"] + i * self.step_progression.get("stride", 0))
        step = self._dense_array("step")
        assert step is not None
        return int(step.read(i, i + 1)[0])

    def time_at(self, i: int) -> float | None:
        """Time of frame ``i`` (``None`` in a run without times)."""
        if self.time_progression is not None:
            start = float(self.time_progression["start"])
            return start + float(i) * float(self.time_progression.get("stride", 0.0))
        time = self._dense_array("time")
        if time is None:
            return None
        if time.shape[0] < self.nstep:
            raise InvalidRecord(
                f"holds {time.shape[0]} times, nstep is {self.nstep}", path=time.key
            )
        return float(time.read(i, i + 1)[0])

    def meta_at(self, i: int) -> tuple[dict[str, Any], dict[str, str]]:
        """Every declared per-step key's value at frame ``i``, with the tags."""
        values: dict[str, Any] = {}
        tags: dict[str, str] = {}
        for key, spec in self.declaration.meta.items():
            raw = self.meta_array(key).read(i, i + 1)[0]
            values[key] = held_meta_value(spec.dtype, raw)
            tags[key] = spec.dtype
        return values, tags

    def box_at(self, i: int) -> Box | None:
        """The cell frame ``i`` resolves to (carry-forward), or ``None``."""
        box = self._box_reader()
        return None if box is None else box.at(i)

    def _box_reader(self) -> _BoxReader | None:
        if self._box is None:
            key = join(self.path, "box")
            attributes = read_group_attributes(self.tree, key)
            self._box = (
                False if attributes is None else _BoxReader(self.tree, key, attributes, self.nstep)
            )
        return self._box or None

    # -- frames ------------------------------------------------------------------------------

    def frame(
        self, i: int, *, blocks: Iterable[str] | None = None, columns: Iterable[str] | None = None
    ) -> Frame:
        """Frame ``i`` resolved: present and empty blocks, every meta key, step, time, cell.

        ``blocks`` and ``columns`` project: only those arrays are read.
        """
        if not 0 <= i < self.nstep:
            raise IndexError(f"frame {i} is outside the {self.nstep} committed frames")
        if blocks is None:
            names: Sequence[str] = self._names
        else:
            names = list(blocks)
            unknown = set(names) - set(self.declaration.blocks)
            if unknown:
                raise InvalidRecord(f"blocks {sorted(unknown)} are not declared", path=self.path)
        wanted = None if columns is None else set(columns)
        located: dict[str, tuple[BlockReader, tuple[int, int, int]]] = {}
        for name in names:
            reader = self.block(name)
            where = None if reader is None else reader.locate(i)
            if reader is not None and where is not None:
                located[name] = (reader, where)
        if self.system or self._aligned:  # the only rules _check_alignment holds frames to
            self._check_alignment(i, located)
        resolved = {name: reader.rows(w[1], w[2], wanted) for name, (reader, w) in located.items()}
        if self.system:
            for name, block in resolved.items():
                self._check_system_ids(name, block, f"frame {i}")
        meta, tags = self.meta_at(i)
        return Frame._trusted(
            resolved, meta, tags, self.box_at(i), self.step_at(i), self.time_at(i)
        )

    def _check_system_ids(self, name: str, block: Block, where: str) -> None:
        """Same-named system and trajectory blocks that both carry ``id`` agree row for row
        (record.md §6.1, trajectory.md §1.5); checked on the ids a read resolves."""
        system = self.system.get(name)
        if system is None or "id" not in system or "id" not in block:
            return
        ours, theirs = block["id"], system["id"]
        valid = np.ones(block.count, dtype=bool)
        for column in (ours, theirs):
            if column.validity is not None:
                valid &= np.asarray(column.validity, dtype=bool)
        if not np.array_equal(np.asarray(ours.values)[valid], np.asarray(theirs.values)[valid]):
            raise InvalidRecord(
                f"{where}: id differs from system/{name}/id row for row (record.md §6.1)",
                path=join(self.path, name, "id"),
            )

    def _check_alignment(self, i: int, located: Mapping[str, Any]) -> None:
        for name, (_, (_, start, stop)) in located.items():
            system = self.system.get(name)
            if system is not None and stop - start != system.count:
                raise InvalidRecord(
                    f"frame {i}: {stop - start} rows but system/{name} has {system.count}"
                    " (trajectory.md §1.5)",
                    path=join(self.path, name),
                )
            target = self.declaration.blocks[name].aligned_with
            if target is None:
                continue
            if target in located:
                target_rows = located[target][1][2] - located[target][1][1]
            else:
                reader = self.block(target)
                where = None if reader is None else reader.locate(i)
                if where is None:
                    raise InvalidRecord(
                        f"frame {i}: aligned block present while its target {target!r} is absent",
                        path=join(self.path, name),
                    )
                target_rows = where[2] - where[1]
            if target_rows != stop - start:
                raise InvalidRecord(
                    f"frame {i}: aligned block has {stop - start} rows, its target {target!r} has"
                    f" {target_rows} (trajectory.md §7.2)",
                    path=join(self.path, name),
                )

    # -- whole series ------------------------------------------------------------------------

    def steps(self) -> npt.NDArray[np.int64]:
        """All ``nstep`` step numbers."""
        if self.step_progression is not None:
            stride = int(self.step_progression.get("stride", 0))
            start = int(self.step_progression["start"])
            steps: npt.NDArray[np.int64] = start + np.arange(self.nstep, dtype=np.int64) * stride
            return steps
        step = self._dense_array("step")
        return np.empty(0, np.int64) if step is None else step.read(0, self.nstep).astype(np.int64)

    def times(self) -> npt.NDArray[np.float64] | None:
        """All times, or ``None`` in a run without times (binary64 progression arithmetic)."""
        if self.time_progression is not None:
            start = self.time_progression["start"]
            stride = self.time_progression.get("stride", 0.0)
            return np.array(
                [start + float(i) * stride for i in range(self.nstep)], dtype=np.float64
            )
        time = self._dense_array("time")
        return None if time is None else time.read(0, self.nstep).astype(np.float64)

    def series(self, key: str, start: int = 0, stop: int | None = None) -> npt.NDArray[Any]:
        """Values of per-step key ``key`` over frames ``[start, stop)`` as stored."""
        if key not in self.declaration.meta:
            raise InvalidRecord(f"meta key {key!r} is not declared", path=join(self.path, "meta"))
        stop = self.nstep if stop is None else min(stop, self.nstep)
        values = self.meta_array(key).read(max(0, start), max(start, stop))
        # the caller's own array, as before: a view of a cached chunk is read-only
        return values if values.flags.writeable else values.copy()

    # -- validation --------------------------------------------------------------------------

    def validate(self) -> list[tuple[str, str]]:
        """Every check over the whole trajectory: ``[(path, message)]`` (empty when clean)."""
        problems: list[tuple[str, str]] = []
        readers: dict[str, BlockReader] = {}
        for name in self.declaration.blocks:
            try:
                reader = self.block(name)
            except InvalidRecord as exc:
                problems.append((exc.path or join(self.path, name), exc.message))
                continue
            if reader is not None:
                readers[name] = reader
                problems.extend(reader.validate())
        for key in self.declaration.meta:
            try:
                self.meta_array(key)
            except InvalidRecord as exc:
                problems.append((exc.path or join(self.path, "meta", key), exc.message))
        if not problems:
            problems.extend(self._validate_alignment(readers))
            problems.extend(self._validate_precision(readers))
        problems.extend(self._validate_producers())
        return [*problems, *self._validate_steps()]

    def _validate_steps(self) -> list[tuple[str, str]]:
        """Step numbers strictly increase (trajectory.md §1.1): a repeated or decreasing ``step``
        entry, or a progression of two or more frames without a positive ``stride``."""
        steps = self.steps()
        if len(steps) < 2 or bool(np.all(np.diff(steps) > 0)):
            return []
        where = self.path if self.step_progression is not None else join(self.path, "step")
        first = int(np.argmax(np.diff(steps) <= 0)) + 1
        return [
            (
                where,
                f"step {int(steps[first])} at frame {first} does not exceed the previous"
                f" {int(steps[first - 1])}: step numbers strictly increase (trajectory.md §1.1)",
            )
        ]

    def _validate_producers(self) -> list[tuple[str, str]]:
        """mrecd's producer state: well formed, every kept answer within ``nstep``."""
        try:
            table = ProducerTable.from_attribute(self.attribute(PRODUCERS), path=self.path)
        except InvalidRecord as exc:
            return [(exc.path or self.path, exc.message)]
        beyond = table.answers_beyond(self.nstep)
        where = f"{self.path}/zarr.json#{PRODUCERS}"
        return [(where, f"producer {p!r} has an answer beyond nstep {self.nstep}") for p in beyond]

    def _validate_alignment(self, readers: Mapping[str, BlockReader]) -> list[tuple[str, str]]:
        problems = []
        for name, spec in self.declaration.blocks.items():
            aligned = readers.get(name)
            system = self.system.get(name)
            if aligned is not None and system is not None:
                counts = aligned.counts()
                for ordinal, count in counts:
                    if count != system.count:
                        problems.append(
                            (
                                aligned.path,
                                f"update at ordinal {ordinal} has {count} rows, system/{name} has"
                                f" {system.count} (trajectory.md §1.5)",
                            )
                        )
                if all(c == system.count for _, c in counts):
                    problems.extend(self._validate_system_ids(aligned, counts))
            if spec.aligned_with is None or aligned is None:
                continue
            ordinals = {o for o, _ in aligned.counts()}
            target = readers.get(spec.aligned_with)
            if target is not None:
                ordinals |= {o for o, _ in target.counts()}
            for ordinal in sorted(o for o in ordinals if o < self.nstep):
                try:
                    self._check_alignment(
                        ordinal,
                        {name: (aligned, w)} if (w := aligned.locate(ordinal)) else {},
                    )
                except InvalidRecord as exc:
                    problems.append((exc.path or aligned.path, exc.message))
        return problems

    def _validate_system_ids(
        self, reader: BlockReader, counts: list[tuple[int, int]]
    ) -> list[tuple[str, str]]:
        """Every update's ``id`` against ``system``'s, each update holding the system's rows."""
        if "id" not in reader.columns or "id" not in self.system[reader.name]:
            return []
        rows = self.system[reader.name].count
        try:
            for j, (ordinal, _) in enumerate(counts):
                block = reader.rows(j * rows, (j + 1) * rows, ["id"])
                self._check_system_ids(reader.name, block, f"update at ordinal {ordinal}")
        except InvalidRecord as exc:
            return [(exc.path or reader.path, exc.message)]
        return []

    def _validate_precision(self, readers: Mapping[str, BlockReader]) -> list[tuple[str, str]]:
        problems = []
        for reader in readers.values():
            for column, cspec in reader.spec.columns.items():
                if cspec.precision is None or column not in reader.columns or not reader.total_rows:
                    continue
                values = reader.columns[column].read(0, reader.total_rows)
                mask = reader.masks.get(column)
                if mask is not None:
                    values = values[mask.read(0, reader.total_rows)]
                if not on_grid(values, cspec.precision):
                    problems.append(
                        (
                            reader.columns[column].key,
                            f"values off the grid of the declared precision {cspec.precision}"
                            " (frame.md §7.2)",
                        )
                    )
        return problems


class _BoxReader:
    """``trajectory/box``: a fixed attribute cell, or update arrays."""

    def __init__(self, tree: Tree, path: str, attributes: dict[str, Any], nstep: int) -> None:
        self.path = path
        self.cell_defined = attributes.get("cell_defined", True)
        if not isinstance(self.cell_defined, bool):
            raise InvalidRecord("cell_defined must be a boolean", path=path)
        self.vectors = _open_array(tree, join(path, "vectors"))
        if self.vectors is None:
            if "vectors" not in attributes:
                self.fixed: Box | None = None
            else:
                self.fixed = Box(
                    attributes["vectors"],
                    origin=attributes.get("origin"),
                    boundary=attributes.get("boundary"),
                    cell_defined=self.cell_defined,
                    path=path,
                )
            return
        self.fixed = None
        step_index = _open_array(tree, join(path, "step_index"))
        self.step_index = None if step_index is None else _IndexArray(step_index, "step_index")
        self.origin = _open_array(tree, join(path, "origin"))
        self.boundary = _open_array(tree, join(path, "boundary"))
        if self.step_index is None:
            self.n_updates = min(1, self.vectors.shape[0])  # a trivial index [0] may be omitted
        else:
            self.n_updates = self.step_index.count_below(nstep, self.step_index.length)
        for array in (self.vectors, self.origin, self.boundary):
            if array is not None and array.shape[0] < self.n_updates:
                raise InvalidRecord(
                    f"holds {array.shape[0]} cell updates, need {self.n_updates}", path=array.key
                )

    def close(self) -> None:
        """Release the shard entries of the cell arrays."""
        if self.vectors is None:
            return
        for array in (
            self.vectors,
            self.origin,
            self.boundary,
            self.step_index and self.step_index.reader,
        ):
            if array:
                array.close()

    def at(self, i: int) -> Box | None:
        if self.vectors is None:
            return self.fixed
        if self.step_index is None:
            j = 0 if self.n_updates else -1
        else:
            j = self.step_index.count_below(i + 1, self.n_updates) - 1
        if j < 0:
            return None
        origin = None if self.origin is None else self.origin.read(j, j + 1)[0]
        boundary = None if self.boundary is None else self.boundary.read(j, j + 1)[0]
        return Box(
            self.vectors.read(j, j + 1)[0],
            origin=origin,
            boundary=boundary,
            cell_defined=self.cell_defined,
            path=self.path,
        )


def held_meta_value(tag: str, raw: Any) -> Any:
    """A stored per-step element as the value held at ``tag``."""
    element, width = TAG_LAYOUT[tag]
    if element == "json":
        return loads_strict(str(raw))
    if width is not None:
        return tuple(_scalar(element, v) for v in np.asarray(raw).tolist())
    return _scalar(element, raw.item() if hasattr(raw, "item") else raw)


def _scalar(element: str, value: Any) -> Any:
    if element == "f64":
        return float(value)
    if element == "bool":
        return bool(value)
    if element == "string":
        return str(value)
    return int(value)
