"""``mrecd serve``: run the app under uvicorn, refusing an open server beyond loopback."""

from __future__ import annotations

import copy
import ipaddress
import os
from pathlib import Path
from typing import Any

from ..errors import InvalidRecord
from .settings import Settings, check_config

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
    store: str | None,
    *,
    host: str,
    port: int,
    workers: int = 1,
    insecure: bool = False,
    config: str | None = None,
) -> None:
    """Serve ``store`` (default ``MRECD_STORE`` or ``./data``, created) until interrupted.

    Settings other than the store come from the ``MRECD_*`` environment and
    the TOML file ``config`` (the environment wins); each worker process
    builds its app from them.

    Raises
    ------
    InvalidRecord
        ``host`` is beyond loopback, no token is configured and not
        ``insecure``; or ``config`` is missing, not TOML, or names an unknown
        setting or a bad value.
    """
    if config is not None:
        check_config(config)
        os.environ["MRECD_CONFIG"] = str(Path(config).resolve())
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

    uvicorn.run(
        "mrecd.service.app:create_app",
        factory=True,
        host=host,
        port=port,
        workers=workers,
        log_config=_log_config(),
        access_log=False,  # ours (mrecd.access) is one JSON line per request instead
    )


def _log_config() -> dict[str, Any]:
    """uvicorn's logging, plus the ``mrecd.access`` JSON lines on stdout as they are."""
    from uvicorn.config import LOGGING_CONFIG

    config = copy.deepcopy(LOGGING_CONFIG)
    config["formatters"]["mrecd_json"] = {"format": "%(message)s"}
    config["handlers"]["mrecd_access"] = {
        "class": "logging.StreamHandler",
        "formatter": "mrecd_json",
        "stream": "ext://sys.stdout",
    }
    config["loggers"]["mrecd.access"] = {
        "handlers": ["mrecd_access"],
        "level": "INFO",
        "propagate": False,
    }
    return config
