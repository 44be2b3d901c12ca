"""The force-field section (forcefield.md): the document, its style tables, lookups.

Pure: depends only on the model. Stored by the Zarr binding as a
frame-shaped group (attributes = document, one block per style) and by the
LMDB binding as the ``ff`` value (header ``meta`` = document, blocks = tables).

:class:`ForceField` validates a section on construction (§12.1), converts a
version-1 one (§11; :func:`convert_v1_frame` converts the frames that link
to it) and answers the lookups of §13 with the result types
below, each of which has a plain-JSON ``to_dict()`` and a short form
``result[key]`` for the common one-row answer.

Translators build a section from a foreign file (§9): :func:`from_openmm_xml`
(OpenMM ForceField XML) and :func:`from_gromacs_top` (GROMACS topology).
"""

from ._document import Style
from ._gromacs import from_gromacs_top
from ._model import ForceField
from ._names import block_name, decode_style, encode_style, parse_block_name
from ._openmm import OPENMM_UNITS, from_openmm_xml
from ._results import (
    AmbiguousLookup,
    AtomLookup,
    Match,
    MatchLookup,
    PairLookup,
    PairTerm,
    PairValue,
    TableRow,
    TermLookup,
)
from ._units import PRESETS
from ._v1_frames import convert_v1_frame

__all__ = [
    "OPENMM_UNITS",
    "PRESETS",
    "AmbiguousLookup",
    "AtomLookup",
    "ForceField",
    "Match",
    "MatchLookup",
    "PairLookup",
    "PairTerm",
    "PairValue",
    "Style",
    "TableRow",
    "TermLookup",
    "block_name",
    "convert_v1_frame",
    "decode_style",
    "encode_style",
    "from_gromacs_top",
    "from_openmm_xml",
    "parse_block_name",
]
