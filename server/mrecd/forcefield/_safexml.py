"""XML parsing for translators: the standard library's expat, with DTDs refused.

A force-field file has no use for a document type declaration; refusing any
DTD refuses every entity declaration with it (billion laughs, external
entities), so no entity is ever expanded or fetched.
"""

from __future__ import annotations

import xml.etree.ElementTree as ET
from pathlib import Path
from typing import NoReturn
from xml.parsers import expat

from ..errors import InvalidRecord

__all__ = ["parse_xml"]


def _refuse(where: str, what: str) -> NoReturn:
    raise InvalidRecord(f"{what} is refused: force-field XML needs no DTD or entities", path=where)


def parse_xml(path: Path) -> ET.Element:
    """Parse the XML file at ``path`` into an element tree; refuse DTDs and entities.

    Raises
    ------
    InvalidRecord
        Not well-formed XML, or it declares a DOCTYPE, an entity or a notation.
    NotFound
        No file at ``path`` (``FileNotFoundError`` mapped by the caller).
    """
    where = str(path)
    builder = ET.TreeBuilder()
    parser = expat.ParserCreate()
    parser.SetParamEntityParsing(expat.XML_PARAM_ENTITY_PARSING_NEVER)
    parser.StartElementHandler = builder.start
    parser.EndElementHandler = builder.end
    parser.CharacterDataHandler = builder.data
    parser.ordered_attributes = False
    parser.StartDoctypeDeclHandler = lambda *_: _refuse(where, "a DOCTYPE declaration")
    parser.EntityDeclHandler = lambda *_: _refuse(where, "an entity declaration")
    parser.UnparsedEntityDeclHandler = lambda *_: _refuse(where, "an entity declaration")
    parser.NotationDeclHandler = lambda *_: _refuse(where, "a notation declaration")
    parser.ExternalEntityRefHandler = lambda *_: _refuse(where, "an external entity")
    try:
        parser.Parse(path.read_bytes(), True)
    except expat.ExpatError as exc:
        raise InvalidRecord(f"not well-formed XML: {exc}", path=where) from None
    root: ET.Element = builder.close()
    return root
