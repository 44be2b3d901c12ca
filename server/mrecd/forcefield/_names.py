"""Block names of style tables: ``<category>.<percent-encoded style>`` (forcefield.md §3.1).

The encoding is bit-exact so that two implementations store the same names:
keep the bytes ``A–Z a–z 0–9 - _`` of the style's UTF-8 form, write every other
byte as ``%`` plus two uppercase hex digits. ``urllib.parse.quote`` is not
equivalent (it keeps ``.`` and ``~``), hence the hand-written codec.
"""

from __future__ import annotations

import re
from typing import Final

from ..errors import InvalidRecord

__all__ = ["CATEGORY_PATTERN", "block_name", "decode_style", "encode_style", "parse_block_name"]

_KEEP: Final = frozenset(b"ABCDEFGHIJKLMNOPQRSTUVWXYZabcdefghijklmnopqrstuvwxyz0123456789-_")
#: A category: lowercase ASCII identifier (forcefield.md §2.5); never contains ``.``.
CATEGORY_PATTERN: Final = re.compile(r"^[a-z][a-z0-9_]*$")
_ESCAPE: Final = re.compile(r"%([0-9A-F]{2})")


def encode_style(style: str) -> str:
    """Percent-encode a style name for its block name.

    Parameters
    ----------
    style
        The style's name as written in its ``styles`` entry (any UTF-8 string).

    Returns
    -------
    str
        ``style`` with every byte outside ``A–Z a–z 0–9 - _`` written ``%XX``.

    Examples
    --------
    >>> encode_style("lj/cut/coul/long")
    'lj%2Fcut%2Fcoul%2Flong'
    >>> encode_style("é")
    '%C3%A9'
    """
    return "".join(chr(b) if b in _KEEP else f"%{b:02X}" for b in style.encode("utf-8"))


def decode_style(encoded: str) -> str:
    """Invert :func:`encode_style`; refuse anything it could not have produced.

    Raises
    ------
    InvalidRecord
        A byte that should have been escaped, a lowercase or truncated escape,
        an escaped byte that should have been kept, or bytes that are not UTF-8.
    """
    out = bytearray()
    pos = 0
    while pos < len(encoded):
        char = encoded[pos]
        if char == "%":
            match = _ESCAPE.match(encoded, pos)
            if match is None:
                raise InvalidRecord(
                    f"{encoded!r}: '%' must be followed by two uppercase hex digits (§3.1)"
                )
            byte = int(match.group(1), 16)
            if byte in _KEEP:
                raise InvalidRecord(
                    f"{encoded!r}: byte {char}{match.group(1)} is never escaped (§3.1)"
                )
            out.append(byte)
            pos += 3
            continue
        if ord(char) >= 128 or ord(char) not in _KEEP:
            raise InvalidRecord(f"{encoded!r}: character {char!r} must be percent-encoded (§3.1)")
        out.append(ord(char))
        pos += 1
    try:
        return out.decode("utf-8")
    except UnicodeDecodeError:
        raise InvalidRecord(f"{encoded!r} does not decode to UTF-8 (§3.1)") from None


def block_name(category: str, style: str) -> str:
    """The block name of the table of style entry ``(category, style)``.

    Examples
    --------
    >>> block_name("pair", "lj/cut")
    'pair.lj%2Fcut'
    """
    return f"{category}.{encode_style(style)}"


def parse_block_name(name: str) -> tuple[str, str]:
    """Split a block name at its first ``.`` and decode the style: ``(category, style)``.

    Raises
    ------
    InvalidRecord
        No ``.``, a category that is not ``^[a-z][a-z0-9_]*$``, or a style
        part :func:`decode_style` refuses.
    """
    category, dot, encoded = name.partition(".")
    if not dot or not CATEGORY_PATTERN.match(category) or not encoded:
        raise InvalidRecord(f"{name!r} is not a style block name '<category>.<style>' (§3.1)")
    return category, decode_style(encoded)
