"""Collection view (paged index, a record's frames) and force-field view (tables, lookups)."""

from __future__ import annotations

from collections.abc import Callable
from pathlib import Path
from typing import Any

from .conftest import COLLECTION_RECORDS, Site, Watched


def test_collection_list_and_paged_index(
    site: Site, page: Watched, shots: Callable[[Any, str], Path]
) -> None:
    tab = page.page
    tab.goto(site.url + "/#/collections")
    row = tab.locator("#collections tr", has_text="qm-set")
    row.wait_for()
    assert str(COLLECTION_RECORDS) in row.inner_text()
    row.locator("a", has_text="qm-set").click()
    tab.locator("#index table").wait_for()
    assert tab.locator("#page-label").inner_text() == "page 1 of 3"
    headers = tab.locator("#index th").all_inner_texts()
    assert headers[:5] == ["r", "first_frame", "n_frames", "n_atoms", "has_trajectory"]
    assert "n_heavy" in headers
    assert tab.locator("#index tbody tr").count() == 50
    shots(tab, "collection")
    tab.click("text=Next")
    tab.click("text=Next")
    assert tab.locator("#page-label").inner_text() == "page 3 of 3"
    assert tab.locator("#index tbody tr").count() == COLLECTION_RECORDS - 100
    first = tab.locator("#index tbody tr").first.locator("td").first.inner_text()
    assert first == "100"
    # the index was read once: paging is the page's
    assert len(page.requested("/v1/collections/qm-set/index")) == 1


def test_one_collection_records_frames(site: Site, page: Watched) -> None:
    tab = page.page
    # record 7: 9 atoms (3 * (1 + 7 % 3)), 4 frames (1 + 7 % 4)
    tab.goto(site.url + "/#/collections/qm-set/records/7/frames/0")
    tab.wait_for_selector('#molecule[data-drawn="0"]', timeout=20000)
    assert tab.locator("#slider").get_attribute("max") == "3"
    page.requests.clear()
    tab.evaluate(
        "(() => { const s = document.getElementById('slider'); s.value = '2';"
        " s.dispatchEvent(new Event('input')); })()"
    )
    tab.wait_for_selector('#molecule[data-drawn="2"]')
    frames = [u for u in page.requested("/v1/")]
    assert frames == [f"{site.url}/v1/collections/qm-set/records/7/frames/2"]
    facts = tab.locator("#facts").inner_text()
    assert "9" in facts and "step" in facts
    assert tab.locator("#molecule").get_attribute("data-cell-edges") == "0"  # no box: no cell


def test_forcefield_tables_and_lookups(
    site: Site, page: Watched, shots: Callable[[Any, str], Path]
) -> None:
    # a refused lookup (404 problem) is the browser's own console line, shown in the result box
    page.allowed.append(lambda text: "404" in text)
    tab = page.page
    tab.goto(site.url + "/#/forcefield/records/md-done")
    tab.locator("#ff-tables table").first.wait_for()
    titles = tab.locator("#ff-tables h2").all_inner_texts()
    assert titles == ["atom.full", "bond.harmonic", "pair.lj/cut/coul/long"]
    assert "15.999" in tab.locator("#ff-tables table").first.inner_text()
    result = tab.locator("#lookup-result")

    def look(form: str, **fields: str) -> str:
        before = result.inner_text()
        for name, value in fields.items():
            tab.fill(f"#{form} input[name={name}]", value)
        tab.click(f"#{form} button")
        tab.wait_for_function(
            "b => document.getElementById('lookup-result').textContent !== b", arg=before
        )
        return result.inner_text()

    assert "15.999" in look("lookup-atom", type="OW")
    assert "1059.162" in look("lookup-term", category="bond", name="OW-HW")
    assert "0.1521" in look("lookup-pair", a="OW", b="OW")
    assert "OW-HW" in look("lookup-match", category="bond", types="HW,OW")
    shots(tab, "forcefield")
    missing = look("lookup-atom", type="XX")
    assert "not found" in missing and "forcefield" in missing
    # the collection's force field is the same document at its own URL
    tab.goto(site.url + "/#/forcefield/collections/qm-set")
    tab.locator("#ff-tables table").first.wait_for()
    assert tab.locator("#ff-tables h2").all_inner_texts() == titles
