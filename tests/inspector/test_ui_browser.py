"""The inspector in a real browser: headless Chromium (Debian's ``chromium`` and
``chromium-driver``) driven by Selenium, against a real ``agentmem ui --writable`` and a
real ``agentmem serve`` on loopback, one browser for the module.

It opens the pages, searches and reads why each candidate scored what it did, follows a
supersession history, forgets a row through its confirmation page, logs in to the server
with one tenant's key and finds nothing of the other tenant, and checks that stored
``<script>`` text neither runs nor trips the Content-Security-Policy, that the key in the
cookie is out of the page's reach, that the start page's plots are drawn, and that neither
process logged content.

Skipped, saying why, where Chromium, its driver or Selenium is missing (``make test``
installs the first two with apt-get when it can).
"""

from __future__ import annotations

import shutil
import tempfile
from collections.abc import Iterator
from pathlib import Path
from typing import Any

import pytest
from _agentmem_server import ServerProcess
from _inspector_support import INJECTION, SCRIPT, SECRET, Seeded, seeded

from agentmem import AgentMemory

pytestmark = pytest.mark.slow

CHROMIUM = shutil.which("chromium") or shutil.which("chromium-browser")
DRIVER = shutil.which("chromedriver") or (
    "/usr/lib/chromium/chromedriver" if Path("/usr/lib/chromium/chromedriver").exists() else None
)
#: Flags of a headless Chromium that makes no connection of its own (this machine's network
#: is closed: its background requests would be refused and slow it down).
FLAGS = (
    "--headless=new",
    "--no-sandbox",
    "--disable-gpu",
    "--disable-quic",
    "--no-first-run",
    "--disable-background-networking",
    "--disable-component-update",
    "--disable-sync",
    "--disable-dev-shm-usage",
    "--window-size=1280,1000",
)
QUERY = "where does Alice live now"
#: Seconds any wait gives the browser (generous: the machine may be loaded; a wait ends as soon
#: as its condition holds, so a large value costs nothing when things go well).
WAIT = 90


def _missing() -> str | None:
    if CHROMIUM is None or DRIVER is None:
        return "no Chromium here: apt-get install chromium chromium-driver (make test does)"
    try:
        import selenium  # noqa: F401
    except ImportError:
        return "selenium is not installed (pip install -e '.[dev]')"
    return None


@pytest.fixture(scope="module")
def browser() -> Iterator[Any]:
    reason = _missing()
    if reason is not None:
        pytest.skip(reason)
    from selenium import webdriver
    from selenium.webdriver.chrome.service import Service

    options = webdriver.ChromeOptions()
    options.binary_location = str(CHROMIUM)
    with tempfile.TemporaryDirectory(prefix="agentmem-chromium-") as profile:
        for flag in (*FLAGS, f"--user-data-dir={profile}"):
            options.add_argument(flag)
        options.set_capability("goog:loggingPrefs", {"browser": "ALL"})
        driver = webdriver.Chrome(options=options, service=Service(str(DRIVER)))
        driver.set_page_load_timeout(WAIT)
        try:
            yield driver
        finally:
            driver.quit()


@pytest.fixture(scope="module")
def local(tmp_path_factory: pytest.TempPathFactory) -> Iterator[tuple[ServerProcess, Seeded]]:
    home = tmp_path_factory.mktemp("ui-local")
    with AgentMemory(home) as mem:
        ids = seeded(mem)
    with ServerProcess(home, command="ui", serve_args=["--writable"]) as ui:
        yield ui, ids


@pytest.fixture(scope="module")
def served(tmp_path_factory: pytest.TempPathFactory) -> Iterator[tuple[ServerProcess, Seeded]]:
    home = tmp_path_factory.mktemp("ui-served")
    with AgentMemory(home) as mem:
        ids = seeded(mem)
    with ServerProcess(home, env={"AGENTMEM_RATE_LIMIT": "0"}) as server:
        yield server, ids


def _find(driver: Any, css: str) -> Any:
    from selenium.webdriver.common.by import By
    from selenium.webdriver.support import expected_conditions as ec
    from selenium.webdriver.support.ui import WebDriverWait

    return WebDriverWait(driver, WAIT).until(ec.presence_of_element_located((By.CSS_SELECTOR, css)))


def _click(driver: Any, css: str) -> None:
    """Click and wait for the next page (its element is gone once it has loaded)."""
    from selenium.webdriver.support import expected_conditions as ec
    from selenium.webdriver.support.ui import WebDriverWait

    element = _find(driver, css)
    element.click()
    WebDriverWait(driver, WAIT).until(ec.staleness_of(element))


