"""The force-field section (forcefield.md): the document, its style tables, lookups.

Pure: depends only on the model. Stored by the Zarr binding as a
frame-shaped group (attributes = document, one block per style) and by the
LMDB binding as the ``ff`` value (header ``meta`` = document, blocks = tables).

:class:`ForceField` validates a section on construction (§12.1), converts a
version-1 one (§11; :func:`convert_v1_frame` converts the frames that link
to it) and answers the lookups of §13 with the result types
below, each of which has a plain-JSON ``to_dict()``.
"""

from ._document import Style
from ._model import ForceField
from ._names import block_name, decode_style, encode_style, parse_block_name
from ._results import (
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
    "PRESETS",
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
    "parse_block_name",
]
