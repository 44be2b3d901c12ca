"""The page in a real browser: Debian's Chromium driven by Playwright, a real uvicorn, a writer.

The browser tests skip only when no Chromium (or no Playwright) is found and
``CI`` is unset; under CI they fail instead, so a CI machine that lost its
browser cannot pass by skipping.
"""

from __future__ import annotations

import json
import os
import shutil
import threading
import time
from collections.abc import Callable, Iterator
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

import httpx
import numpy as np
import pytest

import mrecd
from _uvicorn import serve_app
from mrecd.codecs import encode_frame
from mrecd.service import Settings, create_app

#: Chromium flags: no sandbox (root in a container), and no background traffic
#: (without these Chromium floods a closed network with update and sync calls)
CHROMIUM_ARGS = [
    "--headless",
    "--no-sandbox",
    "--disable-gpu",
    "--disable-quic",
    "--no-first-run",
    "--disable-background-networking",
    "--disable-component-update",
    "--disable-sync",
]
FRAMES = "application/x-mrec-frames"
BIG_ATOMS = 3000
BIG_FRAMES = 24
#: where the screenshots go (the README's come from a run with MRECD_SCREENSHOTS_TO_DOCS=1)
DOCS = Path(__file__).resolve().parents[2] / "docs"
TIP3P = Path(__file__).resolve().parents[1] / "fixtures/schema/core/forcefield/valid-tip3p.json"
COLLECTION_RECORDS = 120


def chromium_path() -> str | None:
    """The machine's Chromium: ``MRECD_CHROMIUM``, else ``chromium`` on PATH, else None."""
    explicit = os.environ.get("MRECD_CHROMIUM")
    if explicit:
        return explicit if os.access(explicit, os.X_OK) else None
    return shutil.which("chromium") or shutil.which("chromium-browser")


def _under_ci() -> bool:
    return os.environ.get("CI", "").strip().lower() not in ("", "0", "false", "no")


def _unavailable(reason: str) -> None:
    if _under_ci():
        pytest.fail(f"{reason}; CI is set, so the browser tests fail rather than skip")
    pytest.skip(f"{reason} (install it: apt-get install -y chromium; CI=true makes this fail)")


# Package scope, not session: Playwright's sync API holds an event loop in this thread, and
# the sites' live writers log requests, both of which must end before other suites run.
@pytest.fixture(scope="package")
def browser() -> Iterator[Any]:
    """A headless Chromium for the session (Playwright, the machine's own binary)."""
    executable = chromium_path()
    if executable is None:
        _unavailable("no chromium found on PATH")
    try:
        from playwright.sync_api import sync_playwright
    except ImportError:
        _unavailable("the playwright package is not installed")
    with sync_playwright() as playwright:
        launched = playwright.chromium.launch(executable_path=executable, args=CHROMIUM_ARGS)
        yield launched
        launched.close()


def frame(step: int, n: int, *, box: bool = True, seed: int | None = None) -> mrecd.Frame:
    """A frame of ``n`` atoms with pe, ke, temperature, step, time and (by default) a cubic box."""
    rng = np.random.default_rng(step if seed is None else seed)
    xyz = {c: rng.uniform(0.0, 30.0, n) for c in "xyz"}
    meta = {
        "pe": float(-100.0 - 0.01 * step + np.sin(step / 7.0)),
        "ke": float(40.0 + np.cos(step / 5.0)),
        "temperature": float(300.0 + 3.0 * np.sin(step / 3.0)),
    }
    return mrecd.Frame(
        {"atoms": xyz},
        meta=meta,
        step=step,
        time=0.002 * step,
        box=np.eye(3) * 30.0 if box else None,
    )


def frames_body(frames: list[mrecd.Frame]) -> bytes:
    """``application/x-mrec-frames``: each MRF1 frame preceded by its u64 LE length."""
    out = bytearray()
    for f in frames:
        data = encode_frame(f, meta_types=True)
        out += len(data).to_bytes(8, "little") + data
    return bytes(out)


