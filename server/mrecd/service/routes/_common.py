"""Helpers the routers share: running blocking calls off the loop, JSON-ready arrays."""

from __future__ import annotations

from collections.abc import Callable
from typing import Any

import numpy as np
import numpy.typing as npt
from anyio import to_thread

__all__ = ["array_json", "blocking"]


async def blocking[T](fn: Callable[[], T]) -> T:
    """Run ``fn`` on a worker thread (zarr, numpy, fsync never run on the event loop)."""
    return await to_thread.run_sync(fn)


def array_json(values: npt.NDArray[Any] | None) -> Any:
    """``values`` as JSON lists; non-finite reals as ``"NaN"``, ``"Infinity"``, ``"-Infinity"``."""
    if values is None:
        return None
    if values.dtype.kind == "f" and not bool(np.isfinite(values).all()):
        spelled = np.where(
            np.isnan(values), "NaN", np.where(values > 0, "Infinity", "-Infinity")
        ).astype(object)
        mixed = np.where(np.isfinite(values), values.astype(object), spelled)
        return mixed.tolist()
    if values.dtype.kind in "SU":
        return values.astype(str).tolist()
    return values.tolist()
