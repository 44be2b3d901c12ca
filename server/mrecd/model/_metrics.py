"""Metrics events, series and the WAL line format, as pure values (run-surface.md §4).

An event is one logged value; a series is the events of one key in log
order, where two events with the same ``step`` are one point and the later
wins (§4.1). The live form is a JSONL write-ahead log with compact keys
(§4.3); the closed form is dense arrays named by :func:`safe_name` (§4.2).
No I/O here: the binding reads and writes the bytes.
"""

from __future__ import annotations

import datetime as dt
import json
import math
from collections.abc import Iterable, Iterator, Mapping
from dataclasses import dataclass, field
from typing import Any, Final

import numpy as np
import numpy.typing as npt

from ..errors import InvalidRecord
from ._documents import _timestamp

__all__ = [
    "MetricEvent",
    "MetricSeries",
    "complete_lines",
    "decode_safe_name",
    "densifiable",
    "encode_event",
    "make_event",
    "merge_series",
    "now_rfc3339",
    "parse_wal",
    "safe_name",
    "wal_lines",
]

#: Bytes a safe name keeps as they are (§4.2).
_SAFE: Final = frozenset(b"ABCDEFGHIJKLMNOPQRSTUVWXYZabcdefghijklmnopqrstuvwxyz0123456789._-")
#: Non-finite scalars are written as these strings (§4.1).
_NONFINITE: Final[dict[str, float]] = {
    "NaN": math.nan,
    "Infinity": math.inf,
    "-Infinity": -math.inf,
}
_WAL: Final = "metrics/metrics.jsonl"


def safe_name(key: str) -> str:
    """The array name of series ``key``: bytes outside ``[A-Za-z0-9._-]`` as ``%XX`` (§4.2).

    The first byte is escaped too when the key is ``.`` or ``..`` or starts
    with ``__``.

    Raises
    ------
    InvalidRecord
        ``key`` is empty (the empty string is not a key).
    """
    if not isinstance(key, str) or not key:
        raise InvalidRecord(
            "a metrics key is a non-empty string (run-surface.md §4.1)", path="metrics"
        )
    raw = key.encode("utf-8")
    force_first = key in (".", "..") or key.startswith("__")
    out = []
    for i, byte in enumerate(raw):
        if byte in _SAFE and not (i == 0 and force_first):
            out.append(chr(byte))
        else:
            out.append(f"%{byte:02X}")
    return "".join(out)


def decode_safe_name(name: str) -> str:
    """The series key a safe name encodes (the inverse of :func:`safe_name`)."""
    out = bytearray()
    i = 0
    while i < len(name):
        if name[i] == "%" and _is_hex(name[i + 1 : i + 3]):
            out.append(int(name[i + 1 : i + 3], 16))
            i += 3
        else:
            out.extend(name[i].encode("utf-8"))
            i += 1
    try:
        return out.decode("utf-8")
    except UnicodeDecodeError:
        raise InvalidRecord(
            f"safe name {name!r} does not decode to UTF-8 (run-surface.md §4.2)", path="metrics"
        ) from None


def _is_hex(text: str) -> bool:
    return len(text) == 2 and all(c in "0123456789ABCDEFabcdef" for c in text)


@dataclass(frozen=True, slots=True)
class MetricEvent:
    """One logged metrics event (run-surface.md §4.1).

    Attributes
    ----------
    key
        Slash-separated series key (``train/loss``).
    value
        The value: a float for ``scalar`` (NaN and infinities allowed).
    wall_time
        RFC 3339 timestamp with an explicit offset.
    step
        Producer iteration, or ``None`` (never merged then).
    type
        ``scalar``, or a custom type naming a module under ``meta/modules``.
    tags
        Optional free object, preserved.
    """

    key: str
    value: Any
    wall_time: str
    step: int | None = None
    type: str = "scalar"
    tags: dict[str, Any] | None = None


def now_rfc3339() -> str:
    """The current UTC time as RFC 3339 with an explicit ``+00:00`` offset."""
    return dt.datetime.now(dt.UTC).isoformat()


def _check_step(step: Any, where: str) -> int | None:
    if step is None:
        return None
    if isinstance(step, bool) or not isinstance(step, (int, np.integer)):
        raise InvalidRecord(
            f"step {step!r} is an integer (run-surface.md §4.1)", path=f"{where}.step"
        )
    return int(step)


