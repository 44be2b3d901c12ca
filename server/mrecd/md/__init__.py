"""Trajectories in and out through MDAnalysis: :func:`ingest`, :func:`export`, :func:`universe`.

- :func:`ingest` reads whatever MDAnalysis reads (XTC, TRR, DCD, NetCDF, PDB,
  GRO, LAMMPS dump ... with PSF, PRMTOP, TPR, GRO, PDB topologies) into a new
  record: ``system`` from the topology, a trajectory of x/y/z in Å at a
  declared precision with steps, times and cells.
- :func:`export` writes a record's frames back out (XTC, DCD, PDB, GRO ...).
- :func:`universe` opens a record as an ``MDAnalysis.Universe`` whose reader
  (:class:`MrecReader`) reads frame ``i`` from the record on demand.

MDAnalysis (``pip install 'mrecd[md]'``) is imported on first use, never by
``import mrecd`` or ``import mrecd.md``.
"""

from typing import TYPE_CHECKING, Any

from ._export import export
from ._ingest import Ingested, box_of, ingest, source_precision
from ._system import empty_topology, system_of
from ._target import RecordSink, open_source, split_target, split_url
from ._universe import universe

if TYPE_CHECKING:
    from ._reader import MrecReader

__all__ = [
    "Ingested",
    "MrecReader",
    "RecordSink",
    "box_of",
    "empty_topology",
    "export",
    "ingest",
    "open_source",
    "source_precision",
    "split_target",
    "split_url",
    "system_of",
    "universe",
]


def __getattr__(name: str) -> Any:
    # the reader subclasses an MDAnalysis class, so it loads only when asked for
    if name == "MrecReader":
        from ._reader import MrecReader

        return MrecReader
    raise AttributeError(f"module 'mrecd.md' has no attribute {name!r}")
