"""The HTTP service (issue 12): GET frame i, POST rates, commit-to-event latency, slice memory.

Workload: 3000-atom frames (x/y/z f64 declared at p = 1e-3, a 0.05 Å random
walk). Every server is a real uvicorn subprocess on 127.0.0.1 (``mrecd serve``
on a directory store; the baselines under the same uvicorn defaults), and
every client request goes over loopback through httpx, in the same run:

* GET frame i (random i; median and p99) from trajectories of 1,000 and
  10,000 frames, against a minimal FastAPI endpoint answering the same MRF1
  bytes from memory, and against Tiled serving the same coordinates as an
  ``(nframes, 3000, 3)`` array (when ``tiled[server]`` is installed: extra
  ``bench``). One keep-alive httpx client asks all servers, interleaved.
* POST: frames/s of one-frame posts and of 64-frame batches against the
  local API's ``traj.append`` (one frame at a time, durable close); 8
  concurrent one-frame posters against 1.
* The events stream: time from a POST's response to its commit event.
* Peak server RSS while it streams a 10,000-frame slice.

``MRECD_BENCH_FRAMES`` sets the largest trajectory (default 10,000; 100,000
adds that point, which takes a few minutes more; ``MRECD_BENCH_TILED=0`` leaves
Tiled out, which a 100,000-frame run wants: Tiled's copy is a 7 GB array). ``python -m bench.service
baseline|tiled ...`` runs the baseline servers (this module starts them).
"""

from __future__ import annotations

import contextlib
import importlib.util
import itertools
import json
import os
import pickle
import socket
import statistics
import subprocess
import sys
import tempfile
import threading
import time
from collections.abc import Callable, Iterator
from functools import partial
from pathlib import Path
from typing import Any

import httpx
import numpy as np

import mrecd
from mrecd.codecs import decode_frame, encode_frame
from mrecd.model import Declaration

N_ATOMS = 3000
PRECISION = 1e-3
N_FRAMES = int(os.environ.get("MRECD_BENCH_FRAMES", "10000"))
SIZES = sorted({1_000, min(N_FRAMES, 10_000), N_FRAMES})
PICKS = 500  # random frames read per trajectory size
ONE_FRAME = 128  # frames posted one per request (each a durable commit: slow by design)
EVENTS = 60  # posts timed to their commit event
SLICE = 10_000  # frames of the streamed slice (memory)
DECLARATION: dict[str, Any] = {
    "blocks": {
        "atoms": {
            "columns": {c: {"dtype": "f64", "trailing": [], "precision": PRECISION} for c in "xyz"}
        }
    },
    "meta": {},
}
FRAME = "application/x-mrec-frame"
FRAMES = "application/x-mrec-frames"
ROOT = Path(__file__).resolve().parents[1]
READY_SECONDS = 60.0


# --- workload ---------------------------------------------------------------------------------


def walk(n: int, seed: int = 0) -> Iterator[np.ndarray]:
    """Positions ``[3, N_ATOMS]`` of a random walk in a 40 Å box, one array per frame."""
    rng = np.random.default_rng(seed)
    pos = rng.uniform(0, 40.0, (3, N_ATOMS))
    for _ in range(n):
        pos = pos + rng.normal(0, 0.05, pos.shape)
        yield pos


def frame_of(pos: np.ndarray, step: int) -> mrecd.Frame:
    """A trajectory frame of positions ``[3, N_ATOMS]`` at ``step``."""
    return mrecd.Frame({"atoms": {"x": pos[0], "y": pos[1], "z": pos[2]}}, step=step)


def wire(frame: mrecd.Frame) -> bytes:
    """One frame as a POST body (``application/x-mrec-frame``)."""
    return encode_frame(frame, meta_types=True)


def wire_stream(frames: list[mrecd.Frame]) -> bytes:
    """Frames as ``application/x-mrec-frames``: each preceded by its u64 LE length."""
    parts = []
    for frame in frames:
        data = wire(frame)
        parts += [len(data).to_bytes(8, "little"), data]
    return b"".join(parts)


