"""Where :mod:`mrecd.md` imports MDAnalysis from, with an install hint when it is missing."""

from __future__ import annotations

from typing import Any

__all__ = ["mdanalysis"]

INSTALL_HINT = "mrecd.md needs MDAnalysis: pip install 'mrecd[md]'"


def mdanalysis() -> Any:
    """The :mod:`MDAnalysis` package, imported on first use.

    Raises
    ------
    ImportError
        MDAnalysis is not installed; the message says how to install it.
    """
    try:
        import MDAnalysis
    except ImportError as exc:
        raise ImportError(INSTALL_HINT) from exc
    return MDAnalysis
