"""The web UI in a real browser: Debian's Chromium, headless, driven by Selenium, against
``causalkg serve`` running as a real server process over the fixture KG and its store. Every
wait is WebDriverWait on a condition of the page; nothing sleeps."""

from __future__ import annotations

import json
import os
from pathlib import Path

import pytest

from causalkg.testing.browser import browser_available, headless_chromium
from tests.web.kgfixture import build_project
from tests.web.server import ServeProcess

pytestmark = pytest.mark.slow

# the screenshots of the docs (docs/web.md) are taken by these tests' browser
def _screenshot(driver, name: str) -> None:
    """The docs' pictures are taken by this test's browser only when asked, so that a test run
    leaves the checkout as it was: ``CAUSALKG_SCREENSHOTS=docs/img pytest tests/web/test_browser.py``."""
    folder = os.environ.get("CAUSALKG_SCREENSHOTS")
    if folder:
        Path(folder).mkdir(parents=True, exist_ok=True)
        driver.save_screenshot(str(Path(folder) / name))

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
    _screenshot(driver, "query-page.png")
    # the editor (vendored CodeMirror) highlights SPARQL and completes the declared prefixes
    editor = driver.find_element(By.CSS_SELECTOR, ".CodeMirror")
    assert editor.find_elements(By.CSS_SELECTOR, "span.cm-keyword")
    driver.execute_script("arguments[0].CodeMirror.setValue('');", editor)
    from selenium.webdriver.common.action_chains import ActionChains

    ActionChains(driver).click(editor.find_element(By.CSS_SELECTOR, ".CodeMirror-lines")).send_keys("wd").perform()
    hints = _wait(driver, EC.visibility_of_element_located((By.CSS_SELECTOR, "ul.CodeMirror-hints")))
    assert any(h.text.startswith("wdt:") for h in hints.find_elements(By.TAG_NAME, "li"))
    # and one typed in
    driver.execute_script("arguments[0].CodeMirror.setValue('ASK { wd:Q7944 ck:causes wd:Q8070 }');", editor)
    driver.find_element(By.ID, "run").click()
    answer = _wait(driver, EC.visibility_of_element_located((By.CSS_SELECTOR, "p.answer")))
    assert answer.text == "true"


OVERLAPS = """
var ns = window.causalkgGraph.nodes(), out = [];
for (var i = 0; i < ns.length; i++) { for (var j = i + 1; j < ns.length; j++) {
  var a = ns[i].boundingBox({includeLabels: true}), b = ns[j].boundingBox({includeLabels: true});
  if (a.x1 < b.x2 && b.x1 < a.x2 && a.y1 < b.y2 && b.y1 < a.y2) { out.push([ns[i].id(), ns[j].id()]); }
} }
return out;
"""


def _graph_ready(driver, box, n: int):
    _wait(driver, lambda d: box.get_attribute("data-nodes") == str(n) and box.get_attribute("data-ready") == "1")


