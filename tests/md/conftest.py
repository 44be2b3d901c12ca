"""Records ingested once per session from MDAnalysisTests' files, and the originals to compare."""

from __future__ import annotations

import warnings
from dataclasses import dataclass
from pathlib import Path
from typing import Any

import MDAnalysis as mda  # noqa: N813 - the package's own convention
import pytest
from MDAnalysisTests import datafiles as data

import mrecd


@dataclass
class Ingested:
    """One source ingested: its files, the frame slice, the store and the record name."""

    files: list[str]
    store: Path
    name: str
    selection: slice

    def original(self) -> Any:
        """A fresh MDAnalysis Universe over the source files."""
        with warnings.catch_warnings():
            warnings.simplefilter("ignore")  # MDAnalysis warns about absent dt, guessed masses ...
            return mda.Universe(*self.files)

    def record(self) -> mrecd.StoredRecord:
        return mrecd.open(self.store).record(self.name)


SOURCES: dict[str, tuple[list[str], slice]] = {
    "xtc": ([data.GRO, data.XTC], slice(None)),  # adk_oplsaa, 47,681 atoms, 10 frames
    "dcd": ([data.PSF, data.DCD], slice(0, 12)),  # adk in vacuum, 3341 atoms, no cell
    "triclinic": ([data.PSF_TRICLINIC, data.DCD_TRICLINIC], slice(None)),
    "trr": ([data.TPR, data.TRR], slice(0, 3)),  # elements, charges, chains, molecules
    "ncdf": ([data.PRMncdf, data.NCDF], slice(1, None, 3)),  # no steps in the file
    "pdb": ([data.PDB_small], slice(None)),  # one frame; chains, icodes, b-factors
}


class Ingests:
    """Each source ingested on first use, once per session, into one store."""

    def __init__(self, store: Path) -> None:
        self.store = store
        self._done: dict[str, Ingested] = {}

    def __getitem__(self, name: str) -> Ingested:
        if name not in self._done:
            files, selection = SOURCES[name]
            with warnings.catch_warnings():
                warnings.simplefilter("ignore")
                mrecd.ingest(
                    files,
                    self.store,
                    name,
                    start=selection.start,
                    stop=selection.stop,
                    step=selection.step,
                    progress=False,
                )
            self._done[name] = Ingested(files, self.store, name, selection)
        return self._done[name]


@pytest.fixture(scope="session")
def ingested(tmp_path_factory: pytest.TempPathFactory) -> Ingests:
    return Ingests(tmp_path_factory.mktemp("md") / "store")
