"""Fixtures of the Zarr record binding tests (helpers live in ``zarr_helpers``)."""

from __future__ import annotations

from pathlib import Path

import numpy as np
import pytest
from zarr_helpers import water_frame

import mrecd


@pytest.fixture
def water(tmp_path: Path) -> Path:
    """A record with meta, system, frame and status, at ``tmp_path/water.mrec``."""
    path = tmp_path / "water.mrec"
    system = mrecd.Frame({"atoms": {"element": np.array(["O", "H", "H"])}}, meta={"spin": 1})
    mrecd.create_record(
        path,
        meta={"record_id": "w"},
        system=system,
        frame=water_frame(),
        status={"state": "running"},
    ).close()
    return path