def test_graph_view_draws_and_expands(site):
    from selenium.webdriver.common.action_chains import ActionChains
    from selenium.webdriver.common.by import By
    from selenium.webdriver.support import expected_conditions as EC

    srv, driver, _ = site
    driver.get(srv.url + "/graph/Q8070")
    box = driver.find_element(By.ID, "graph")
    # tsunami, its two causes and one effect, drawn by the vendored Cytoscape.js and fCoSE
    _graph_ready(driver, box, 4)
    assert box.find_elements(By.TAG_NAME, "canvas")
    assert driver.execute_script("return typeof cytoscapeFcose") == "function"
    assert driver.execute_script(OVERLAPS) == []
    # click earthquake (a cause) to expand it: its effect death joins
    pos = driver.execute_script("var p = window.causalkgGraph.getElementById('Q7944').renderedPosition();"
                                "return [p.x, p.y];")
    size = box.size
    ActionChains(driver).move_to_element_with_offset(box, int(pos[0] - size["width"] / 2),
                                                     int(pos[1] - size["height"] / 2)).click().perform()
    _graph_ready(driver, box, 5)
    labels = driver.execute_script("return window.causalkgGraph.nodes().map(function (n) { return n.data('label'); })")
    assert "death" in labels
    # no two concept boxes (labels included) overlap, read from Cytoscape's own positions
    assert driver.execute_script(OVERLAPS) == []
    # the expanded concept is in the address, so the view is a link
    _wait(driver, lambda d: "expand=Q7944" in d.current_url)
    shared = driver.current_url
    # a click on an edge shows its evidence beside the graph
    mid = driver.execute_script("var p = window.causalkgGraph.getElementById('Q7944_Q8070').renderedMidpoint();"
                                "return [p.x, p.y];")
    ActionChains(driver).move_to_element_with_offset(box, int(mid[0] - size["width"] / 2),
                                                     int(mid[1] - size["height"] / 2)).click().perform()
    panel = _wait(driver, EC.visibility_of_element_located((By.CSS_SELECTOR, "#evidence-panel blockquote")))
    assert "undersea megathrust earthquake" in panel.text or "Tsunamis are much more frequent" in panel.text
    assert driver.find_element(By.CSS_SELECTOR, "#evidence-panel mark.cause").text
    # the legend names every colour and shape drawn
    legend = driver.find_element(By.CSS_SELECTOR, "dl.legend").text
    for words in ("this concept", "a cause", "an effect", "a class", "an instance", "expanded", "Base KG", "width"):
        assert words in legend
    # SVG export: every concept drawn is in it
    svg = driver.execute_script("return window.causalkgGraphSVG();")
    assert svg.startswith("<svg") and all(x in svg for x in ("tsunami", "earthquake", "death", "volcanic"))
    _screenshot(driver, "graph-view.png")
    # the shared link opens the same view: earthquake expanded again
    driver.get(shared)
    box = driver.find_element(By.ID, "graph")
    _graph_ready(driver, box, 5)
    assert driver.execute_script("return window.causalkgGraph.getElementById('Q7944').hasClass('expanded')")
    assert driver.execute_script(OVERLAPS) == []


def test_edges_page_sorts_filters_and_fits_a_phone(site):
    from selenium.webdriver.common.by import By
    from selenium.webdriver.support import expected_conditions as EC

    srv, driver, _ = site
    driver.set_window_size(1280, 900)
    driver.get(srv.url + "/edges")
    count = driver.find_element(By.ID, "edge-count")
    assert count.text == "13"
    driver.find_element(By.CSS_SELECTOR, '[data-facet="level"] a[data-value="class"]').click()
    _wait(driver, lambda d: d.find_element(By.ID, "edge-count").text == "10")
    driver.find_element(By.LINK_TEXT, "sentences").click()
    _wait(driver, EC.url_contains("sort=sentences"))
    driver.find_element(By.PARTIAL_LINK_TEXT, "sentences").click()
    _wait(driver, EC.url_contains("sort=-sentences"))
    first = driver.find_element(By.CSS_SELECTOR, "table.edge-table tbody tr").get_attribute("data-edge")
    assert first == "Q7944_Q8070"
    box = driver.find_element(By.CSS_SELECTOR, "form.edge-search input[name=q]")
    box.send_keys("tsunami")
    box.submit()
    _wait(driver, EC.url_contains("q=tsunami"))
    assert "level=class" in driver.current_url and int(driver.find_element(By.ID, "edge-count").text) > 0
    driver.get(srv.url + "/edges")
    _screenshot(driver, "edges-page.png")
    # at 420 px the page does not scroll sideways: the table scrolls in its box, the search box stays usable
    try:
        driver.set_window_size(420, 900)
        driver.get(srv.url + "/edges")
        width = driver.execute_script("return document.documentElement.clientWidth")
        assert driver.execute_script("return document.documentElement.scrollWidth") <= width
        scroller = driver.find_element(By.CSS_SELECTOR, ".table-scroll")
        assert driver.execute_script("return arguments[0].scrollWidth > arguments[0].clientWidth", scroller)
        search = driver.find_element(By.ID, "q")
        assert search.size["width"] >= 0.6 * width
        search.send_keys("earthquake")
        first = _wait(driver, EC.visibility_of_element_located((By.CSS_SELECTOR, ".typeahead li a")))
        assert "Q7944" in first.text
        driver.get(srv.url + "/concept/Q7944")
        assert driver.execute_script("return document.documentElement.scrollWidth") <= width
    finally:
        driver.set_window_size(1280, 900)