def build_trajectories(store: Path, arrays: Path | None) -> None:
    """Records ``get-<n>`` of every size (local API), and their coordinates as ``.npy`` (Tiled)."""
    catalog = mrecd.open(str(store))
    for n in SIZES:
        record = catalog.create_record(f"get-{n}", declaration=Declaration.from_dict(DECLARATION))
        traj = record.trajectory
        assert traj is not None
        coords = None
        if arrays is not None:
            coords = np.lib.format.open_memmap(
                arrays / f"coords-{n}.npy", mode="w+", dtype="f8", shape=(n, N_ATOMS, 3)
            )
        batch = []
        for i, pos in enumerate(walk(n, seed=1)):
            batch.append(frame_of(pos, i))
            if coords is not None:
                coords[i] = mrecd.quantize(pos, PRECISION).T
            if len(batch) == 2000:
                traj.extend(batch)
                batch = []
        traj.extend(batch)
        record.close()
        if coords is not None:
            coords.flush()
            del coords


# --- servers ----------------------------------------------------------------------------------


def free_port() -> int:
    """A TCP port free on 127.0.0.1 now."""
    with socket.socket() as s:
        s.bind(("127.0.0.1", 0))
        return int(s.getsockname()[1])


@contextlib.contextmanager
def spawn(args: list[str], port: int, ready: str, log: Path) -> Iterator[subprocess.Popen[bytes]]:
    """``python args...`` as a server subprocess, once ``GET ready`` answers 200; stopped after."""
    with log.open("wb") as out:
        proc = subprocess.Popen(
            [sys.executable, *args], stdout=out, stderr=subprocess.STDOUT, cwd=ROOT
        )
    try:
        wait_ready(proc, f"http://127.0.0.1:{port}{ready}", log)
        yield proc
    finally:
        proc.terminate()
        try:
            proc.wait(30)
        except subprocess.TimeoutExpired:
            proc.kill()
            proc.wait()


def wait_ready(proc: subprocess.Popen[bytes], url: str, log: Path) -> None:
    """Return once ``url`` answers 200; raise with the log's last line if ``proc`` dies first."""
    deadline = time.monotonic() + READY_SECONDS
    while time.monotonic() < deadline:
        if proc.poll() is not None:
            break
        with contextlib.suppress(httpx.TransportError):
            if httpx.get(url, timeout=2).status_code == 200:
                return
        time.sleep(0.1)
    tail = log.read_text(errors="replace").strip().splitlines()[-1:] or ["no output"]
    raise RuntimeError(f"{url} did not answer: {tail[0]}")


def serve_baseline(path: str, port: int) -> None:
    """The baseline: a minimal FastAPI endpoint answering stored MRF1 bytes from memory."""
    import uvicorn
    from fastapi import FastAPI, Response

    frames: dict[tuple[int, int], bytes] = pickle.loads(Path(path).read_bytes())
    app = FastAPI()

    @app.get("/frames/{n}/{i}")
    async def frame(n: int, i: int) -> Response:
        return Response(frames[n, i], media_type=FRAME)

    @app.get("/healthz")
    async def healthz() -> dict[str, str]:
        return {"status": "ok"}

    uvicorn.run(app, host="127.0.0.1", port=port)


def serve_tiled(spec: str, port: int) -> None:
    """Tiled serving each ``name: .npy`` of ``spec`` (JSON) as a memory-mapped array."""
    import uvicorn
    from tiled.adapters.array import ArrayAdapter
    from tiled.adapters.mapping import MapAdapter
    from tiled.config import Authentication
    from tiled.server.app import build_app

    paths: dict[str, str] = json.loads(spec)
    tree = MapAdapter(
        {name: ArrayAdapter.from_array(np.load(p, mmap_mode="r")) for name, p in paths.items()}
    )
    app = build_app(tree, authentication=Authentication(allow_anonymous_access=True))
    uvicorn.run(app, host="127.0.0.1", port=port)


def tiled_missing() -> str | None:
    """Why Tiled cannot be the second baseline here (``None``: it can)."""
    if os.environ.get("MRECD_BENCH_TILED", "1") == "0":
        return "skipped (MRECD_BENCH_TILED=0)"
    if importlib.util.find_spec("tiled") is None:
        return "not installed (pip install 'mrecd[bench]')"
    for module in ("tiled.server.app", "tiled.adapters.array"):
        try:
            importlib.import_module(module)
        except ImportError as exc:
            return f"{module} does not import ({exc})"
    return None