def _log_in(driver: Any, key: str) -> None:
    """Type ``key`` into the login form and send it. A page still settling can replace the
    form between finding it and clicking (ChromeDriver: "Node with given id does not belong
    to the document"), and the click may or may not have gone through: once the browser has
    settled on a page, the login is done if it left the login page, and the form is filled
    in again if not (at most three times)."""
    from selenium.common.exceptions import StaleElementReferenceException, WebDriverException
    from selenium.webdriver.common.by import By
    from selenium.webdriver.support.ui import WebDriverWait

    for attempt in range(3):
        try:
            field = _find(driver, "#key")
            field.clear()
            field.send_keys(key)
            _click(driver, "#login")
            return
        except (StaleElementReferenceException, WebDriverException) as exc:
            replaced = isinstance(exc, StaleElementReferenceException) or (
                "does not belong to the document" in str(exc)
            )
            if not replaced or attempt == 2:
                raise
        WebDriverWait(driver, WAIT).until(
            lambda d: "/ui/login" not in d.current_url or d.find_elements(By.CSS_SELECTOR, "#key")
        )
        if "/ui/login" not in driver.current_url:
            return


def _link(driver: Any, text: str) -> None:
    from selenium.webdriver.common.by import By
    from selenium.webdriver.support import expected_conditions as ec
    from selenium.webdriver.support.ui import WebDriverWait

    link = WebDriverWait(driver, WAIT).until(
        ec.element_to_be_clickable((By.PARTIAL_LINK_TEXT, text))
    )
    _click_element(driver, link)


def _click_element(driver: Any, element: Any) -> None:
    from selenium.webdriver.support import expected_conditions as ec
    from selenium.webdriver.support.ui import WebDriverWait

    element.click()
    WebDriverWait(driver, WAIT).until(ec.staleness_of(element))


def _no_alert_and_no_csp_report(driver: Any) -> None:
    from selenium.common.exceptions import NoAlertPresentException

    with pytest.raises(NoAlertPresentException):
        driver.switch_to.alert  # noqa: B018 - raises when no script ran alert()
    # a refused page (403, 404) is logged as a failed load; any other error or warning is a
    # problem: a script error, or markup the Content-Security-Policy had to block (the
    # browser's informational messages vary with its version and are not)
    problems = [
        entry["message"]
        for entry in driver.get_log("browser")
        if entry["level"] in ("SEVERE", "WARNING")
        and "Failed to load resource" not in entry["message"]
    ]
    assert problems == []


def test_browse_search_and_follow_a_history(
    browser: Any, local: tuple[ServerProcess, Seeded]
) -> None:
    from selenium.webdriver.common.by import By

    ui, ids = local
    browser.get(f"{ui.url}/ui")
    assert browser.title == "agentmem inspector"
    tenants = _find(browser, "#tenants").text
    assert "acme" in tenants and "globex" in tenants  # the data dir's owner sees every tenant
    _link(browser, "acme")
    tiers = _find(browser, "#tiers").text
    assert "working" in tiers and "mid_term chunks" in tiers
    assert "s1" in _find(browser, "#sessions").text

    # search as recall does, as user u1
    browser.get(f"{ui.url}/ui/search")
    _find(browser, "#q").send_keys(QUERY)
    browser.find_element(By.NAME, "tenant").send_keys("acme")
    browser.find_element(By.NAME, "user").send_keys("u1")
    _click(browser, "#go")
    result = _find(browser, "#result").text
    assert "Alice lives in Porto now" in result
    assert "Alice lives in Lisbon" not in result  # superseded
    first = _find(browser, "#cand-1")
    assert "Alice lives in Porto now" in first.text
    # why: open the first candidate's features (a <details>, no script needed)
    details = _find(browser, "#features-1")
    details.find_element(By.TAG_NAME, "summary").click()
    calibration = _find(browser, "#calibration-1")
    assert calibration.is_displayed() and "weight × value" in calibration.text
    assert _find(browser, "#keyword-only").text and _find(browser, "#vector-only").text

    # the hit's page, then its history: the row it replaced, and back
    _link(browser, "Alice lives in Porto now")
    assert _find(browser, "#state").text == "live"
    history = _find(browser, "#history")
    _click_element(browser, history.find_element(By.PARTIAL_LINK_TEXT, "Alice lives in Lisbon"))
    assert _find(browser, "#state").text == "superseded"
    assert SCRIPT in _find(browser, "#content").text  # shown as text, never run
    replaced_by = _find(browser, "#replaced-by")
    assert "same topic key" in replaced_by.text
    _click_element(browser, replaced_by.find_element(By.TAG_NAME, "a"))
    assert browser.current_url.endswith(f"/ui/memories/{ids.new_home}")

    # the judge's decision on a row it retired
    browser.get(f"{ui.url}/ui/memories/{ids.judged_old}")
    assert "the judge (offline-judge) decided SUPERSEDE" in _find(browser, "#replaced-by").text

    browser.get(f"{ui.url}/ui/memories/{ids.hostile}")
    assert INJECTION in _find(browser, "#content").text
    _no_alert_and_no_csp_report(browser)


