"""The introspect pages in a real browser (headless Chromium), as an operator clicks through them.

CI installs Debian's `chromium` and `chromium-driver` (`.ci/run`), so a missing browser fails this
test instead of hiding it. On a workstation without them, set KUBE_MANAGER_SKIP_BROWSER=1 to skip.
Screenshots of each step go to $KUBE_MANAGER_SCREENSHOT_DIR (default artifacts/screenshots).
"""
from __future__ import annotations

import os
import tempfile
import time
from pathlib import Path
from typing import Callable

import gevent
import pytest

from introspect.app import create_app
from introspect.explain import db_explainer
from introspect.server import IntrospectServer
from kube_manager.observability.metrics import Metrics

from tests.support.introspect_support import FP_DB, R_DB_DENY, R_WEB_TO_DB, XSS, build_db, demo_db
from tests.support.paths import REPO

pytestmark = [pytest.mark.browser, pytest.mark.slow]

CHROMIUM = Path("/usr/bin/chromium")
CHROMEDRIVER = Path("/usr/bin/chromedriver")
SCREENSHOT_DIR = Path(os.environ.get("KUBE_MANAGER_SCREENSHOT_DIR")
                      or REPO / "artifacts" / "screenshots")
CHROMIUM_FLAGS = ("--headless", "--no-sandbox", "--disable-gpu", "--disable-quic", "--no-first-run",
                  "--disable-background-networking", "--disable-component-update", "--disable-sync",
                  "--window-size=1400,1000")
WAIT_SECONDS = 20
GREEN = "rgba(26, 127, 55, 1)"  # --ok in style.css: a synced state reads green


def _require_browser() -> None:
    missing = [str(p) for p in (CHROMIUM, CHROMEDRIVER) if not p.exists()]
    if not missing:
        return
    if os.environ.get("KUBE_MANAGER_SKIP_BROWSER") == "1":
        pytest.skip(f"KUBE_MANAGER_SKIP_BROWSER=1 and {', '.join(missing)} missing")
    pytest.fail(f"{', '.join(missing)} missing: install Debian's chromium and chromium-driver "
                f"(.ci/run does), or set KUBE_MANAGER_SKIP_BROWSER=1 to skip locally")


@pytest.fixture
def server():
    db = build_db(now=time.time())  # so the pages show ages of seconds, as on a live daemon
    metrics = Metrics()
    metrics.bind_database(db)
    introspect = IntrospectServer("127.0.0.1", 0, create_app(
        db, registry=metrics.registry, explain=db_explainer(db, "k8s")))
    introspect.start()
    yield introspect
    introspect.stop()


@pytest.fixture
def demo_server():
    db = demo_db()
    introspect = IntrospectServer("127.0.0.1", 0, create_app(db, explain=db_explainer(db, "k8s")))
    introspect.start()
    yield introspect
    introspect.stop()


def _driver():
    """A headless Chromium and its profile directory (quit the one, clean up the other)."""
    from selenium import webdriver
    from selenium.webdriver.chrome.service import Service

    options = webdriver.ChromeOptions()
    options.binary_location = str(CHROMIUM)
    for flag in CHROMIUM_FLAGS:
        options.add_argument(flag)
    profile = tempfile.TemporaryDirectory(prefix="kube-manager-chromium-")
    options.add_argument(f"--user-data-dir={profile.name}")
    return webdriver.Chrome(service=Service(str(CHROMEDRIVER)), options=options), profile


def _in_thread(function: Callable[[], None]) -> None:
    """Drive the browser from a real thread: its calls block, and this hub must keep serving."""
    gevent.get_hub().threadpool.apply(function)


