"""Reading and atomically replacing ``zarr.json`` documents on a local directory store."""

from __future__ import annotations

import json
import os
from pathlib import Path
from typing import Any

from ...errors import InvalidRecord

__all__ = ["fsync_dir", "read_json", "write_json_atomic"]


def _no_constant(token: str) -> Any:
    raise ValueError(f"bare {token} is not JSON")


def read_json(path: Path) -> dict[str, Any] | None:
    """Parse a ``zarr.json`` strictly (no bare NaN/Infinity); ``None`` when the file is missing."""
    try:
        text = path.read_bytes()
    except FileNotFoundError:
        return None
    except NotADirectoryError:
        return None
    try:
        document = json.loads(text, parse_constant=_no_constant)
    except (ValueError, UnicodeDecodeError) as exc:
        raise InvalidRecord(f"not valid JSON: {exc}", path=str(path)) from None
    if not isinstance(document, dict):
        raise InvalidRecord("zarr.json is not a JSON object", path=str(path))
    return document


def fsync_dir(path: Path) -> None:
    """fsync a directory so a rename inside it is on disk."""
    fd = os.open(path, os.O_RDONLY)
    try:
        os.fsync(fd)
    finally:
        os.close(fd)


def write_json_atomic(path: Path, document: dict[str, Any], *, durable: bool = False) -> None:
    """Replace ``path`` with ``document`` atomically: write a temporary sibling, then rename.

    With ``durable`` the temporary file is fsynced before the rename and the
    directory after it, so the new content survives power loss.
    """
    data = json.dumps(document, allow_nan=False, separators=(",", ":"), ensure_ascii=False).encode()
    tmp = path.with_name(f".{path.name}.{os.getpid()}.tmp")
    fd = os.open(tmp, os.O_WRONLY | os.O_CREAT | os.O_TRUNC, 0o644)
    try:
        os.write(fd, data)
        if durable:
            os.fsync(fd)
    finally:
        os.close(fd)
    os.replace(tmp, path)
    if durable:
        fsync_dir(path.parent)
