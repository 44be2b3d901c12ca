"""Records at an exact path: :func:`create_record`, :func:`open_record`, :class:`StoredRecord`.

Synchronous; one :class:`StoredRecord` is used from one thread at a time.
Sections are read lazily on first access and cached; a write on an ``r+``
record replaces one section and drops its cache.
"""

from __future__ import annotations

import json
from collections.abc import Mapping
from types import TracebackType
from typing import TYPE_CHECKING, Any, Literal

from ..bindings.zarr import (
    FRAME_SECTIONS,
    SUBSTANTIVE,
    UNBORN,
    RecordStore,
    SectionParts,
    SectionWriter,
    Sink,
    Tree,
    build_record,
    check_blocks,
    create_trajectory_group,
    document_writer,
    frame_from_parts,
    frame_section_writer,
    pack_directory,
    rebase,
    record_kind,
    typed_attributes,
)
from ..errors import AlreadyExists, InvalidRecord, NotFound, PreconditionFailed, ReadOnlyError
from ..forcefield import ForceField
from ..model import (
    MOLREC_VERSION,
    Block,
    Declaration,
    Frame,
    Observable,
    check_block_targets,
    check_method,
    check_molrec_version,
    check_record_meta,
    check_status,
    stamp_meta,
)
from ..storage import Location, location_of
from ._runsurface import Metrics, Observables, read_record_observables, write_observables
from ._trajectory import Trajectory, create_trajectory, open_trajectory

if TYPE_CHECKING:
    from os import PathLike

__all__ = ["StoredRecord", "create_record", "open_record", "open_unborn", "pack_record"]

Mode = Literal["r", "r+"]


# -- cross-section row references -------------------------------------------------------------


def _referenced(blocks: Mapping[str, Block]) -> set[str]:
    """Sections named by the absolute targets (``/<section>/<block>``) of ``blocks``."""
    return {
        t.split("/")[1]
        for b in blocks.values()
        for t in (b.targets or {}).values()
        if t.startswith("/")
    }


def _check_section_targets(
    name: str, blocks: Mapping[str, Block], sections: Mapping[str, Mapping[str, Block]]
) -> None:
    """Refuse the row references of section ``name`` that do not resolve (frame.md §8)."""
    for block_name, block in blocks.items():
        try:
            check_block_targets(block_name, block, blocks, sections)
        except InvalidRecord as exc:
            raise rebase(exc, name, "/") from None


def _only_into(blocks: Mapping[str, Block], section: str) -> dict[str, Block]:
    """``blocks`` keeping only targets into ``/<section>/`` (the ones a rewrite of it can break)."""
    out: dict[str, Block] = {}
    for name, block in blocks.items():
        kept = {c: t for c, t in (block.targets or {}).items() if t.startswith(f"/{section}/")}
        if kept:
            out[name] = Block._trusted(
                block.columns, block.count, block.structural_shape, kept, block.attributes
            )
    return out


# -- argument checks ----------------------------------------------------------------------------


def _as_frame(value: Any, name: str) -> Frame:
    if not isinstance(value, Frame):
        raise InvalidRecord(f"{name} must be a mrecd.Frame, not {type(value).__name__}", path=name)
    if value.step is not None or value.time is not None:
        # A frame-shaped section has no step or time (storage.md §5); dropping them
        # silently would break the round trip a caller expects.
        raise InvalidRecord(
            "a frame-shaped section stores no step/time; pass frame.replace(step=None, time=None)",
            path=name,
        )
    check_blocks(value.blocks, name)
    return value


def _as_forcefield(value: Any) -> ForceField:
    if not isinstance(value, ForceField):
        raise InvalidRecord(
            f"forcefield must be a ForceField, not {type(value).__name__}", path="forcefield"
        )
    check_blocks(value.tables, "forcefield")
    return value


def _frame_writer(frame: Frame) -> SectionWriter:
    return frame_section_writer(typed_attributes(frame), frame.blocks, frame.box)


def _forcefield_writer(ff: ForceField) -> SectionWriter:
    document, tables = ff.to_section()
    return frame_section_writer(document, tables, None)


