"""The token field: kept in the tab's sessionStorage, sent as a header, never in a URL."""

from __future__ import annotations

from .conftest import Site, Watched


def test_token_rides_in_the_header_and_stays_in_the_tab(guarded_site: Site, page: Watched) -> None:
    token = guarded_site.token
    assert token is not None
    # the refused calls before a token is given are the browser's own console lines
    page.allowed.append(lambda text: "401" in text)
    tab = page.page
    tab.goto(guarded_site.url + "/")
    notice = tab.locator("#notice")
    notice.wait_for()
    assert "401" in notice.inner_text()
    assert tab.locator("#records tr").count() == 0

    before = len(page.requests)
    assert all("authorization" not in r.headers for r in page.requests)
    tab.fill("#token", token)
    tab.click("#token-form button")
    tab.locator('tr[data-name="md-live"] td.live').wait_for()
    assert tab.evaluate("sessionStorage.getItem('mrecd.token')") == token
    assert tab.locator("#token-state").inner_text() == "token set"
    after = [r for r in page.requests[before:] if "/v1/" in r.url]
    assert after and all(r.headers.get("authorization") == f"Bearer {token}" for r in after)

    # a reload of the tab keeps it; the run view's data and event calls carry it too
    tab.goto(guarded_site.url + "/#/records/md-live")
    tab.reload()
    tab.locator('.chart[data-key="pe"]').wait_for()
    assert not any(token in r.url for r in page.requests), "the token never goes in a URL"
    events = [r for r in page.requests if r.url.endswith("/trajectory/events")]
    assert events and events[-1].headers.get("authorization") == f"Bearer {token}"
    assert tab.evaluate("localStorage.length") == 0, "nothing outlives the session"


def test_another_tab_has_no_token(guarded_site: Site, page: Watched, browser: object) -> None:
    page.allowed.append(lambda text: "401" in text)
    tab = page.page
    tab.goto(guarded_site.url + "/")
    tab.locator("#notice").wait_for()
    assert tab.evaluate("sessionStorage.getItem('mrecd.token')") is None
    assert tab.locator("#token-state").inner_text() == "no token"
