"""The force-field section (forcefield.md): the document, its style tables, lookups.

Pure: depends only on the model. Stored by the Zarr binding as a
frame-shaped group (attributes = document, one block per style) and by the
LMDB binding as the ``ff`` value (header ``meta`` = document, blocks = tables).
"""

from ._model import ForceField

__all__ = ["ForceField"]
