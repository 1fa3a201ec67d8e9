"""The web UI in a real browser: Debian's Chromium, headless, driven by Selenium, against
``causalkg serve`` running as a real server process over the fixture KG and its store. Every
wait is WebDriverWait on a condition of the page; nothing sleeps."""

from __future__ import annotations

import json

import pytest

from causalkg.testing.browser import browser_available, headless_chromium
from tests.web.kgfixture import build_project
from tests.web.server import ServeProcess

pytestmark = pytest.mark.slow

if browser_available():  # pragma: no cover - CI installs them (scripts/install_system_deps.sh)
    pytest.skip(browser_available(), allow_module_level=True)


@pytest.fixture(scope="module")
def site(tmp_path_factory):
    root = tmp_path_factory.mktemp("browser")
    build_project(root)
    with ServeProcess(root / "data") as srv, headless_chromium() as driver:
        yield srv, driver, root / "data" / "judgements" / "judgements.jsonl"


def _wait(driver, condition, timeout: float = 60):
    from selenium.webdriver.support.ui import WebDriverWait

    return WebDriverWait(driver, timeout).until(condition)


def test_search_concept_edge_judge_and_query(site):
    from selenium.webdriver.common.by import By
    from selenium.webdriver.support import expected_conditions as EC

    srv, driver, judgements = site
    driver.get(srv.url + "/")
    assert "The causal KG" in driver.find_element(By.TAG_NAME, "h1").text

    # type-ahead search
    box = driver.find_element(By.ID, "q")
    box.send_keys("earthquake")
    first = _wait(driver, EC.visibility_of_element_located((By.CSS_SELECTOR, ".typeahead li a")))
    assert "earthquake" in first.text and "Q7944" in first.text and "class" in first.text
    first.click()
    _wait(driver, EC.url_contains("/concept/Q7944"))
    assert driver.find_element(By.TAG_NAME, "h1").text.startswith("earthquake")
    effects = driver.find_element(By.CSS_SELECTOR, "section.effects")
    assert "tsunami" in effects.text and "Base KG" in effects.text

    # an edge and its highlighted evidence
    effects.find_element(By.CSS_SELECTOR, 'a.evidence[href="/edge/Q7944_Q8070"]').click()
    cause = _wait(driver, EC.visibility_of_element_located((By.CSS_SELECTOR, "blockquote mark.cause")))
    effect = driver.find_element(By.CSS_SELECTOR, "blockquote mark.effect")
    assert cause.text == "The undersea megathrust earthquake"
    assert effect.text == "a series of devastating tsunamis"
    assert cause.value_of_css_property("background-color") != effect.value_of_css_property("background-color")

    # a judgement, recorded in the file
    form = driver.find_element(By.CSS_SELECTOR, "section.mention form.judge")
    form.find_element(By.CSS_SELECTOR, 'input[value="wrong"]').click()
    form.find_element(By.NAME, "note").send_keys("the plate caused it")
    form.find_element(By.NAME, "judge").send_keys("Selenium")
    form.find_element(By.CSS_SELECTOR, "button[type=submit]").click()
    saved = _wait(driver, EC.visibility_of_element_located((By.CSS_SELECTOR, ".saved")))
    assert "Recorded: wrong" in saved.text
    [line] = [json.loads(x) for x in judgements.read_text(encoding="utf-8").splitlines()]
    assert (line["cause"], line["effect"], line["verdict"], line["judge"], line["note"]) == (
        "Q7944", "Q8070", "wrong", "Selenium", "the plate caused it")
    assert line["sentence"].startswith("The undersea megathrust earthquake")

    # an example query, one click away
    driver.get(srv.url + "/query")
    driver.find_element(By.CSS_SELECTOR, 'a[data-example="earthquake-effects"]').click()
    table = _wait(driver, EC.visibility_of_element_located((By.CSS_SELECTOR, "table.sparql")))
    assert [c.text for c in table.find_elements(By.CSS_SELECTOR, "tbody tr td:nth-child(2)")] == [
        "tsunami", "death", "train wreck"]
    # and one typed in
    area = driver.find_element(By.NAME, "query")
    area.clear()
    area.send_keys("ASK { wd:Q7944 ck:causes wd:Q8070 }")
    driver.find_element(By.ID, "run").click()
    answer = _wait(driver, EC.visibility_of_element_located((By.CSS_SELECTOR, "p.answer")))
    assert answer.text == "true"


def test_graph_view_draws_and_expands(site):
    from selenium.webdriver.common.by import By

    srv, driver, _ = site
    driver.get(srv.url + "/graph/Q8070")
    box = driver.find_element(By.ID, "graph")
    # tsunami, its two causes and one effect, drawn by the vendored Cytoscape.js
    _wait(driver, lambda d: box.get_attribute("data-nodes") == "4")
    assert box.find_elements(By.TAG_NAME, "canvas")
    # click earthquake (a cause) to expand it: its effect death joins
    from selenium.webdriver.common.action_chains import ActionChains

    pos = driver.execute_script("var p = window.causalkgGraph.getElementById('Q7944').renderedPosition();"
                                "return [p.x, p.y];")
    size = box.size
    ActionChains(driver).move_to_element_with_offset(box, int(pos[0] - size["width"] / 2),
                                                     int(pos[1] - size["height"] / 2)).click().perform()
    _wait(driver, lambda d: box.get_attribute("data-nodes") == "5")
    labels = driver.execute_script("return window.causalkgGraph.nodes().map(function (n) { return n.data('label'); })")
    assert "death" in labels
