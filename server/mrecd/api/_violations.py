"""``Violation``: one broken rule found by a validator (shared by every section's checks)."""

from __future__ import annotations

import re
from dataclasses import dataclass
from typing import Final

from ..errors import MrecdError

__all__ = ["Violation"]

#: A spec citation as messages carry it: ``(frame.md §7.2)``.
_CITATION: Final = re.compile(r"\(([\w-]+\.md §[\d.]+)")


@dataclass(frozen=True, slots=True)
class Violation:
    """A rule a stored record breaks.

    Attributes
    ----------
    path
        Where: the array or group path inside the record (``frame/atoms/x``),
        optionally followed by a JSON field (``status.state``).
    rule
        The rule broken, as a spec citation (``frame.md §7.1``).
    message
        What is wrong, for a person.
    """

    path: str
    rule: str
    message: str

    def __str__(self) -> str:
        """``path: message``, with ``[rule]`` appended unless the message already cites it."""
        if self.rule in self.message:
            return f"{self.path}: {self.message}"
        return f"{self.path}: {self.message} [{self.rule}]"

    @classmethod
    def from_error(cls, exc: MrecdError, *, path: str = "", rule: str = "") -> Violation:
        """The violation a refusal describes: its path, and the citation its message carries.

        ``path`` and ``rule`` are fallbacks for an error that names neither.
        """
        found = _CITATION.search(exc.message)
        return cls(
            exc.path or path or "/", found.group(1) if found else rule or "mrecd", exc.message
        )
