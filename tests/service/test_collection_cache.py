"""The service's catalog on a bucket serves published collections from its cache directory."""

from __future__ import annotations

import time
from pathlib import Path

import numpy as np
import pytest
from fastapi.testclient import TestClient

import mrecd
from mrecd import api
from mrecd.service import Settings, create_app


def published(tmp_path: Path, url: str, tags: list[str], *, overwrite: bool = False) -> None:
    """Publish a collection ``ala`` of one record per tag (each publish a fresh file)."""
    path = tmp_path / f"owner-{len(tags)}" / "ala.mrec.lmdb"
    path.parent.mkdir()
    with mrecd.create_collection(path, meta={"units": {}}) as col:
        system = mrecd.Frame({"atoms": {"element": np.array(["O", "H"])}})
        col.extend([{"meta": {"tag": t}, "system": system} for t in tags])
    api.publish_collection(path, url, overwrite=overwrite, part_size=4096)


def tags(client: TestClient) -> list[str]:
    catalog: api.Catalog = client.app.state.runs.catalog  # type: ignore[attr-defined]
    with catalog.collection("ala") as col:
        return [r.meta["tag"] for r in col]


def test_settings_name_the_cache(monkeypatch: pytest.MonkeyPatch, tmp_path: Path) -> None:
    monkeypatch.setenv("MRECD_CACHE_DIR", str(tmp_path / "cache"))
    monkeypatch.setenv("MRECD_CACHE_REVALIDATE_SECONDS", "5")
    settings = Settings()
    assert settings.cache_dir == str(tmp_path / "cache")
    assert settings.cache_revalidate_seconds == 5.0
    monkeypatch.setenv("MRECD_CACHE_REVALIDATE_SECONDS", "-1")
    with pytest.raises(ValueError, match="cache_revalidate_seconds"):
        Settings()


def test_two_service_replicas_serve_one_snapshot_and_a_newer_one(
    s3_bucket: str, tmp_path: Path
) -> None:
    url = f"{s3_bucket}/lab"
    published(tmp_path, url, ["a", "b"])
    apps = [
        create_app(
            Settings(
                store=url, cache_dir=str(tmp_path / f"cache-{k}"), cache_revalidate_seconds=0.1
            )
        )
        for k in range(2)
    ]
    with TestClient(apps[0]) as one, TestClient(apps[1]) as two:
        assert one.get("/readyz").status_code == 200 and two.get("/readyz").status_code == 200
        assert tags(one) == tags(two) == ["a", "b"]
        published(tmp_path, url, ["a", "b", "c"], overwrite=True)
        time.sleep(0.15)
        assert tags(one) == tags(two) == ["a", "b", "c"]
        catalog: api.Catalog = one.app.state.runs.catalog  # type: ignore[attr-defined]
        with pytest.raises(mrecd.ReadOnlyError, match="appends stay on the replica"):
            catalog.collection("ala", "r+")


def test_two_uvicorn_replicas_serve_a_snapshot_over_http_and_pick_up_a_newer_one(
    s3_bucket: str, tmp_path: Path
) -> None:
    import httpx

    from _uvicorn import serve_app
    from mrecd_client import Client

    url = f"{s3_bucket}/lab"
    published(tmp_path, url, ["a", "b"])
    settings = [
        Settings(store=url, cache_dir=str(tmp_path / f"http-{k}"), cache_revalidate_seconds=0.2)
        for k in range(2)
    ]
    with serve_app(create_app(settings[0])) as one, serve_app(create_app(settings[1])) as two:

        def served_tags(base: str) -> list[str]:
            with Client(base) as client:
                col = client.collection("ala")
                return [record.meta["tag"] for record in col.read_many(range(len(col)))]

        assert served_tags(one) == served_tags(two) == ["a", "b"]
        refused = httpx.post(f"{one}/v1/collections/ala/records", json={"meta": {"tag": "x"}})
        assert refused.status_code == 405
        assert refused.headers["content-type"].startswith("application/problem+json")
        assert "appends stay on the replica" in refused.json()["detail"]
        published(tmp_path, url, ["a", "b", "c"], overwrite=True)
        time.sleep(0.3)
        assert served_tags(one) == served_tags(two) == ["a", "b", "c"]
