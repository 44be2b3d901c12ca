"""The page's routes and files without a browser: public, outside the API document, vendored."""

from __future__ import annotations

import hashlib
import json
from pathlib import Path

import pytest
from fastapi.testclient import TestClient

from mrecd.service import Settings, create_app
from mrecd.service.routes.page import STATIC

VENDOR = STATIC / "vendor"
TOKENS = [{"token": "t0ken", "scope": "read"}]


@pytest.fixture
def guarded(tmp_path: Path) -> TestClient:
    with TestClient(create_app(Settings(store=str(tmp_path / "d"), tokens=TOKENS))) as client:
        yield client


def test_the_page_is_public_and_the_data_is_not(guarded: TestClient) -> None:
    page = guarded.get("/")
    assert page.status_code == 200
    assert page.headers["content-type"].startswith("text/html")
    assert '<script type="module" src="/static/js/app.js">' in page.text
    script = guarded.get("/static/js/app.js")
    assert script.status_code == 200
    assert "javascript" in script.headers["content-type"]
    assert guarded.get("/v1/records").status_code == 401


def test_page_routes_are_not_part_of_the_api_document(guarded: TestClient) -> None:
    paths = guarded.get("/openapi.json").json()["paths"]
    assert "/" not in paths
    assert not any(p.startswith("/static") for p in paths)


@pytest.mark.parametrize(
    "path", ["/static/../app.py", "/static/%2e%2e/app.py", "/static/js/nope.js", "/static"]
)
def test_static_files_stay_inside_their_folder(guarded: TestClient, path: str) -> None:
    r = guarded.get(path)
    assert r.status_code == 404
    assert "create_app" not in r.text


def test_every_file_the_page_loads_is_served_from_the_package(guarded: TestClient) -> None:
    page = guarded.get("/").text
    for ref in ("/static/style.css", "/static/vendor/uplot/uPlot.iife.min.js"):
        assert ref in page
        assert guarded.get(ref).status_code == 200
    assert "http://" not in page and "https://" not in page, "no CDN"


def test_vendored_files_match_their_checksums_and_carry_licences() -> None:
    listed = {}
    for line in (VENDOR / "SHA256SUMS").read_text().splitlines():
        digest, name = line.split(maxsplit=1)
        listed[name.removeprefix("./")] = digest
    on_disk = {
        str(p.relative_to(VENDOR))
        for p in VENDOR.rglob("*")
        if p.is_file() and p.name not in {"SHA256SUMS", "README.md"}
    }
    assert set(listed) == on_disk
    for name, digest in listed.items():
        assert hashlib.sha256((VENDOR / name).read_bytes()).hexdigest() == digest, name
    assert (VENDOR / "uplot" / "LICENSE").is_file()
    assert (VENDOR / "3dmol" / "LICENSE").is_file()


def test_vendor_readme_names_the_locked_versions() -> None:
    lock = json.loads((VENDOR / "package-lock.json").read_text())["packages"]
    readme = (VENDOR / "README.md").read_text()
    for package in ("uplot", "3dmol"):
        version = lock[f"node_modules/{package}"]["version"]
        assert f"{package} {version}" in readme
    assert "scripts/vendor-js" in readme
