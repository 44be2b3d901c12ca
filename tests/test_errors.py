"""The errors table: every class's status, slug and title, and problem documents both ways."""

from __future__ import annotations

import json
import pickle
import re
from typing import Any

import pytest

import mrecd
from mrecd import errors
from mrecd.errors import MrecdError, PreconditionFailed, ProducerFenced, SequenceGap

#: one row of the tree drawing: prefix, class, optional builtin, status, slug, title
_ROW = re.compile(
    r"^    (?P<prefix>[│├└─ ]*)(?P<name>[A-Z]\w+)(?: \((?P<builtin>\w+)\))?"
    r"\s+(?P<status>\d{3})\s+(?P<slug>[a-z0-9-]+)\s+(?P<title>\S.*)$"
)


def _subclasses(cls: type[MrecdError]) -> list[type[MrecdError]]:
    out = [cls]
    for sub in cls.__subclasses__():
        out.extend(_subclasses(sub))
    return out


def _table() -> dict[str, dict[str, Any]]:
    rows = {}
    for line in (errors.__doc__ or "").splitlines():
        match = _ROW.match(line)
        if match:
            rows[match["name"]] = {**match.groupdict(), "depth": len(match["prefix"]) // 4}
    return rows


def _mrecd_classes() -> list[type[MrecdError]]:
    # classes defined by the package, after the local API (which re-exports some) has loaded
    import mrecd.api  # noqa: F401

    return [c for c in _subclasses(MrecdError) if c.__module__.startswith("mrecd")]


def _example(cls: type[MrecdError]) -> MrecdError:
    if issubclass(cls, PreconditionFailed):
        return cls("nstep 4 expected, 7 committed", path="runs/r1/trajectory", nstep=7)
    if issubclass(cls, ProducerFenced):
        return cls("epoch 1 is fenced by epoch 2", path="Producer-Epoch", epoch=2)
    if issubclass(cls, SequenceGap):
        return cls("sequence 9 skips 5", path="Producer-Seq", expected=5)
    return cls(f"a {cls.__name__} happened", path="frame/atoms/x")


def test_every_class_lives_in_the_errors_module() -> None:
    assert {c.__module__ for c in _mrecd_classes()} == {"mrecd.errors"}
    assert {c.__name__ for c in _mrecd_classes()} <= set(errors.__all__)


def test_the_docstring_table_lists_every_class_as_defined() -> None:
    table = _table()
    classes = _mrecd_classes()
    assert sorted(table) == sorted(c.__name__ for c in classes)
    parents: list[str] = []  # the drawing's open branches, root first
    for name, row in table.items():
        cls = getattr(errors, name)
        del parents[row["depth"] :]
        mrecd_bases = [b.__name__ for b in cls.__bases__ if issubclass(b, MrecdError)]
        assert mrecd_bases == parents[-1:], name
        builtins_ = [b.__name__ for b in cls.__bases__ if not issubclass(b, MrecdError)]
        assert builtins_ == ([row["builtin"]] if row["builtin"] else []) or name == "MrecdError"
        assert (cls.status, cls.slug, cls.title) == (int(row["status"]), row["slug"], row["title"])
        parents.append(name)


def test_slugs_are_unique_and_statuses_are_http_errors() -> None:
    classes = _mrecd_classes()
    assert len({c.slug for c in classes}) == len(classes)
    assert all(400 <= c.status < 600 for c in classes)
    assert all(c.problem_type() == f"urn:mrecd:problem:{c.slug}" for c in classes)


@pytest.mark.parametrize("cls", _mrecd_classes(), ids=lambda c: c.__name__)
def test_problem_round_trip(cls: type[MrecdError]) -> None:
    error = _example(cls)
    problem = json.loads(json.dumps(error.to_problem()))
    assert problem["type"] == cls.problem_type() and problem["status"] == cls.status
    assert problem["title"] == cls.title and problem["detail"] == error.message
    assert problem["path"] == error.path
    assert errors.error_for_problem(problem["type"]) is cls
    back = MrecdError.from_problem(problem)
    assert type(back) is cls
    assert (back.message, back.path, str(back)) == (error.message, error.path, str(error))
    assert back.extensions() == error.extensions()


@pytest.mark.parametrize("cls", _mrecd_classes(), ids=lambda c: c.__name__)
def test_pickling_keeps_path_and_extensions(cls: type[MrecdError]) -> None:
    error = _example(cls)
    back = pickle.loads(pickle.dumps(error))
    assert type(back) is cls and str(back) == str(error)
    assert back.path == error.path and back.extensions() == error.extensions()


def test_precondition_failed_carries_nstep() -> None:
    error = PreconditionFailed("stale", path="t", nstep=12)
    assert error.to_problem()["nstep"] == 12
    back = MrecdError.from_problem(error.to_problem())
    assert isinstance(back, PreconditionFailed) and back.nstep == 12
    assert pickle.loads(pickle.dumps(error)).nstep == 12
    assert MrecdError.from_problem({"type": PreconditionFailed.problem_type()}).nstep is None  # type: ignore[attr-defined]


def test_unknown_problem_types_give_the_root() -> None:
    assert errors.error_for_problem("about:blank") is MrecdError
    back = MrecdError.from_problem({"type": "https://example.org/teapot", "title": "Teapot"})
    assert type(back) is MrecdError and str(back) == "Teapot" and back.path is None
    assert type(MrecdError.from_problem({})) is MrecdError


def test_malformed_problems_are_refused() -> None:
    with pytest.raises(TypeError, match="mapping"):
        MrecdError.from_problem([("type", "x")])  # type: ignore[arg-type]
    with pytest.raises(TypeError, match="'path'"):
        MrecdError.from_problem({"type": mrecd.NotFound.problem_type(), "path": 3})
    with pytest.raises(TypeError, match="'nstep'"):
        MrecdError.from_problem({"type": PreconditionFailed.problem_type(), "nstep": "7"})


def test_a_subclass_must_state_its_own_slug_and_title() -> None:
    with pytest.raises(TypeError, match="slug and title"):

        class Unlabelled(mrecd.NotFound):
            pass

    with pytest.raises(TypeError, match="taken by NotFound"):

        class Duplicate(mrecd.NotFound):
            slug = "not-found"
            title = "Again"


def test_builtins_a_caller_catches() -> None:
    out_of_range = mrecd.RecordOutOfRange("record 9 is out of range", path="record")
    assert isinstance(out_of_range, IndexError) and isinstance(out_of_range, KeyError)
    assert str(out_of_range) == "record: record 9 is out of range"  # not quoted as a KeyError
    from mrecd.api import RecordOutOfRange
    from mrecd.api._collection import RecordOutOfRange as Legacy

    assert RecordOutOfRange is Legacy is mrecd.RecordOutOfRange
