"""The mrecd HTTP service (FastAPI): :func:`create_app` over :mod:`mrecd.api`.

Nothing but :mod:`mrecd.cli` imports this package; the routes call only the
local API, on worker threads.
"""

from ._serve import is_loopback, serve
from .app import create_app
from .settings import Settings, TokenGrant

__all__ = ["Settings", "TokenGrant", "create_app", "is_loopback", "serve"]
