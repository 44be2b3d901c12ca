"""Service settings: the store, bearer tokens and request limits, read from ``MRECD_*``.

Every field can be set from the environment (``MRECD_STORE=./data``,
``MRECD_MAX_BODY_BYTES=...``; ``MRECD_TOKENS`` is a JSON list of grants) or
passed to :class:`Settings` directly, which is what the tests do.
"""

from __future__ import annotations

from typing import Literal

from pydantic import BaseModel, Field, SecretStr
from pydantic_settings import BaseSettings, SettingsConfigDict

__all__ = ["SCOPES", "Scope", "Settings", "TokenGrant"]

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
    """

    model_config = SettingsConfigDict(env_prefix="MRECD_", extra="ignore")

    store: str = "./data"
    tokens: list[TokenGrant] = Field(default_factory=list)
    anonymous_read: bool = False
    max_body_bytes: int = Field(default=256 * 2**20, gt=0)
    max_frames_per_request: int = Field(default=100_000, gt=0)
    max_atoms_per_frame: int = Field(default=50_000_000, gt=0)
    page_limit: int = Field(default=1000, gt=0)
    events_poll_seconds: float = Field(default=0.1, gt=0)
    producer_gap_wait_seconds: float = Field(default=5.0, ge=0)
    workers: int = Field(default=1, ge=1)
    writer_lease_wait_seconds: float = Field(default=30.0, ge=0)
    writer_lease_hold_seconds: float = Field(default=0.1, ge=0)