def test_an_operator_clicks_from_the_index_to_the_deciding_rule(server):
    _require_browser()
    from selenium.common.exceptions import NoAlertPresentException
    from selenium.webdriver.common.by import By
    from selenium.webdriver.support import expected_conditions as ec
    from selenium.webdriver.support.ui import Select, WebDriverWait

    SCREENSHOT_DIR.mkdir(parents=True, exist_ok=True)
    for old in SCREENSHOT_DIR.glob("[1-6]-*.png"):
        old.unlink()  # so the final check sees only this run's screenshots

    def scenario() -> None:
        driver, profile = _driver()
        wait = WebDriverWait(driver, WAIT_SECONDS)

        def shot(name: str) -> None:
            assert driver.save_screenshot(str(SCREENSHOT_DIR / f"{name}.png")), name

        def heading() -> str:
            return wait.until(ec.visibility_of_element_located((By.TAG_NAME, "h1"))).text

        try:
            # 1. The index lists every database with its count.
            driver.get(server.url + "/")
            assert heading() == "kube-manager introspect"
            assert "1 translation error" in driver.find_element(By.CLASS_NAME, "alert").text
            shot("1-index")
            link = driver.find_element(By.CSS_SELECTOR, 'ul.lists a[href="/Snh_NetworkPolicyDatabaseList"]')
            assert link.text == "NetworkPolicies"
            link.click()

            # 2. The NetworkPolicy list: one row per policy, states coloured, markup shown as text.
            wait.until(ec.title_contains("NetworkPolicies"))
            assert heading() == "NetworkPolicies"
            rows = driver.find_elements(By.CSS_SELECTOR, "#rows tbody tr")
            cells = {r.find_elements(By.TAG_NAME, "td")[1].text: r for r in rows}
            assert set(cells) == {"allow-monitoring", "db-allow-web", XSS}
            synced = cells["db-allow-web"].find_element(By.CSS_SELECTOR, ".state")
            assert synced.text == "synced" and synced.value_of_css_property("color") == GREEN
            assert "podSelector: unknown operator 'Sometimes'" in cells[XSS].text
            with pytest.raises(NoAlertPresentException):
                driver.switch_to.alert.accept()  # the <script> in the name never ran
            shot("2-network-policies")
            cells["db-allow-web"].find_element(By.LINK_TEXT, "db-allow-web").click()

            # 3. One policy: its pass rule, then its deny rule, with endpoints and services.
            wait.until(ec.title_contains("shop/db-allow-web"))
            assert heading() == "NetworkPolicy shop/db-allow-web"
            rule_rows = driver.find_elements(By.CSS_SELECTOR, "#rules tbody tr")
            assert [r.find_elements(By.TAG_NAME, "td")[2].text for r in rule_rows] == [R_WEB_TO_DB, R_DB_DENY]
            first = rule_rows[0].text
            assert "app=web & application=k8s & namespace=shop" in first and "tcp/5432" in first
            assert "pass" in first and "deny" in rule_rows[1].text
            assert "port: 5432" in driver.find_element(By.CSS_SELECTOR, "pre.spec").text
            shot("3-policy-detail")
            driver.find_element(By.LINK_TEXT, "Explain a flow").click()

            # 4. Explain: web -> db on 5432 is allowed, by that rule.
            wait.until(ec.title_contains("Explain"))
            driver.find_element(By.NAME, "from").send_keys("shop/web")
            driver.find_element(By.NAME, "to").send_keys("shop/db")
            driver.find_element(By.NAME, "port").send_keys("5432")
            Select(driver.find_element(By.NAME, "protocol")).select_by_visible_text("TCP")
            driver.find_element(By.CSS_SELECTOR, "form.explain button").click()
            verdict = wait.until(ec.visibility_of_element_located((By.CSS_SELECTOR, "p.verdict")))
            assert verdict.text == ("shop/web → shop/db tcp/5432: allowed by Contrail; "
                                    "Kubernetes would allow it.")
            rule_link = driver.find_element(By.ID, "deciding-rule")
            assert rule_link.text == R_WEB_TO_DB
            assert FP_DB in driver.find_element(By.CSS_SELECTOR, "dl.facts").text
            shot("4-explain-allowed")
            rule_link.click()

            # 5. The deciding rule, alone in the rule list.
            wait.until(ec.title_contains("Firewall rules"))
            rows = driver.find_elements(By.CSS_SELECTOR, "#rows tbody tr")
            assert len(rows) == 1 and R_WEB_TO_DB in rows[0].text
            shot("5-deciding-rule")

            # 6. A typo in the form: a clear message, the form kept as typed.
            driver.get(server.url + "/explain?from=shop%2Fweb&to=shop%2Fghost&port=80&protocol=TCP")
            error = wait.until(ec.visibility_of_element_located((By.ID, "explain-error")))
            assert error.text == "to 'shop/ghost': no such pod"
            assert driver.find_element(By.NAME, "to").get_attribute("value") == "shop/ghost"
            shot("6-explain-error")
        finally:
            driver.quit()
            profile.cleanup()

    _in_thread(scenario)
    assert sorted(p.name for p in SCREENSHOT_DIR.glob("[1-6]-*.png")) == [
        "1-index.png", "2-network-policies.png", "3-policy-detail.png", "4-explain-allowed.png",
        "5-deciding-rule.png", "6-explain-error.png"]


