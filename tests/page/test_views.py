"""The page's records, run and frame views in Chromium against a real server with a live run."""

from __future__ import annotations

import gzip
import re
import statistics
from collections.abc import Callable
from pathlib import Path
from typing import Any

import httpx
import pytest

from .conftest import BIG_ATOMS, BIG_FRAMES, Site, Watched


def test_records_list_shows_the_runs_and_follows_the_live_one(
    site: Site, page: Watched, shots: Callable[[Any, str], Path]
) -> None:
    tab = page.page
    tab.goto(site.url + "/")
    live = tab.locator('tr[data-name="md-live"]')
    live.locator("td.live").wait_for()
    done = tab.locator('tr[data-name="md-done"]')
    done.locator("td.closed").wait_for()
    assert done.locator("td").nth(1).inner_text() == "40"
    assert done.locator("td").nth(2).inner_text() == "390"  # last step
    assert done.locator("td").nth(3).inner_text() == "0.78"  # last time
    assert "KiB" in done.locator("td").nth(4).inner_text()
    first = int(live.locator("td").nth(1).inner_text())
    assert first >= 20
    # the events stream moves the count on without a reload
    tab.wait_for_function(
        "n => Number(document.querySelector('tr[data-name=\"md-live\"] td:nth-child(2)')"
        ".textContent) > n",
        arg=first + 3,
    )
    assert page.requested("/trajectory/events"), "the list follows live runs by their events"
    # the same page lists the collections
    tab.locator("#home-collections a", has_text="qm-set").wait_for()
    shots(tab, "records")
    # the filter asks the server for a name prefix
    tab.fill("#filter", "big")
    tab.locator('tr[data-name="md-live"]').wait_for(state="detached")
    tab.locator('tr[data-name="big-3000"]').wait_for()
    # a page's rows are added together: the one row is the whole answer
    names = tab.locator("#records tr").evaluate_all("rows => rows.map(r => r.dataset.name)")
    assert names == ["big-3000"]
    tab.locator("#home-collections", has_text="No collections.").wait_for()
    assert any("prefix=big" in url for url in page.requested("/v1/records?"))


def test_run_view_plots_each_series_and_grows_as_frames_commit(
    site: Site, page: Watched, shots: Callable[[Any, str], Path]
) -> None:
    tab = page.page
    tab.goto(site.url + "/#/records/md-live")
    chart = tab.locator('.chart[data-key="pe"]')
    chart.wait_for()
    keys = tab.locator(".chart").evaluate_all("els => els.map(e => e.dataset.key)")
    assert keys == ["pe", "ke", "temperature"]
    before = int(chart.get_attribute("data-points") or 0)
    tab.wait_for_function(
        "n => Number(document.querySelector('.chart[data-key=pe]').dataset.points) >= n",
        arg=before + 4,
    )
    # only the new points travel: every series read after the first starts where the last ended
    starts = [int(m) for u in page.requested("/series/pe") for m in re.findall(r"start=(\d+)", u)]
    assert starts[0] == 0 and all(s > 0 for s in starts[1:]) and len(starts) >= 2
    shots(tab, "run")
    # drag-zoom on one chart narrows the x range of every chart
    box = tab.locator('.chart[data-key="pe"] .u-over').bounding_box()
    assert box is not None
    tab.mouse.move(box["x"] + box["width"] * 0.3, box["y"] + 20)
    tab.mouse.down()
    tab.mouse.move(box["x"] + box["width"] * 0.6, box["y"] + 20, steps=5)
    tab.mouse.up()
    ranges = tab.evaluate("window.mrecdPlots.map(p => [p.scales.x.min, p.scales.x.max])")
    full = tab.evaluate(
        "(() => { const d = window.mrecdPlots[0].data[0]; return [d[0], d.at(-1)] })()"
    )
    assert ranges[0][0] > full[0] and ranges[0][1] < full[1]
    assert all(r == pytest.approx(ranges[0]) for r in ranges)
    # the axis switch plots against time (0.002 per step of 10 here)
    tab.check('input[name="axis"][value="time"]')
    tab.wait_for_function("window.mrecdPlots.length === 3 && window.mrecdPlots[0].data[0][1] < 1")
    xs = tab.evaluate("window.mrecdPlots[0].data[0].slice(0, 3)")
    assert xs == pytest.approx([0.0, 0.02, 0.04])