def _scalar(value: Any, where: str) -> float:
    if isinstance(value, str) and value in _NONFINITE:
        return _NONFINITE[value]
    if isinstance(value, bool) or not isinstance(value, (int, float, np.integer, np.floating)):
        raise InvalidRecord(
            f"a scalar value is a number, not {value!r} (run-surface.md §4.1)",
            path=f"{where}.value",
        )
    return float(value)


def make_event(
    key: Any,
    value: Any,
    *,
    step: Any = None,
    wall_time: Any = None,
    type: Any = "scalar",
    tags: Any = None,
    where: str = "metrics",
) -> MetricEvent:
    """A checked event: non-empty key, integer step, RFC 3339 time, a number for ``scalar``.

    Raises
    ------
    InvalidRecord
        A field breaks run-surface.md §4.1.
    """
    safe_name(key)
    if not isinstance(type, str) or not type:
        raise InvalidRecord(
            "an event type is a non-empty string (run-surface.md §4.1)", path=f"{where}.type"
        )
    wall = now_rfc3339() if wall_time is None else wall_time
    _timestamp(wall, f"{where}.wall_time")
    if tags is not None and not isinstance(tags, Mapping):
        raise InvalidRecord("tags is a JSON object (run-surface.md §4.1)", path=f"{where}.tags")
    checked = _scalar(value, where) if type == "scalar" else value
    return MetricEvent(
        key, checked, wall, _check_step(step, where), type, None if tags is None else dict(tags)
    )


def _wire_value(event: MetricEvent) -> Any:
    value = event.value
    if event.type == "scalar" and not math.isfinite(value):
        return "NaN" if math.isnan(value) else ("Infinity" if value > 0 else "-Infinity")
    return value


def encode_event(event: MetricEvent) -> bytes:
    """The WAL line of ``event``: compact ``t/k/s/w/v(/tags)`` JSON and ``\\n`` (§4.3)."""
    wire: dict[str, Any] = {"t": event.type, "k": event.key}
    if event.step is not None:
        wire["s"] = event.step
    wire["w"] = event.wall_time
    wire["v"] = _wire_value(event)
    if event.tags is not None:
        wire["tags"] = event.tags
    text = json.dumps(wire, allow_nan=False, separators=(",", ":"), ensure_ascii=False)
    return text.encode("utf-8") + b"\n"


def complete_lines(data: bytes) -> bytes:
    """``data`` cut just after its last ``\\n``: a torn (unterminated) tail is dropped (§4.3)."""
    return data[: data.rfind(b"\n") + 1]


def _decode_line(line: bytes, number: int) -> MetricEvent:
    where = f"{_WAL}:{number}"
    try:
        wire = json.loads(line.decode("utf-8"), parse_constant=_no_constant)
    except (UnicodeDecodeError, ValueError) as exc:
        raise InvalidRecord(
            f"line {number} is not valid UTF-8 JSON, which is corruption (run-surface.md §4.3):"
            f" {exc}",
            path=where,
        ) from None
    if not isinstance(wire, dict):
        raise InvalidRecord(
            f"line {number} is not a single JSON object, which is corruption (run-surface.md §4.3)",
            path=where,
        )
    return make_event(
        wire.get("k"),
        wire.get("v"),
        step=wire.get("s"),
        wall_time=wire.get("w"),
        type=wire.get("t"),
        tags=wire.get("tags"),
        where=where,
    )


def _no_constant(token: str) -> Any:
    raise ValueError(f"bare {token} is not JSON")


def parse_wal(data: bytes, *, first_line: int = 1) -> tuple[list[MetricEvent], int]:
    """The events of the complete lines of ``data`` and how many lines were complete.

    Blank lines are skipped (and counted); an unterminated tail is ignored.

    Raises
    ------
    InvalidRecord
        A complete line is not UTF-8 or not a single JSON object (§4.3).
    """
    lines = complete_lines(data).split(b"\n")[:-1]
    events = [
        _decode_line(line, first_line + i) for i, line in enumerate(lines) if line.strip() != b""
    ]
    return events, len(lines)


