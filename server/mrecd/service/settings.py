"""Service settings: the store, bearer tokens and request limits, read from ``MRECD_*``.

Every field can be set from the environment (``MRECD_STORE=./data``,
``MRECD_MAX_BODY_BYTES=...``; ``MRECD_TOKENS`` is a JSON list of grants), from
a TOML file named by ``MRECD_CONFIG`` (``mrecd serve --config FILE``; the
environment wins over the file), or passed to :class:`Settings` directly,
which is what the tests do.
"""

from __future__ import annotations

import os
import tomllib
from pathlib import Path
from typing import Any, Literal

from pydantic import BaseModel, Field, SecretStr, ValidationError
from pydantic_settings import (
    BaseSettings,
    PydanticBaseSettingsSource,
    SettingsConfigDict,
    TomlConfigSettingsSource,
)

from ..errors import InvalidRecord

__all__ = ["SCOPES", "Scope", "Settings", "TokenGrant", "check_config"]

Scope = Literal["read", "append", "admin"]
#: scopes in increasing power: a grant of one scope also grants those before it
SCOPES: tuple[Scope, ...] = ("read", "append", "admin")


class TokenGrant(BaseModel):
    """One bearer token and what it may do.

    Parameters
    ----------
    token
        The secret a client sends as ``Authorization: Bearer <token>``.
    scope
        ``read`` (GET), ``append`` (also create records and POST frames) or
        ``admin`` (also delete records).
    prefix
        Record names the grant covers: those starting with ``prefix`` (all when empty).
    """

    token: SecretStr
    scope: Scope = "read"
    prefix: str = ""


class Settings(BaseSettings):
    """What one service process serves and how.

    Parameters
    ----------
    store
        The catalog URL or path (``./data``, ``file:///data``, ``memory://x``, ``s3://...``).
    tokens
        Bearer token grants; none configured means the service is open.
    anonymous_read
        With tokens configured, let requests without a token read.
    max_body_bytes
        Largest request body accepted (413 beyond).
    max_frames_per_request
        Most frames one POST may carry (413 beyond).
    max_atoms_per_frame
        Most rows any block of a posted frame may have (422 beyond).
    page_limit
        Largest ``limit`` of a record listing page (and its default).
    live_seconds
        A record whose last commit is younger than this is summarized as
        ``live`` (the page shows it so); older ones as closed.
    events_poll_seconds
        How often a server-sent event stream re-reads the commit marker.
    producer_gap_wait_seconds
        How long a producer's batch that overtook an earlier one waits for it
        before it is refused with ``SequenceGap``.
    workers
        Processes serving this store (``mrecd serve --workers`` sets it). Above
        1 a trajectory's writer lease is given up after every group commit, so
        that every worker can commit.
    writer_lease_wait_seconds
        How long a commit waits for another process to give a trajectory's
        writer lease up before answering ``WriterBusy``.
    writer_lease_hold_seconds
        With several workers, how long a worker with queued appends keeps a
        trajectory's writer lease (and its open writer) across group commits
        before handing it over; an idle worker gives it up at once.
    metrics_anonymous
        Who may read ``/metrics`` without a token when tokens are configured:
        ``loopback`` (default: a scraper on the same host), ``always`` (a scraper
        on the network; the metrics name routes, never records) or ``never``
        (a token with ``read`` on every name).
    cache_dir
        With an object-storage ``store``: the local directory where this
        replica keeps verified copies of the collections published there
        (``mrecd push``); unset, it serves none.
    cache_revalidate_seconds
        How long a cached collection is served before its manifest is checked
        again with a conditional GET (a newer snapshot is then fetched and
        swapped in).
    """

    model_config = SettingsConfigDict(env_prefix="MRECD_", extra="ignore")

    @classmethod
    def settings_customise_sources(
        cls,
        settings_cls: type[BaseSettings],
        init_settings: PydanticBaseSettingsSource,
        env_settings: PydanticBaseSettingsSource,
        dotenv_settings: PydanticBaseSettingsSource,
        file_secret_settings: PydanticBaseSettingsSource,
    ) -> tuple[PydanticBaseSettingsSource, ...]:
        """Arguments, then ``MRECD_*`` variables, then the TOML file ``MRECD_CONFIG`` names."""
        config = os.environ.get("MRECD_CONFIG")
        sources = [init_settings, env_settings]
        if config:
            sources.append(TomlConfigSettingsSource(settings_cls, toml_file=config))
        return (*sources, dotenv_settings, file_secret_settings)

    store: str = "./data"
    tokens: list[TokenGrant] = Field(default_factory=list)
    anonymous_read: bool = False
    max_body_bytes: int = Field(default=256 * 2**20, gt=0)
    max_frames_per_request: int = Field(default=100_000, gt=0)
    max_atoms_per_frame: int = Field(default=50_000_000, gt=0)
    page_limit: int = Field(default=1000, gt=0)
    live_seconds: float = Field(default=60.0, gt=0)
    events_poll_seconds: float = Field(default=0.1, gt=0)
    producer_gap_wait_seconds: float = Field(default=5.0, ge=0)
    workers: int = Field(default=1, ge=1)
    writer_lease_wait_seconds: float = Field(default=30.0, ge=0)
    writer_lease_hold_seconds: float = Field(default=0.1, ge=0)
    metrics_anonymous: Literal["loopback", "always", "never"] = "loopback"
    cache_dir: str | None = None
    cache_revalidate_seconds: float = Field(default=30.0, ge=0)


def check_config(path: str | Path) -> None:
    """Refuse a settings file that is missing, not TOML, names unknown keys or bad values.

    Parameters
    ----------
    path
        A TOML file of :class:`Settings` fields (``store = "./data"``,
        ``[[tokens]]`` tables of ``token``, ``scope``, ``prefix``, ...).

    Raises
    ------
    InvalidRecord
        What is wrong, with ``path`` naming ``--config`` or the key at fault.
    """
    try:
        document: dict[str, Any] = tomllib.loads(Path(path).read_text())
    except OSError as exc:
        raise InvalidRecord(f"cannot read {path}: {exc.strerror}", path="--config") from exc
    except tomllib.TOMLDecodeError as exc:
        raise InvalidRecord(f"{path} is not TOML: {exc}", path="--config") from exc
    unknown = sorted(set(document) - set(Settings.model_fields))
    if unknown:
        raise InvalidRecord(
            f"{path} names no setting {unknown[0]!r} (settings: {sorted(Settings.model_fields)})",
            path=unknown[0],
        )
    try:
        Settings.model_validate(document)
    except ValidationError as exc:
        first = exc.errors()[0]
        where = ".".join(str(p) for p in first["loc"])
        raise InvalidRecord(f"{path}: {first['msg']}", path=where) from exc