def system(n: int) -> dict[str, Any]:
    """A system section of ``n`` atoms: water-like O, H, H elements (JSON form)."""
    elements = np.array(["O", "H", "H"] * (n // 3) + ["C"] * (n % 3))
    return mrecd.Frame({"atoms": {"element": elements}}).to_dict()


@dataclass
class LiveWriter:
    """A producer POSTing one frame at a time to a run, as a simulation would.

    Each POST carries ``Producer-Id/-Epoch/-Seq``, so a POST that timed out is
    sent again as is: the server answers a landed batch as the first time and
    never appends it twice. A stall of the machine (a page-cache writeback
    holding an fsync) slows the run down instead of ending it; an error that
    is not a timeout stops the writer and is raised by :meth:`check`.
    """

    url: str
    name: str
    atoms: int = 30
    period: float = 0.15
    headers: dict[str, str] = field(default_factory=dict)
    nstep: int = 0
    #: the slowest POST answer so far (seconds), retries included
    slowest: float = 0.0
    error: BaseException | None = None
    _stop: threading.Event = field(default_factory=threading.Event)
    _thread: threading.Thread | None = None

    def start(self, first: int) -> None:
        self.nstep = first
        self._thread = threading.Thread(target=self._run, daemon=True)
        self._thread.start()

    def _run(self) -> None:
        try:
            with httpx.Client(base_url=self.url, headers=self.headers, timeout=20) as client:
                seq = 0  # a producer's first batch
                while not self._stop.wait(self.period):
                    self.nstep = self._post(client, seq)
                    seq += 1
        except BaseException as exc:  # kept for check(); the thread ends
            self.error = exc

    def _post(self, client: httpx.Client, seq: int) -> int:
        """POST the next frame as batch ``seq`` of this producer, resending on timeouts."""
        body = frames_body([frame(10 * self.nstep, self.atoms)])
        producer = {"Producer-Id": f"page-{self.name}", "Producer-Epoch": "1"}
        headers = {"Content-Type": FRAMES, **producer, "Producer-Seq": str(seq)}
        started = time.monotonic()
        for attempt in range(6):
            try:
                r = client.post(
                    f"/v1/records/{self.name}/trajectory/frames", content=body, headers=headers
                )
            except httpx.TimeoutException:
                if attempt == 5 or self._stop.is_set():
                    raise
                continue
            r.raise_for_status()
            self.slowest = max(self.slowest, time.monotonic() - started)
            return int(r.json()["nstep"])
        raise AssertionError("unreachable")

    def check(self) -> None:
        """Raise the error that stopped the writer, if one did."""
        if self.error is not None:
            raise AssertionError(
                f"the live writer of {self.name!r} stopped (slowest answer "
                f"{self.slowest:.1f} s): {self.error!r}"
            ) from self.error

    def stop(self) -> None:
        self._stop.set()
        if self._thread is not None:
            self._thread.join(10)


@dataclass
class Site:
    """The server under test: its URL, the live writer, the 3000-atom record's name."""

    url: str
    writer: LiveWriter
    big: str
    token: str | None


#: commits younger than this make a record live in its summary (short, so md-done is closed)
LIVE_SECONDS = 2.0


def post_frames(client: httpx.Client, name: str, frames: list[mrecd.Frame]) -> None:
    """POST ``frames`` to record ``name`` in one request."""
    r = client.post(
        f"/v1/records/{name}/trajectory/frames",
        content=frames_body(frames),
        headers={"Content-Type": FRAMES},
    )
    assert r.status_code == 200, r.text


def populate(url: str, headers: dict[str, str], *, big: bool = True) -> None:
    """A finished run ``md-done``, the 3000-atom record and the start of the live run ``md-live``.

    With ``big``, returns once ``md-done`` is older than :data:`LIVE_SECONDS` (closed).
    """
    with httpx.Client(base_url=url, headers=headers, timeout=30) as client:
        names = [("md-done", 30), ("big-3000", BIG_ATOMS), ("md-live", 30)]
        forcefield = json.loads(TIP3P.read_text())
        for name, atoms in names if big else [names[0], names[2]]:
            body = {
                "system": system(atoms),
                "forcefield": forcefield if name == "md-done" else None,
            }
            r = client.put(f"/v1/records/{name}", json=body)
            assert r.status_code == 201, r.text
        post_frames(client, "md-done", [frame(10 * s, 30) for s in range(40)])
        done = time.monotonic()
        for start in range(0, BIG_FRAMES if big else 0, 8):
            post_frames(client, "big-3000", [frame(s, BIG_ATOMS) for s in range(start, start + 8)])
        post_frames(client, "md-live", [frame(10 * s, 30) for s in range(20)])
        if big:
            populate_collection(client, forcefield)
    if big:  # the tests that look for md-done closed use this site
        time.sleep(max(0.0, LIVE_SECONDS + 0.5 - (time.monotonic() - done)))


def populate_collection(client: httpx.Client, forcefield: dict[str, Any]) -> None:
    """Collection ``qm-set``: 120 small molecules of 3 to 9 atoms and 1 to 4 frames each."""
    body = {
        "meta": {"units": {"length": "angstrom", "energy": "kcal/mol"}},
        "index_columns": {"n_heavy": {"dtype": "i64"}},
        "forcefield": forcefield,
    }
    r = client.put("/v1/collections/qm-set", json=body)
    assert r.status_code == 201, r.text
    records = []
    for k in range(COLLECTION_RECORDS):
        atoms = 3 * (1 + k % 3)
        frames = [frame(s, atoms, box=False, seed=1000 * k + s) for s in range(1 + k % 4)]
        records.append(
            {
                "meta": {"label": f"mol-{k}"},
                "system": system(atoms),
                "trajectory": [f.to_dict() for f in frames],
                "index": {"n_heavy": atoms // 3},
            }
        )
    r = client.post("/v1/collections/qm-set/records", json=records)
    assert r.status_code == 200, r.text


def _site(tmp: Path, *, big: bool = True, **settings: Any) -> Iterator[Site]:
    token = None
    headers: dict[str, str] = {}
    if "tokens" in settings:
        token = settings["tokens"][0]["token"]
        headers = {"Authorization": f"Bearer {token}"}
    app = create_app(
        Settings(
            store=str(tmp / "data"),
            events_poll_seconds=0.05,
            live_seconds=LIVE_SECONDS,
            **settings,
        )
    )
    with serve_app(app) as url:
        populate(url, headers, big=big)
        writer = LiveWriter(url, "md-live", headers=headers)
        writer.start(first=20)
        try:
            yield Site(url, writer, "big-3000", token)
        finally:
            writer.stop()


@pytest.fixture(autouse=True)
def _live_writers_alive(request: pytest.FixtureRequest) -> Iterator[None]:
    """After each test: a live writer that stopped fails the test with its cause.

    Without this a writer that died shows up only as a browser timeout waiting
    for the run to grow.
    """
    yield
    for name in ("site", "guarded_site"):
        if name in request.fixturenames:
            request.getfixturevalue(name).writer.check()


@pytest.fixture(scope="package")
def site(tmp_path_factory: pytest.TempPathFactory) -> Iterator[Site]:
    """A real server (open, no tokens) with two runs, one growing, and a 3000-atom record."""
    yield from _site(tmp_path_factory.mktemp("site"))


@pytest.fixture(scope="package")
def guarded_site(tmp_path_factory: pytest.TempPathFactory) -> Iterator[Site]:
    """The same, with a read/append token required."""
    tokens = [{"token": "s3cret-page-token", "scope": "append"}]
    yield from _site(tmp_path_factory.mktemp("guarded"), big=False, tokens=tokens)


@dataclass
class Watched:
    """A browser page with what it logged: console errors, uncaught errors, requests."""

    page: Any
    errors: list[str]
    requests: list[Any]
    allowed: list[Callable[[str], bool]]

    def requested(self, fragment: str) -> list[str]:
        """URLs requested so far that contain ``fragment``."""
        return [r.url for r in self.requests if fragment in r.url]


@pytest.fixture
def page(browser: Any) -> Iterator[Watched]:
    """A fresh browser context and page; no console error may be logged during the test."""
    context = browser.new_context(viewport={"width": 1280, "height": 860})
    tab = context.new_page()
    watched = Watched(tab, [], [], [])
    tab.on("console", lambda m: m.type == "error" and watched.errors.append(m.text))
    tab.on("pageerror", lambda e: watched.errors.append(f"uncaught: {e}"))
    tab.on("request", lambda r: watched.requests.append(r))
    yield watched
    context.close()
    unexpected = [e for e in watched.errors if not any(ok(e) for ok in watched.allowed)]
    assert not unexpected, f"console errors: {unexpected}"


@pytest.fixture(scope="package")
def shots(tmp_path_factory: pytest.TempPathFactory) -> Callable[[Any, str], Path]:
    """``shots(page, name)``: a screenshot in a temporary folder (and docs/ when asked)."""
    folder = tmp_path_factory.mktemp("screenshots")

    def take(tab: Any, name: str) -> Path:
        path = folder / f"{name}.png"
        tab.screenshot(path=str(path))
        if os.environ.get("MRECD_SCREENSHOTS_TO_DOCS"):
            DOCS.mkdir(exist_ok=True)
            shutil.copy(path, DOCS / f"page-{name}.png")
        return path

    return take


def wait_until(predicate: Callable[[], bool], timeout: float = 10.0) -> None:
    """Poll ``predicate`` until true (fail after ``timeout`` seconds)."""
    deadline = time.monotonic() + timeout
    while not predicate():
        if time.monotonic() > deadline:
            raise AssertionError("condition not met in time")
        time.sleep(0.05)