# --- GET frame i ------------------------------------------------------------------------------


#: (key, label, URL of frame i of trajectory n, request headers)
Target = tuple[str, str, Callable[[int, int], str], dict[str, str]]


def get_latencies(
    client: httpx.Client, targets: list[Target], picks: dict[int, np.ndarray]
) -> dict[tuple[str, int], list[float]]:
    """Seconds of each GET, per (target, size).

    Sizes and targets are interleaved (the order of targets rotated per
    pick), so every row shares the same moments of a shared machine.
    """
    out: dict[tuple[str, int], list[float]] = {}
    for k in range(PICKS):
        turn = k % len(targets)
        for n, indices in picks.items():
            for key, _, url_of, headers in targets[turn:] + targets[:turn]:
                url = url_of(n, int(indices[k]))
                start = time.perf_counter()
                r = client.get(url, headers=headers)
                r.read()
                elapsed = time.perf_counter() - start
                r.raise_for_status()
                out.setdefault((key, n), []).append(elapsed)
    return out


def local_frames(store: Path, picks: dict[int, np.ndarray]) -> dict[tuple[int, int], bytes]:
    """MRF1 bytes of every pick, read with the local API (they become the baseline's memory)."""
    catalog = mrecd.open(str(store))
    out: dict[tuple[int, int], bytes] = {}
    for n, indices in picks.items():
        record = catalog.record(f"get-{n}")
        traj = record.trajectory
        assert traj is not None
        for i in map(int, indices):
            out[n, i] = encode_frame(traj.read(i), meta_types=True)
        record.close()
    return out


