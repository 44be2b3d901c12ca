"""``FrozenDict``: a read-only ``dict`` for mappings shared by every lookup answer."""

from __future__ import annotations

from typing import Any, NoReturn

__all__ = ["FrozenDict"]


class FrozenDict(dict[str, Any]):
    """A ``dict`` that refuses mutation; still JSON-serializable, picklable and copyable.

    The lookup index hands the same style-level ``params`` and ``units`` to every
    answer, so a caller editing one answer must not change the next.
    """

    __slots__ = ()

    def _refuse(self, *args: Any, **kwargs: Any) -> NoReturn:
        raise TypeError("this mapping is read-only (shared by every lookup answer)")

    __setitem__ = _refuse
    __delitem__ = _refuse
    __ior__ = _refuse
    clear = _refuse
    pop = _refuse
    popitem = _refuse
    setdefault = _refuse
    update = _refuse

    def __reduce__(self) -> tuple[type[FrozenDict], tuple[dict[str, Any]]]:
        return (FrozenDict, (dict(self),))