def _drawn_after_input(tab: Any, i: int) -> tuple[float, float]:
    """Move the slider to ``i``; ms from the input event to frame ``i`` fetched, and drawn."""
    fetched, drawn = tab.evaluate(
        """i => new Promise(resolve => {
                 const slider = document.getElementById('slider');
                 const done = e => { if (e.detail.index === i) {
                   window.removeEventListener('frame-drawn', done);
                   resolve([e.detail.fetchMs, e.detail.ms]); } };
                 window.addEventListener('frame-drawn', done);
                 slider.value = String(i);
                 slider.dispatchEvent(new Event('input'));
               })""",
        i,
    )
    return float(fetched), float(drawn)


def test_frame_slider_fetches_only_the_frame_asked_for(
    site: Site,
    page: Watched,
    shots: Callable[[Any, str], Path],
    capsys: pytest.CaptureFixture[str],
) -> None:
    tab = page.page
    tab.goto(f"{site.url}/#/records/{site.big}/frames/0")
    tab.wait_for_selector('#molecule[data-drawn="0"]', timeout=20000)
    assert tab.locator("#slider").get_attribute("max") == str(BIG_FRAMES - 1)
    assert "atoms" in tab.locator("#facts").inner_text()
    shots(tab, "frame")
    scripts = {r.url for r in page.requests if r.resource_type == "script"}
    page.requests.clear()
    _drawn_after_input(tab, 7)
    data = [u for u in page.requested("/v1/") if "/events" not in u]
    assert data == [f"{site.url}/v1/records/{site.big}/trajectory/frames/7"]
    assert tab.locator("#frame-label").inner_text() == f"frame 7 of {BIG_FRAMES - 1}"
    assert tab.evaluate("location.hash") == f"#/records/{site.big}/frames/7"
    # the cell: drawn as its 12 edges, and the facts show the 30 Å cubic box the writer sent
    assert tab.locator("#molecule").get_attribute("data-cell-edges") == "12"
    assert "(30, 0, 0)" in tab.locator("#facts").inner_text()
    moves = [_drawn_after_input(tab, i) for i in (3, 17, 9, 22, 1, 12, 20, 5, 14, 8, 19, 2)]
    fetched = statistics.median(m[0] for m in moves)
    timings = [m[1] for m in moves]
    median = statistics.median(timings)
    with capsys.disabled():
        print(
            f"\nframe slider, {BIG_ATOMS} atoms: median input -> drawn {median:.1f} ms over "
            f"{len(timings)} moves (min {min(timings):.1f}, max {max(timings):.1f}); "
            f"of which fetched and decoded {fetched:.1f} ms"
        )
    assert median < 2000
    # the frame view's JavaScript, the molecule viewer included, is still under 300 KB gzip'd
    assert any("3Dmol" in url for url in scripts)
    size = sum(_gzip_size(url) for url in scripts)
    with capsys.disabled():
        print(f"JavaScript, gzip -9, with the molecule viewer: {size / 1024:.1f} KiB")
    assert size < 300 * 1024


def _gzip_size(url: str) -> int:
    return len(gzip.compress(httpx.get(url).content, compresslevel=9))


def test_first_load_javascript_is_small(
    site: Site, page: Watched, capsys: pytest.CaptureFixture[str]
) -> None:
    tab = page.page
    tab.goto(site.url + "/")
    tab.locator('tr[data-name="md-done"] td.closed').wait_for()
    scripts = sorted({r.url for r in page.requests if r.resource_type == "script"})
    assert not any("3Dmol" in url for url in scripts), "the viewer loads with the frame view only"
    assert all(url.startswith(site.url + "/static/") for url in scripts), "no CDN"
    size = sum(_gzip_size(url) for url in scripts)
    with capsys.disabled():
        print(f"\nJavaScript, gzip -9: first load {size / 1024:.1f} KiB in {len(scripts)} files")
    assert size < 300 * 1024