def wal_lines(data: bytes, *, first_line: int = 1) -> Iterator[tuple[MetricEvent | None, int]]:
    """Each complete line of ``data`` as ``(event, offset just past its \\n)``.

    A blank line gives ``None``; an unterminated tail is not a line.

    Raises
    ------
    InvalidRecord
        A complete line is not UTF-8 or not a single JSON object (§4.3).
    """
    start = 0
    number = first_line
    while (end := data.find(b"\n", start)) >= 0:
        line = data[start:end]
        yield (None if line.strip() == b"" else _decode_line(line, number)), end + 1
        start, number = end + 1, number + 1


def _exact_f64(value: Any) -> bool:
    if isinstance(value, bool) or not isinstance(value, (int, float)):
        return False
    if isinstance(value, float) or abs(value) <= 2**53:
        return True
    return abs(value) < 2**1024 and float(value) == value


@dataclass(slots=True)
class MetricSeries:
    """The points of one series key after the duplicate-step rule (§4.1).

    Attributes
    ----------
    key
        The series key.
    type
        The event type (``scalar`` for numeric series).
    values, steps, wall_times
        One entry per point, aligned; ``steps`` holds ``None`` for a point
        logged without a step.
    """

    key: str
    type: str = "scalar"
    values: list[Any] = field(default_factory=list)
    steps: list[int | None] = field(default_factory=list)
    wall_times: list[str] = field(default_factory=list)
    _at_step: dict[int, int] = field(default_factory=dict, init=False, repr=False, compare=False)

    def add(self, event: MetricEvent) -> None:
        """Add ``event``: the later of two events with one step replaces the earlier's point."""
        at = None if event.step is None else self._at_step.get(event.step)
        if at is not None:
            self.values[at] = event.value
            self.wall_times[at] = event.wall_time
            return
        if event.step is not None:
            self._at_step[event.step] = len(self.values)
        self.values.append(event.value)
        self.steps.append(event.step)
        self.wall_times.append(event.wall_time)

    def __len__(self) -> int:
        return len(self.values)

    @property
    def has_steps(self) -> bool:
        """Whether every point carries a step (then a ``steps/`` array is written)."""
        return bool(self.steps) and all(s is not None for s in self.steps)

    def value_array(self) -> npt.NDArray[Any]:
        """The values as ``float64`` (scalar series, custom ones holding only numbers exactly
        representable) or an object array (other custom series)."""
        if self.type == "scalar" or all(_exact_f64(v) for v in self.values):
            return np.asarray(self.values, dtype=np.float64)
        return np.asarray(self.values, dtype=object)

    def step_array(self) -> npt.NDArray[np.int64] | None:
        """The steps as ``int64`` when every point has one, else ``None``."""
        return np.asarray(self.steps, dtype=np.int64) if self.has_steps else None

    def catalog_entry(self) -> dict[str, Any]:
        """The catalog entry ``series.<key>`` (§4.2): type, count, latest step and time."""
        return {
            "type": self.type,
            "count": len(self),
            "latest_step": self.steps[-1] if self.steps else None,
            "latest_timestamp": self.wall_times[-1] if self.wall_times else None,
        }


def merge_series(
    events: Iterable[MetricEvent], into: dict[str, MetricSeries] | None = None
) -> dict[str, MetricSeries]:
    """Group ``events`` per key in log order, applying the duplicate-step rule (§4.1)."""
    series = {} if into is None else into
    for event in events:
        found = series.get(event.key)
        if found is None:
            found = series[event.key] = MetricSeries(event.key, event.type)
        found.add(event)
    return series


def densifiable(series: MetricSeries | None, event: MetricEvent) -> bool:
    """Whether ``event`` can join ``series`` in the closed form (§4.2).

    The closed form holds one ``f64`` per point, one ``type`` per key and a
    ``steps/`` array only when every point has a step. So an event of a
    custom type densifies when its value is a number binary64 holds exactly;
    an object, a string or a huge integer stays in the WAL, as does an event
    whose type or step presence differs from its series' earlier points.
    """
    if event.type != "scalar" and not _exact_f64(event.value):
        return False
    if series is None or not len(series):
        return True
    return series.type == event.type and series.has_steps == (event.step is not None)