def _section_blocks(
    system: Frame | None, frame: Frame | None, ff: ForceField | None
) -> dict[str, dict[str, Block]]:
    out: dict[str, dict[str, Block]] = {}
    if system is not None:
        out["system"] = system.blocks
    if frame is not None:
        out["frame"] = frame.blocks
    if ff is not None:
        out["forcefield"] = ff.tables
    return out


# -- the record ----------------------------------------------------------------------------------


class StoredRecord:
    """A record on disk: a live ``*.mrec`` directory, or a packed ``*.mrec.zip`` (read-only).

    Obtain one from :func:`open_record` or :func:`create_record`. Section
    properties read on first access and raise :class:`~mrecd.InvalidRecord`
    (naming the array path and the rule) for a store that breaks the
    contract. Writers (``write_*``, :meth:`delete_section`) need mode
    ``"r+"``; each replaces one section whole and keeps whatever the model
    cannot express (unknown arrays, subgroups, attributes) from the old one.
    Other sections, unknown ones included, are never touched.
    """

    def __init__(
        self,
        store: RecordStore | None,
        *,
        read_only: bool,
        check_sections: bool = True,
        unborn: tuple[Location, dict[str, Any]] | None = None,
    ) -> None:
        self._read_only = read_only
        self._cache: dict[str, Any] = {"status": None, "method": None}
        self._trajectory: Trajectory | None = None
        self._metrics: Metrics | None = None
        if store is None:  # a record not on the store yet: its first write creates it
            assert unborn is not None
            self._location, self._meta = unborn
            self._store: RecordStore | None = None
            return
        self._store = store
        self._location = store.path
        try:
            self._meta = self._read_meta()
            for name, check in (("status", check_status), ("method", check_method)):
                document = store.document(name)
                self._cache[name] = None if document is None else check(document, path=name)
            if check_sections:
                self._check_substantive(set(store.sections()))
            if not read_only and self.molrec_version == 1:
                raise ReadOnlyError(
                    "a version-1 record is read (converted), never written: write a new record"
                    " (record.md §4.1)",
                    path=str(store.path),
                )
        except BaseException:
            store.close()
            raise

    def _read_meta(self) -> dict[str, Any]:
        assert self._store is not None
        document = self._store.document("meta")
        if document is None:  # a pre-version store: read as an empty document
            return {}
        return check_record_meta(document, path="meta")

    @staticmethod
    def _check_substantive(present: set[str]) -> None:
        if not present.intersection(SUBSTANTIVE):
            raise InvalidRecord(
                "a record holds at least one of frame, system, trajectory, forcefield, status"
                " besides meta (record.md §2)",
                path="/",
            )

    # -- identity ---------------------------------------------------------------------------

    @property
    def url(self) -> str:
        """Where the record lives: its store URL and key (``file:///data/run-42.mrec``)."""
        return str(self._location)

    @property
    def name(self) -> str:
        """The record's name: the key without its ``.mrec`` / ``.mrec.zip`` brand."""
        key = self._location.name
        return key.removesuffix(".zip").removesuffix(".mrec")

    @property
    def local_path(self) -> str | None:
        """Escape hatch: the local directory or zip file, or ``None`` off the file system."""
        try:
            return self._location.__fspath__()
        except TypeError:
            return None

    @property
    def exists(self) -> bool:
        """Whether the record is born (``False`` until the first write of a new run).

        Answered from this handle; :meth:`refresh` looks at the store again.
        """
        return self._store is not None

    def refresh(self) -> bool:
        """An unborn handle: take up the record if it was created meanwhile; ``exists``.

        Another handle or process may have made the first write of the run.
        """
        if self._store is None and (self._location / "zarr.json").is_file():
            self._adopt()
            if self._trajectory is not None and self._trajectory._writer is None:
                self._trajectory.close()  # it was made for the unborn run: reopen on the born one
                self._trajectory = None
        return self._store is not None

    def _adopt(self) -> None:
        """Open the record that now exists at this handle's location (it was unborn here)."""
        self._store = RecordStore(self._location, writable=not self._read_only)
        self._meta = self._read_meta()
        for name, check in (("status", check_status), ("method", check_method)):
            document = self._store.document(name)
            self._cache[name] = None if document is None else check(document, path=name)

    @property
    def read_only(self) -> bool:
        """Whether writes are refused (mode ``"r"``, a zip, or a version-1 record)."""
        return self._read_only

    @property
    def meta(self) -> dict[str, Any]:
        """The ``meta`` document exactly as stored (``{}`` for a store without ``meta/``)."""
        return dict(self._meta)

    @property
    def molrec_version(self) -> int | None:
        """The stored ``molrec_version`` (1 or 2), or ``None`` for an unstamped store."""
        value = self._meta.get("molrec_version")
        return None if value is None else check_molrec_version(value)

    @property
    def sections(self) -> list[str]:
        """Names of the root's sections, known and unknown, sorted."""
        return [] if self._store is None else sorted(self._store.sections())

    # -- sections ---------------------------------------------------------------------------

    def _parts(self, name: str) -> SectionParts | None:
        key = f"parts:{name}"
        if self._store is None:
            return None
        if key not in self._cache:
            self._cache[key] = self._store.section_parts(name, Sink())
        parts: SectionParts | None = self._cache[key]
        return parts

    def _checked_parts(self, name: str) -> SectionParts | None:
        parts = self._parts(name)
        if parts is not None:
            wanted = _referenced(parts.blocks) & set(FRAME_SECTIONS)
            others = {s: p.blocks for s in wanted if (p := self._parts(s)) is not None}
            _check_section_targets(name, parts.blocks, others)
        return parts

    def _frame(self, name: str) -> Frame | None:
        if name not in self._cache:
            parts = self._checked_parts(name)
            self._cache[name] = None if parts is None else frame_from_parts(parts)
        frame: Frame | None = self._cache[name]
        return frame

    @property
    def system(self) -> Frame | None:
        """The ``system`` section (topology, typed meta, box), or ``None``."""
        return self._frame("system")

    @property
    def frame(self) -> Frame | None:
        """The ``frame`` section (one snapshot), or ``None``."""
        return self._frame("frame")

    @property
    def forcefield(self) -> ForceField | None:
        """The ``forcefield`` section, converted when the record is version 1, or ``None``."""
        if "forcefield" not in self._cache:
            parts = self._checked_parts("forcefield")
            self._cache["forcefield"] = (
                None
                if parts is None
                else ForceField.from_section(
                    parts.attributes, parts.blocks, molrec_version=self.molrec_version
                )
            )
        ff: ForceField | None = self._cache["forcefield"]
        return ff

    @property
    def status(self) -> dict[str, Any] | None:
        """The ``status`` document as stored, or ``None``."""
        status: dict[str, Any] | None = self._cache["status"]
        return None if status is None else dict(status)

    @property
    def method(self) -> dict[str, Any] | None:
        """The ``method`` document as stored, or ``None``."""
        method: dict[str, Any] | None = self._cache["method"]
        return None if method is None else dict(method)

    @property
    def observables(self) -> Observables:
        """The named observables (run-surface.md §5): ``rec.observables["msd"].data``."""
        return Observables(self)

    def _observables(self) -> dict[str, Observable]:
        if "observables" not in self._cache:
            found = {} if self._store is None else read_record_observables(self._store.tree)
            self._cache["observables"] = found
        observables: dict[str, Observable] = self._cache["observables"]
        return observables

    @property
    def metrics(self) -> Metrics:
        """The run's metrics (run-surface.md §4): ``rec.metrics.log(step, loss=0.5)``."""
        if self._metrics is None:
            self._metrics = Metrics(self)
        return self._metrics

    @property
    def _tree(self) -> Tree:
        """The record's node tree (directory or packed zip), for the trajectory and validator."""
        if self._store is None:
            return Tree(self._location.as_store())
        return self._store.tree

    @property
    def trajectory(self) -> Trajectory | None:
        """The trajectory section, one object per open record (it holds the writer).

        ``None`` on a read-only record without one; on a writable record the
        first ``append`` creates it, declaring what that frame presents. An
        unborn run's is empty (read-only: it follows the birth on ``refresh``).
        """
        if self._trajectory is None:
            if (
                self._read_only
                and self._store is not None
                and self._store.node("trajectory") is None
            ):
                return None
            self._trajectory = open_trajectory(self)
            if self._store is None:
                self._trajectory._birth = self._birth_with_trajectory
        return self._trajectory

    def _birth(self, writers: list[tuple[str, SectionWriter]], hook: Any = None) -> bool:
        """Create the record on its store with its first content, then open it.

        Returns ``False`` when another handle or process created it first: the
        content is then not written (the caller writes it to the born record).
        """
        try:
            build_record(
                self._location, stamp_meta(self._meta), writers, before_publish=hook, unborn=True
            )
            born_here = True
        except AlreadyExists:
            if not (self._location / "zarr.json").is_file():
                raise
            born_here = False
        self._adopt()
        return born_here

    def _birth_with_trajectory(self, declaration: Declaration) -> None:
        if not self._birth([], lambda root: create_trajectory_group(root, declaration)):
            if (self._location / "trajectory" / "zarr.json").is_file():
                return  # born with a trajectory elsewhere: the append goes into it
            create_trajectory_group(self._location, declaration)

    # -- writing ----------------------------------------------------------------------------

    def _writable(self, content: tuple[str, SectionWriter] | None = None) -> RecordStore | None:
        """The record's store for a write; ``None`` when ``content`` just created the record."""
        if self._read_only:
            raise ReadOnlyError(
                "the record is open read-only; open it with mode='r+'", path=self.url
            )
        if self._store is None and content is not None and self._birth([content]):
            return None
        return self._store

    def _written(self) -> RecordStore:
        """The store of a record that exists; refuse a write that cannot create one."""
        store = self._writable()
        if store is None:
            raise InvalidRecord(
                "the record does not exist yet: write a substantive section (system, frame,"
                " forcefield, status) or append a frame first (record.md §2)",
                path=self.url,
            )
        return store

    def _stamp_if_needed(self) -> None:
        """Stamp an unstamped record before content of this version lands in it (record.md §4.1)."""
        if self._meta.get("molrec_version") != MOLREC_VERSION:
            self.write_meta(self._meta)

    def _check_rewrite_targets(self, name: str, blocks: Mapping[str, Block]) -> None:
        """Refuse a rewrite of ``name`` that breaks its references or others' references into it."""
        sections: dict[str, Mapping[str, Block]] = {name: blocks}
        for other in set(FRAME_SECTIONS) - {name}:
            try:
                parts = self._parts(other)
            except InvalidRecord:
                continue  # a broken section is refused when read; it does not block this write
            if parts is not None:
                sections[other] = parts.blocks
        _check_section_targets(name, blocks, sections)
        for other, other_blocks in sections.items():
            if other != name:
                _check_section_targets(other, _only_into(other_blocks, name), sections)

    def _forget(self, name: str) -> None:
        for key in (name, f"parts:{name}"):
            self._cache.pop(key, None)

    def write_meta(self, meta: Mapping[str, Any] | None) -> None:
        """Replace the ``meta`` document; ``molrec_version`` is stamped 2 over any given value."""
        store = self._writable()
        document = stamp_meta(meta)
        if store is not None:
            store.replace_document("meta", document)
        self._meta = document

    def _write_frame_shaped(self, name: str, frame: Frame) -> None:
        self._writable()
        frame = _as_frame(frame, name)
        self._check_rewrite_targets(name, frame.blocks)
        store = self._writable((name, _frame_writer(frame)))
        if store is not None:
            self._stamp_if_needed()
            store.replace_frame_shaped(name, typed_attributes(frame), frame.blocks, frame.box)
        self._forget(name)

    def write_system(self, system: Frame) -> None:
        """Replace (or add) the ``system`` section."""
        self._write_frame_shaped("system", system)

    def write_frame(self, frame: Frame) -> None:
        """Replace (or add) the ``frame`` section."""
        self._write_frame_shaped("frame", frame)

    def write_forcefield(self, forcefield: ForceField) -> None:
        """Replace (or add) the ``forcefield`` section (stored via ``ForceField.to_section``)."""
        self._writable()
        ff = _as_forcefield(forcefield)
        document, tables = ff.to_section()
        self._check_rewrite_targets("forcefield", tables)
        store = self._writable(("forcefield", _forcefield_writer(ff)))
        if store is not None:
            self._stamp_if_needed()
            store.replace_frame_shaped("forcefield", document, tables, None)
        self._forget("forcefield")

    def write_status(self, status: Mapping[str, Any]) -> None:
        """Replace (or add) the ``status`` document (``state`` required)."""
        self._writable()
        document = check_status(status)
        store = self._writable(("status", document_writer(document)))
        if store is not None:
            self._stamp_if_needed()
            store.replace_document("status", document)
        self._cache["status"] = document

    def write_method(self, method: Mapping[str, Any]) -> None:
        """Replace (or add) the ``method`` document (``type``, ``description``, ``engine.name``)."""
        store = self._written()
        document = check_method(method)
        self._stamp_if_needed()
        store.replace_document("method", document)
        self._cache["method"] = document

    def write_observable(
        self,
        name: str,
        data: Any,
        document: Mapping[str, Any] | None = None,
        **keys: Any,
    ) -> None:
        """Write (or replace) observable ``name``: its data array and metadata document.

        Parameters
        ----------
        name
            Non-empty, no ``/``, not ``.``, ``..`` or ``meta``, no leading ``__``.
        data
            Any shape (0-d allowed), any column dtype.
        document
            The metadata document; ``**keys`` are merged over it (``kind``,
            ``description``, ``time_dependent`` required; others kept verbatim).

        Raises
        ------
        InvalidRecord
            A rule of run-surface.md §5 is broken (the message cites it).
        """
        store = self._written()
        observable = Observable.build(name, data, {**(document or {}), **keys})
        self._stamp_if_needed()
        write_observables(store, {name: observable})
        self._cache.pop("observables", None)

    def delete_observable(self, name: str) -> None:
        """Remove observable ``name`` (array and metadata group); the rest is kept."""
        store = self._written()
        if name not in self._observables():
            raise NotFound(f"the record has no observable {name!r}", path=f"observables/{name}")
        write_observables(store, {name: None})
        self._cache.pop("observables", None)

    def delete_section(self, name: str) -> None:
        """Remove a root section (not ``meta``); refused if no substantive section would remain."""
        store = self._written()
        if name == "meta":
            raise InvalidRecord("meta is always present (record.md §2)", path="meta")
        remaining = set(store.sections()) - {name}
        self._check_substantive(remaining)
        if name == "metrics" and self._metrics is not None:
            self._metrics.release()
        store.delete(name)
        self._forget(name)
        if name in ("status", "method"):
            self._cache[name] = None

    # -- lifetime ---------------------------------------------------------------------------

    def close(self) -> None:
        """Commit the trajectory durably, release handles; the object is unusable afterwards."""
        try:
            if self._metrics is not None:
                self._metrics.close()
        finally:
            self._metrics = None
            self._close_rest()

    def _close_rest(self) -> None:
        try:
            if self._trajectory is not None:
                self._trajectory.close()
        finally:
            self._trajectory = None
            if self._store is not None:
                self._store.close()
            self._cache.clear()

    def __enter__(self) -> StoredRecord:
        return self

    def __exit__(
        self,
        exc_type: type[BaseException] | None,
        exc: BaseException | None,
        tb: TracebackType | None,
    ) -> None:
        self.close()

    def __repr__(self) -> str:
        mode = "r" if self._read_only else "r+"
        return f"StoredRecord({self.url!r}, mode={mode!r}, sections={self.sections})"