def warm_up(client: httpx.Client, url: str, served: dict[tuple[int, int], bytes]) -> None:
    """Warm the server on 200 random frames per trajectory, then check a few picks' bytes.

    The warm-up frames are not the picks: shard indexes and the page cache
    warm, the measured frames are still read from the store. mrecd must serve
    the bytes the baseline holds.
    """
    rng = np.random.default_rng(7)
    for n in SIZES:
        for i in rng.integers(0, n, 200):
            client.get(f"{url}/v1/records/get-{n}/trajectory/frames/{i}").raise_for_status()
    for n, i in list(served)[:: max(1, len(served) // 5)]:
        r = client.get(f"{url}/v1/records/get-{n}/trajectory/frames/{i}", headers={"Accept": FRAME})
        if r.content != served[n, i]:
            raise AssertionError(f"mrecd serves other bytes than the local API for {n}/{i}")


def check_tiled_coordinates(client: httpx.Client, tiled_url: str, served: dict[Any, bytes]) -> None:
    """Tiled's slice of a pick holds the coordinates of mrecd's frame, bit for bit."""
    for n, i in list(served)[:: max(1, len(served) // 5)]:
        frame = decode_frame(served[n, i])
        mine = np.stack([frame["atoms"][c].values for c in "xyz"], axis=1)
        r = client.get(
            f"{tiled_url}/api/v1/array/full/coords-{n}",
            params={"slice": str(i)},
            headers={"Accept": "application/octet-stream"},
        )
        r.raise_for_status()
        theirs = np.frombuffer(r.content, dtype="<f8").reshape(N_ATOMS, 3)
        if not np.array_equal(mine, theirs):
            raise AssertionError(f"tiled frame {i} of {n} differs from mrecd's")


def get_rows(times: dict[tuple[str, int], list[float]], targets: list[Target]) -> list[list[str]]:
    """Median, p99 and ratios to the baseline per server and size; then flatness in nstep.

    Besides the ratio of medians, the median of per-pick ratios: each GET
    over the baseline's GET of the same frame, asked back to back, which
    a shared machine's load swings disturb least.
    """
    rows = []
    for n in SIZES:
        base = times["baseline", n]
        for key, label, _, _ in targets:
            t = times[key, n]
            paired = statistics.median(np.array(t) / np.array(base))
            rows.append(
                [
                    f"{label}, nstep {n:,}",
                    f"{statistics.median(t) * 1e3:.2f} ms",
                    f"{np.percentile(t, 99) * 1e3:.2f} ms",
                    f"{statistics.median(t) / statistics.median(base):.2f}",
                    f"{paired:.2f}",
                ]
            )
    for key, _, _, _ in targets:
        first, last = (statistics.median(times[key, n]) for n in (SIZES[0], SIZES[-1]))
        rows.append(
            [f"{key}: median ({SIZES[-1]:,} / {SIZES[0]:,})", "", "", f"{last / first:.2f}", ""]
        )
    return rows


# --- POST -------------------------------------------------------------------------------------


def create_run(client: httpx.Client, url: str, name: str) -> None:
    """``PUT`` record ``name`` with the 3000-atom declaration (x/y/z at p = 1e-3)."""
    r = client.put(f"{url}/v1/records/{name}", json={"declaration": DECLARATION})
    r.raise_for_status()


def post_batches(
    client: httpx.Client, url: str, name: str, frames: list[mrecd.Frame], k: int
) -> float:
    """Frames/s of POSTs of ``k`` frames (encoded in the loop, as a client does)."""
    create_run(client, url, name)
    start = time.perf_counter()
    for first in range(0, len(frames), k):
        body = wire_stream(frames[first : first + k])
        r = client.post(
            f"{url}/v1/records/{name}/trajectory/frames",
            content=body,
            headers={"Content-Type": FRAMES},
        )
        r.raise_for_status()
    return len(frames) / (time.perf_counter() - start)


def posters(url: str, name: str, positions: list[np.ndarray], n_posters: int) -> tuple[float, int]:
    """(frames/s, step-order retries) of ``n_posters`` threads, one connection each, 1-frame POSTs.

    Steps must increase in commit order and posters race, so each POST takes
    the next step from a shared counter; a POST that lost the race (409
    ``step-order``) is sent again with a fresh step.
    """
    with httpx.Client(timeout=60) as client:
        create_run(client, url, name)
    steps = itertools.count()
    retries = [0] * n_posters
    barrier = threading.Barrier(n_posters + 1)
    share = np.array_split(np.arange(len(positions)), n_posters)

    def poster(k: int) -> None:
        with httpx.Client(timeout=60) as client:
            client.get(f"{url}/healthz")  # connect before the clock starts
            barrier.wait()
            for j in share[k]:
                while True:
                    r = client.post(
                        f"{url}/v1/records/{name}/trajectory/frames",
                        content=wire(frame_of(positions[j], next(steps))),
                        headers={"Content-Type": FRAME},
                    )
                    if r.status_code != 409:
                        r.raise_for_status()
                        break
                    retries[k] += 1

    threads = [threading.Thread(target=poster, args=(k,)) for k in range(n_posters)]
    for t in threads:
        t.start()
    barrier.wait()
    start = time.perf_counter()
    for t in threads:
        t.join()
    return len(positions) / (time.perf_counter() - start), sum(retries)


def local_rate(where: Path, frames: list[mrecd.Frame]) -> float:
    """Frames/s of the local API: ``traj.append`` one frame at a time and a durable close."""
    record = mrecd.open(str(where)).create_record(
        "local", declaration=Declaration.from_dict(DECLARATION)
    )
    traj = record.trajectory
    assert traj is not None
    start = time.perf_counter()
    for frame in frames:
        traj.append(frame)
    traj.close()
    rate = len(frames) / (time.perf_counter() - start)
    record.close()
    return rate


def local_flush_rate(where: Path, frames: list[mrecd.Frame], k: int) -> float:
    """Frames/s of ``extend`` of ``k`` frames, then ``flush()``: a durable commit each (a POST)."""
    record = mrecd.open(str(where)).create_record(
        "local", declaration=Declaration.from_dict(DECLARATION)
    )
    traj = record.trajectory
    assert traj is not None
    start = time.perf_counter()
    for first in range(0, len(frames), k):
        traj.extend(frames[first : first + k])
        traj.flush()
    rate = len(frames) / (time.perf_counter() - start)
    record.close()
    return rate


def post_tables(
    client: httpx.Client, url: str, tmp: Path
) -> tuple[list[list[str]], list[list[str]]]:
    """Rows of the POST table and of the concurrency table."""
    positions = list(walk(2048, seed=2))
    frames = [frame_of(p, i) for i, p in enumerate(positions)]
    local = local_rate(tmp / "local", frames)
    batched = post_batches(client, url, "post-64", frames, 64)
    local_after = local_rate(tmp / "local-after", frames)  # the machine is shared: bracket it
    local = statistics.mean([local, local_after])
    committed = local_flush_rate(tmp / "local-flush", frames[:ONE_FRAME], 1)
    committed_64 = local_flush_rate(tmp / "local-flush-64", frames, 64)
    one, _ = posters(url, "posters-1", positions[:ONE_FRAME], 1)
    many, retries = posters(url, "posters-8", positions[: 2 * ONE_FRAME], 8)
    rates = [
        ["local API: traj.append per frame, one durable close", "2,048", f"{local:,.0f}", "1.00"],
        [
            "local API: traj.append + traj.flush() per frame (a durable commit each)",
            f"{ONE_FRAME}",
            f"{committed:,.0f}",
            f"{committed / local:.2f}",
        ],
        [
            "local API: traj.extend(64 frames) + traj.flush() per batch",
            "2,048",
            f"{committed_64:,.0f}",
            f"{committed_64 / local:.2f}",
        ],
        ["POST one frame per request", f"{ONE_FRAME}", f"{one:,.0f}", f"{one / local:.2f}"],
        [
            "POST 64-frame batches (x-mrec-frames)",
            "2,048",
            f"{batched:,.0f}",
            f"{batched / local:.2f}",
        ],
    ]
    concurrency = [
        ["1 poster", f"{ONE_FRAME}", f"{one:,.0f}", "1.00", "0"],
        [
            "8 concurrent posters (own connection each)",
            f"{2 * ONE_FRAME}",
            f"{many:,.0f}",
            f"{many / one:.2f}",
            f"{retries}",
        ],
    ]
    return rates, concurrency


# --- events -----------------------------------------------------------------------------------


class EventLog:
    """Arrival times of a trajectory's SSE ``commit`` events, by ``id`` (the nstep announced)."""

    def __init__(self) -> None:
        self.arrivals: dict[int, float] = {}
        self.changed = threading.Condition()
        self.connected = threading.Event()

    def listen(self, url: str, last: int) -> None:
        """Read the events stream at ``url`` until the event of nstep ``last`` arrives."""
        with (
            httpx.Client(timeout=httpx.Timeout(60, read=10)) as sse,
            sse.stream("GET", url, headers={"Accept": "text/event-stream"}) as r,
        ):
            self.connected.set()
            for line in r.iter_lines():
                if line.startswith("id:"):
                    nstep = int(line[3:])
                    with self.changed:
                        self.arrivals[nstep] = time.perf_counter()
                        self.changed.notify_all()
                    if nstep >= last:
                        return

    def seen(self, nstep: int) -> bool:
        """Whether an event at or past ``nstep`` arrived."""
        return max(self.arrivals, default=-1) >= nstep

    def wait(self, nstep: int, timeout: float) -> None:
        """Block until an event at or past ``nstep`` arrived (or ``timeout`` seconds)."""
        with self.changed:
            self.changed.wait_for(partial(self.seen, nstep), timeout=timeout)

    def arrival(self, nstep: int) -> float:
        """When the first event at or past ``nstep`` arrived (one event may announce several)."""
        return min(t for n, t in self.arrivals.items() if n >= nstep)


def event_latencies(url: str, positions: list[np.ndarray]) -> list[float]:
    """Seconds from each POST's response to the arrival of the commit event announcing it."""
    frames_url = f"{url}/v1/records/events/trajectory/frames"
    log = EventLog()
    responded: dict[int, float] = {}
    rng = np.random.default_rng(5)
    with httpx.Client(timeout=60) as client:
        create_run(client, url, "events")
        for step, pos in enumerate(positions):
            if step == 1:  # the trajectory exists: open the stream, let it read its start
                listener = threading.Thread(
                    target=log.listen,
                    args=(f"{url}/v1/records/events/trajectory/events", len(positions)),
                    daemon=True,
                )
                listener.start()
                log.connected.wait(10)
                time.sleep(0.3)
            r = client.post(
                frames_url, content=wire(frame_of(pos, step)), headers={"Content-Type": FRAME}
            )
            r.raise_for_status()
            if step:
                nstep = r.json()["nstep"]
                responded[nstep] = time.perf_counter()
                log.wait(nstep, timeout=5)
                time.sleep(rng.uniform(0, 0.02))  # posts at random phases of the server's poll
        listener.join(10)
    return [log.arrival(n) - at for n, at in responded.items() if log.seen(n)]


# --- memory -----------------------------------------------------------------------------------


def rss(pid: int, field: str = "VmRSS") -> int:
    """Resident bytes of ``pid`` (``VmHWM``: its peak), from /proc, else psutil."""
    status = Path(f"/proc/{pid}/status")
    if status.exists():
        for line in status.read_text().splitlines():
            if line.startswith(field + ":"):
                return int(line.split()[1]) * 1024
    import psutil  # not on Linux: psutil knows the current RSS only

    return int(psutil.Process(pid).memory_info().rss)


def reset_peak(pid: int) -> bool:
    """Restart ``VmHWM`` counting at the current RSS (Linux ``clear_refs`` 5)."""
    try:
        Path(f"/proc/{pid}/clear_refs").write_text("5")
    except OSError:
        return False
    return True


def stream_memory(client: httpx.Client, url: str, pid: int, n: int) -> list[list[str]]:
    """RSS of the server before and at peak while it streams ``SLICE`` frames of ``get-<n>``."""
    count = min(SLICE, n)
    before = rss(pid)
    kernel_peak = reset_peak(pid)
    samples = [before]
    done = threading.Event()

    def sample() -> None:
        while not done.wait(0.005):
            samples.append(rss(pid))

    sampler = threading.Thread(target=sample, daemon=True)
    sampler.start()
    start = time.perf_counter()
    size = 0
    with client.stream(
        "GET",
        f"{url}/v1/records/get-{n}/trajectory/frames",
        params={"start": 0, "stop": count},
        headers={"Accept": FRAMES},
    ) as r:
        r.raise_for_status()
        for chunk in r.iter_bytes():
            size += len(chunk)
    elapsed = time.perf_counter() - start
    done.set()
    sampler.join()
    peak = max(max(samples), rss(pid, "VmHWM") if kernel_peak else 0)
    mib = 2**20
    return [
        ["server RSS before the stream", f"{before / mib:,.0f} MiB"],
        [f"server peak RSS while streaming {count:,} frames", f"{peak / mib:,.0f} MiB"],
        ["growth (peak - before)", f"{(peak - before) / mib:,.0f} MiB"],
        ["bytes streamed (x-mrec-frames)", f"{size / mib:,.0f} MiB"],
        ["stream rate", f"{count / elapsed:,.0f} frames/s ({size / mib / elapsed:,.0f} MiB/s)"],
    ]


# --- report -----------------------------------------------------------------------------------


def table(header: list[str], rows: list[list[str]]) -> str:
    """A markdown table (the format of the README's benchmark tables)."""
    lines = ["| " + " | ".join(header) + " |", "|" + "---|" * len(header)]
    lines += ["| " + " | ".join(r) + " |" for r in rows]
    return "\n".join(lines)


def ms(values: list[float]) -> str:
    """The median of ``values`` (seconds) in milliseconds."""
    return f"{statistics.median(values) * 1e3:.1f} ms"


def main() -> None:
    """Run the service benchmarks in a temporary directory and print their tables."""
    with tempfile.TemporaryDirectory(prefix="mrecd-bench-service-") as name:
        run(Path(name))


def run(tmp: Path) -> None:
    """Build the trajectories in ``tmp``, serve them, measure, print."""
    no_tiled = tiled_missing()
    store, arrays = tmp / "store", tmp / "arrays"
    arrays.mkdir()
    started = time.perf_counter()
    build_trajectories(store, None if no_tiled else arrays)
    sizes = " + ".join(f"{n:,}" for n in SIZES)
    print(f"(built {sizes} frames in {time.perf_counter() - started:.0f} s)")
    rng = np.random.default_rng(3)
    picks = {n: rng.integers(0, n, PICKS) for n in SIZES}
    port = free_port()
    url = f"http://127.0.0.1:{port}"
    serve = ["-m", "mrecd.cli", "serve", str(store), "--host", "127.0.0.1", "--port", str(port)]
    with (
        spawn(serve, port, "/healthz", tmp / "mrecd.log") as server,
        # identity, as mrecd_client asks: the in-memory baseline never compresses
        httpx.Client(timeout=60, headers={"Accept-Encoding": "identity"}) as client,
    ):
        get_table, no_tiled = get_section(client, url, store, picks, no_tiled)
        rates, concurrency = post_tables(client, url, tmp)
        latencies = event_latencies(url, list(walk(EVENTS + 1, seed=4)))
        memory = stream_memory(client, url, server.pid, SIZES[-1])
    print("\n### GET frame i over HTTP (random i, 3000 atoms, MRF1 72 kB)\n")
    header = ["server", "median", "p99", "median / baseline's", "per-pick ratio, median"]
    print(table(header, get_table))
    if no_tiled:
        print(f"\ntiled: not available ({no_tiled})")
    print("\n### POST frames (3000 atoms at p = 1e-3; each response after a durable commit)\n")
    print(table(["writer", "frames", "frames/s", "/ local API"], rates))
    print()
    print(
        table(
            [
                "one-frame posters, one trajectory",
                "frames",
                "frames/s",
                "/ 1 poster",
                "409 step-order retries",
            ],
            concurrency,
        )
    )
    print("\n### Commit-to-event latency (POST response -> SSE `commit` event)\n")
    print(
        table(
            ["posts", "median", "p99"],
            [[f"{len(latencies)}", ms(latencies), f"{np.percentile(latencies, 99) * 1e3:.1f} ms"]],
        )
    )
    print("\n### Server memory while streaming a slice (mrecd serve subprocess)\n")
    print(table(["", ""], memory))
    print(
        "\nHow to read this: each ratio divides by the row marked 1.00, measured in the same run"
        " on the same machine (time for GET: lower is better; frames/s for POST: higher is"
        " better). Goals: GET <= 2x the in-memory FastAPI endpoint and ~1 from 1,000 frames to"
        " the largest run; 64-frame batches >= 0.5 of the local API; 8 posters > 1; peak RSS"
        " far below the bytes streamed."
    )


def get_section(
    client: httpx.Client,
    url: str,
    store: Path,
    picks: dict[int, np.ndarray],
    no_tiled: str | None,
) -> tuple[list[list[str]], str | None]:
    """The GET table (and why Tiled is absent, if it is): baselines started, measured, stopped."""
    served = local_frames(store, picks)
    warm_up(client, url, served)
    tmp = store.parent
    memory = tmp / "baseline.pickle"
    memory.write_bytes(pickle.dumps(served))
    base_port, tiled_port = free_port(), free_port()
    base_url, tiled_url = f"http://127.0.0.1:{base_port}", f"http://127.0.0.1:{tiled_port}"
    targets: list[Target] = [
        (
            "mrecd",
            "mrecd",
            lambda n, i: f"{url}/v1/records/get-{n}/trajectory/frames/{i}",
            {"Accept": FRAME},
        ),
        (
            "baseline",
            "baseline: FastAPI, bytes from memory",
            lambda n, i: f"{base_url}/frames/{n}/{i}",
            {},
        ),
    ]
    with contextlib.ExitStack() as stack:
        stack.enter_context(
            spawn(
                ["-m", "bench.service", "baseline", str(memory), str(base_port)],
                base_port,
                "/healthz",
                tmp / "baseline.log",
            )
        )
        if no_tiled is None:
            spec = json.dumps(
                {f"coords-{n}": str(tmp / "arrays" / f"coords-{n}.npy") for n in SIZES}
            )
            try:
                stack.enter_context(
                    spawn(
                        ["-m", "bench.service", "tiled", spec, str(tiled_port)],
                        tiled_port,
                        "/api/v1/",
                        tmp / "tiled.log",
                    )
                )
                check_tiled_coordinates(client, tiled_url, served)
                targets.append(
                    (
                        "tiled",
                        "tiled: array (n, 3000, 3), one slice",
                        lambda n, i: f"{tiled_url}/api/v1/array/full/coords-{n}?slice={i}",
                        {"Accept": "application/octet-stream"},
                    )
                )
            except (RuntimeError, AssertionError, httpx.HTTPError) as exc:
                no_tiled = f"the server did not serve: {exc}"
        times = get_latencies(client, targets, picks)
    return get_rows(times, targets), no_tiled


if __name__ == "__main__":
    command, *rest = sys.argv[1:]
    {"baseline": serve_baseline, "tiled": serve_tiled}[command](rest[0], int(rest[1]))
