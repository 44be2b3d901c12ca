"""The service's OpenAPI document: ``python -m mrecd.service.openapi > openapi/openapi.json``."""

from __future__ import annotations

import json

from .app import create_app
from .settings import Settings

__all__ = ["document"]


def document() -> str:
    """The OpenAPI document of the app, as stable JSON text (sorted keys, trailing newline)."""
    app = create_app(Settings(store="memory://openapi"))
    return json.dumps(app.openapi(), indent=2, sort_keys=True) + "\n"


if __name__ == "__main__":
    print(document(), end="")