# -- entry points ---------------------------------------------------------------------------------


def open_record(path: str | PathLike[str] | Location, mode: Mode = "r") -> StoredRecord:
    """Open the record at exactly ``path``: a ``*.mrec`` directory or a ``*.mrec.zip`` (read-only).

    Parameters
    ----------
    path
        The record root. A zip is read in place (random access, no extraction).
    mode
        ``"r"`` to read; ``"r+"`` to also write sections (live directories only).

    Raises
    ------
    NotFound
        Nothing at ``path``.
    InvalidRecord
        The path lacks the brand, has no Zarr root, or the root breaks a rule
        checked at open (meta, status, method, a substantive section).
    UnsupportedVersion
        ``molrec_version`` is newer than 2, ``null`` or not an integer.
    ReadOnlyError
        ``"r+"`` on a zip or on a version-1 record.
    """
    if mode not in ("r", "r+"):
        raise ValueError(f"mode must be 'r' or 'r+', not {mode!r}")
    store = RecordStore(location_of(path, read_only=mode == "r"), writable=mode == "r+")
    return StoredRecord(store, read_only=mode == "r")


def create_record(
    path: str | PathLike[str] | Location,
    *,
    meta: Mapping[str, Any] | None = None,
    system: Frame | None = None,
    frame: Frame | None = None,
    forcefield: ForceField | None = None,
    declaration: Declaration | None = None,
    status: Mapping[str, Any] | None = None,
    method: Mapping[str, Any] | None = None,
    overwrite: bool = False,
    exist_ok: bool = False,
) -> StoredRecord:
    """Create a record at exactly ``path`` (a ``*.mrec`` directory) and open it ``r+``.

    Everything is validated before the disk is touched; the record is built
    in a staging directory beside ``path`` (root ``zarr.json`` and ``meta/``
    first, ``molrec_version`` stamped 2) and renamed into place, so a failure
    leaves nothing behind.

    Parameters
    ----------
    path
        Where the record lives; the name must end in ``.mrec``.
    meta
        The ``meta`` document (unknown keys kept; the version is stamped).
    system, frame
        Frame-shaped sections.
    forcefield
        The force-field section.
    declaration
        Creates an empty trajectory section with this declaration (it counts
        as the record's substantive section).
    status, method
        Documents (``status.state``; ``method.type``/``description``/``engine.name``).
    overwrite
        Replace an existing record at ``path`` (never a non-record path).
    exist_ok
        Open an existing record at ``path`` instead (the content arguments
        are then not used): a restarted job continues its run.

    With no substantive section (only a name, perhaps ``meta``) the record
    is *unborn*: only a hidden marker (``.unborn.json``, holding ``meta``)
    is written, create-only, inside ``path``, so any process can open the
    run; its first section write or first ``trajectory.append`` creates it
    whole (the first frames declare the trajectory) and removes the marker.
    No root ``zarr.json`` exists before that, so record.md §2 holds on the
    store at every moment.

    Raises
    ------
    InvalidRecord
        Bad input, or only a ``method`` document (it is not substantive).
    AlreadyExists
        ``path`` exists and ``overwrite`` is false (or it is not a record).
    """
    path = location_of(path)
    if exist_ok and not overwrite:
        found = _open_existing(path)
        if found is not None:
            return found
    meta_doc = stamp_meta(meta)
    system = None if system is None else _as_frame(system, "system")
    frame = None if frame is None else _as_frame(frame, "frame")
    ff = None if forcefield is None else _as_forcefield(forcefield)
    status_doc = None if status is None else check_status(status)
    method_doc = None if method is None else check_method(method)
    if declaration is not None and not isinstance(declaration, Declaration):
        raise InvalidRecord("declaration must be a mrecd.Declaration", path="trajectory")
    present = {
        n
        for n, v in (
            ("system", system),
            ("frame", frame),
            ("forcefield", ff),
            ("status", status_doc),
        )
        if v is not None
    }
    if declaration is not None:
        present.add("trajectory")
    if not present and method_doc is None:
        try:
            return _unborn(path, meta_doc, overwrite)
        except AlreadyExists:
            found = _open_existing(path) if exist_ok and not overwrite else None
            if found is None:
                raise
            return found
    StoredRecord._check_substantive(present)
    sections = _section_blocks(system, frame, ff)
    for name, blocks in sections.items():
        _check_section_targets(name, blocks, sections)
    writers: list[tuple[str, SectionWriter]] = []
    if system is not None:
        writers.append(("system", _frame_writer(system)))
    if frame is not None:
        writers.append(("frame", _frame_writer(frame)))
    if ff is not None:
        writers.append(("forcefield", _forcefield_writer(ff)))
    if status_doc is not None:
        writers.append(("status", document_writer(status_doc)))
    if method_doc is not None:
        writers.append(("method", document_writer(method_doc)))
    hook = None if declaration is None else _trajectory_hook(declaration)
    if (path / UNBORN).is_file() and not (path / "zarr.json").is_file():
        if not overwrite:
            raise AlreadyExists("a record already exists at this path (unborn)", path=str(path))
        path.store.delete_prefix(path.key)  # overwrite replaces the unborn run, marker and all
    build_record(path, meta_doc, writers, overwrite=overwrite, before_publish=hook)
    return open_record(path, "r+")


