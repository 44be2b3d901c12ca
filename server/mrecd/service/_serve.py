"""``mrecd serve``: run the app under uvicorn, refusing an open server beyond loopback."""

from __future__ import annotations

import ipaddress
import os
from pathlib import Path

from ..errors import InvalidRecord
from .settings import Settings

__all__ = ["is_loopback", "serve"]


def is_loopback(host: str) -> bool:
    """Whether ``host`` binds only loopback (``127.0.0.1``, ``::1``, ``localhost``)."""
    if host == "localhost":
        return True
    try:
        return ipaddress.ip_address(host).is_loopback
    except ValueError:
        return False


def serve(
    store: str | None, *, host: str, port: int, workers: int = 1, insecure: bool = False
) -> None:
    """Serve ``store`` (default ``MRECD_STORE`` or ``./data``, created) until interrupted.

    Settings other than the store come from the ``MRECD_*`` environment; each
    worker process builds its app from it.

    Raises
    ------
    InvalidRecord
        ``host`` is beyond loopback, no token is configured and not ``insecure``.
    """
    if store is not None:
        os.environ["MRECD_STORE"] = store
    # every worker's app learns that others share the store (it then gives leases up)
    os.environ["MRECD_WORKERS"] = str(workers)
    settings = Settings()
    if not settings.tokens and not is_loopback(host) and not insecure:
        raise InvalidRecord(
            f"refusing to serve {host} without tokens (set MRECD_TOKENS, or pass --insecure)",
            path="--host",
        )
    if "://" not in settings.store:
        Path(settings.store).mkdir(parents=True, exist_ok=True)
    import uvicorn

    uvicorn.run("mrecd.service.app:create_app", factory=True, host=host, port=port, workers=workers)