def test_an_operator_goes_from_the_pod_page_to_the_trace(demo_server):
    """The demo's report "web-1 cannot reach api-2 on 9090": from the pod, explain, read why."""
    _require_browser()
    from selenium.webdriver.common.by import By
    from selenium.webdriver.support import expected_conditions as ec
    from selenium.webdriver.support.ui import WebDriverWait

    SCREENSHOT_DIR.mkdir(parents=True, exist_ok=True)
    for old in SCREENSHOT_DIR.glob("[7-9]-*.png"):
        old.unlink()

    def scenario() -> None:
        driver, profile = _driver()
        wait = WebDriverWait(driver, WAIT_SECONDS)
        try:
            # 7. The pod list links each pod to its page: tags decoded, policies linked.
            driver.get(demo_server.url + "/Snh_PodDatabaseList?namespace=shop")
            wait.until(ec.title_contains("Pods"))
            driver.find_element(By.LINK_TEXT, "web-1").click()
            wait.until(ec.title_contains("Pod shop/web-1"))
            selected = driver.find_element(By.ID, "selected-by").text
            assert "shop/default-deny" in selected and "ingress, egress" in selected
            assert "stands for pods in namespaces env notin (dev),team in (checkout,shop)" in \
                driver.find_element(By.ID, "pod-tags").text
            driver.save_screenshot(str(SCREENSHOT_DIR / "7-pod-page.png"))

            # 8. Its explain form has the pod filled in; ask for api-2 on TCP 9090.
            form = driver.find_element(By.ID, "explain-from-pod")
            assert form.find_element(By.NAME, "from").get_attribute("value") == "shop/web-1"
            form.find_element(By.NAME, "to").send_keys("shop/api-2")
            form.find_element(By.NAME, "port").send_keys("9090")
            form.find_element(By.TAG_NAME, "button").click()
            verdict = wait.until(ec.visibility_of_element_located((By.CSS_SELECTOR, "p.verdict")))
            assert verdict.text.startswith("shop/web-1 → shop/api-2 tcp/9090: dropped by Contrail")
            assert "verdict-dropped" in verdict.get_attribute("class")

            # 9. The trace says why: api-from-web opens "http", which is 9091 on api-2.
            rows = driver.find_elements(By.CSS_SELECTOR, "#trace tbody tr")
            (row,) = [r for r in rows if "shop/api-from-web" in r.text]
            cells = [c.text for c in row.find_elements(By.TAG_NAME, "td")]
            assert cells[:6] == ["ingress", "shop/api-from-web", "no", "0", "yes", "no"]
            assert cells[6] == 'port "http" is 9091 on shop/api-2, not 9090'
            driver.save_screenshot(str(SCREENSHOT_DIR / "8-explain-trace.png"))
            row.find_element(By.LINK_TEXT, "shop/api-from-web").click()
            wait.until(ec.title_contains("NetworkPolicy shop/api-from-web"))
            rule_names = [r.find_elements(By.TAG_NAME, "td")[2].text
                          for r in driver.find_elements(By.CSS_SELECTOR, "#rules tbody tr")]
            assert rule_names[-1] == "k8s-shop-ingress-api-from-web-denyall"
            driver.save_screenshot(str(SCREENSHOT_DIR / "9-policy-of-the-trace.png"))
        finally:
            driver.quit()
            profile.cleanup()

    _in_thread(scenario)
    assert sorted(p.name for p in SCREENSHOT_DIR.glob("[7-9]-*.png")) == [
        "7-pod-page.png", "8-explain-trace.png", "9-policy-of-the-trace.png"]