def _open_existing(path: Location) -> StoredRecord | None:
    """The record at ``path`` opened ``r+``, born or unborn; ``None`` when there is none."""
    if (path / "zarr.json").is_file():
        return open_record(path, "r+")
    return open_unborn(path, "r+")


def open_unborn(path: Location, mode: Mode) -> StoredRecord | None:
    """The unborn record at ``path`` (from its marker), or ``None`` when ``path`` has no marker."""
    raw = path.store.get((path / UNBORN).key)
    if raw is None:
        return None
    try:
        meta = check_record_meta(json.loads(raw)["meta"], path="meta")
    except (ValueError, KeyError, TypeError) as exc:
        raise InvalidRecord(f"the unborn marker is not readable: {exc}", path=UNBORN) from None
    return StoredRecord(None, read_only=mode == "r", unborn=(path, meta))


def _unborn(path: Location, meta: dict[str, Any], overwrite: bool) -> StoredRecord:
    """A record with a name and meta only: a durable marker until its first write.

    The marker is put create-only, so of two creators exactly one succeeds.
    """
    if record_kind(path) != "dir":
        raise InvalidRecord("a record is created as a '.mrec' directory", path=str(path))
    marker = path / UNBORN
    if path.exists() or marker.is_file():
        if not overwrite:
            raise AlreadyExists("a record already exists at this path", path=str(path))
        if not (path / "zarr.json").is_file() and not marker.is_file():
            raise AlreadyExists(
                "the path exists and is not a record; refusing to replace it", path=str(path)
            )
        path.store.delete_prefix(path.key)
    document = json.dumps({"meta": meta}).encode()
    try:
        path.store.put(marker.key, document, mode="create", durable=True)
    except PreconditionFailed:
        raise AlreadyExists("a record already exists at this path", path=str(path)) from None
    return StoredRecord(None, read_only=False, unborn=(path, meta))


def _trajectory_hook(declaration: Declaration) -> Any:
    """Create the trajectory section in the staged root, before it is published."""

    def hook(root: Location) -> None:
        record = StoredRecord(
            RecordStore(root, writable=True), read_only=False, check_sections=False
        )
        try:
            create_trajectory(record, declaration)
        finally:
            record.close()

    return hook


def pack_record(
    source: str | PathLike[str] | Location,
    dest: str | PathLike[str] | Location | None = None,
    *,
    overwrite: bool = False,
) -> Location:
    """Pack the closed record directory ``source`` into a ``*.mrec.zip`` (chunking.md §7).

    Entries are stored (method 0), named relative to the root with ``/``,
    ZIP64 when needed, no directory entries; each is bit-identical to its
    file. ``dest`` defaults to ``<source>.zip`` beside ``source``.

    Raises
    ------
    InvalidRecord
        ``source`` is not a record directory or ``dest`` lacks the ``.mrec.zip`` brand.
    AlreadyExists
        ``dest`` exists and ``overwrite`` is false.
    """
    return pack_directory(
        location_of(source), None if dest is None else location_of(dest), overwrite=overwrite
    )