def test_forget_a_row_with_confirmation(browser: Any, local: tuple[ServerProcess, Seeded]) -> None:
    ui, ids = local
    browser.get(f"{ui.url}/ui/memories/{ids.judged_new}")
    assert "switched from tea to coffee" in _find(browser, "#content").text
    _click(browser, "#forget")
    assert "Forget this row?" in _find(browser, "h1").text
    _click(browser, "#confirm")
    assert "forgotten" in _find(browser, "#outcome").text
    browser.get(f"{ui.url}/ui/memories/{ids.judged_new}")
    assert _find(browser, "#state").text == "forgotten"
    assert "coffee" not in _find(browser, "#content").text
    browser.get(f"{ui.url}/ui/search?q=coffee+or+tea&tenant=acme&user=u1&min_score=0")
    assert "switched from tea to coffee" not in _find(browser, "#result").text
    _no_alert_and_no_csp_report(browser)
    log = ui.output()
    assert "coffee" not in log and "Alice" not in log and "<script>" not in log


def test_a_tenants_key_never_shows_another_tenant(
    browser: Any, served: tuple[ServerProcess, Seeded]
) -> None:
    from selenium.webdriver.common.by import By

    server, ids = served
    browser.delete_all_cookies()
    browser.get(f"{server.url}/ui")
    assert "/ui/login" in browser.current_url  # no key yet
    _log_in(browser, server.create_key("globex"))
    assert "globex" in _find(browser, "#tenants").text
    assert browser.execute_script("return document.cookie") == ""  # HttpOnly: out of reach
    # every page a globex key can reach from its start page
    seen: set[str] = set()
    own = 0  # pages showing globex's own secret: the key sees its tenant
    todo = [
        f"{server.url}/ui",
        f"{server.url}/ui/search?q=where+does+she+live+appointment&min_score=0",
    ]
    while todo and len(seen) < 40:
        url = todo.pop()
        if url in seen or "/forget" in url or "/erase" in url or "/sessions/close" in url:
            continue
        seen.add(url)
        browser.get(url)
        page = browser.page_source
        assert "Alice" not in page and "acme" not in page and "dentist?" not in page, url
        own += SECRET in page
        for a in browser.find_elements(By.CSS_SELECTOR, "a[href^='/ui'], a[href*='/ui/']"):
            href = a.get_attribute("href")
            if href and href.startswith(server.url):
                todo.append(href)
    assert any("/ui/memories/" in u for u in seen) and any("/ui/tenants/globex" in u for u in seen)
    assert own > 0
    # acme's rows, named directly
    browser.get(f"{server.url}/ui/memories/{ids.new_home}")
    assert "404" in _find(browser, "h1").text and "Alice" not in browser.page_source
    browser.get(f"{server.url}/ui/tenants/acme")
    assert "403" in _find(browser, "h1").text
    _no_alert_and_no_csp_report(browser)
    log = server.output()
    assert "Alice" not in log and "dentist" not in log and "Globex secret" not in log
    assert "/ui/search?..." in log  # the request was logged, its query string was not


def test_the_start_page_plots_the_recalls_it_served(
    browser: Any, served: tuple[ServerProcess, Seeded]
) -> None:
    import httpx
    from selenium.webdriver.common.by import By

    server, _ = served
    acme = server.create_key("acme")
    with httpx.Client(base_url=server.url, timeout=WAIT) as api:
        for query in ("where does Alice live", "coffee or tea", "dentist"):
            answer = api.post(
                "/v1/ops/recall",
                json={"identity": {"user_id": "u1"}, "args": {"query": query, "min_score": 0}},
                headers={"Authorization": f"Bearer {acme}"},
            )
            assert answer.status_code == 200, answer.text
    browser.delete_all_cookies()
    browser.get(f"{server.url}/ui/login")
    _log_in(browser, acme)
    # drawn by the browser (inline SVG, no script): one dot per recall, bars of the scores
    latency = _find(browser, "#latency-plot svg")
    dots = latency.find_elements(By.TAG_NAME, "circle")
    assert len(dots) == 3 and all(d.is_displayed() for d in dots)
    assert latency.size["width"] > 100 and latency.size["height"] > 50
    bars = _find(browser, "#score-plot svg").find_elements(By.TAG_NAME, "rect")
    assert bars and all(b.is_displayed() for b in bars)
    _no_alert_and_no_csp_report(browser)
    assert "coffee" not in server.output() and "dentist" not in server.output()
