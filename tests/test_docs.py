"""The knowledge-base site (`nox -s docs`, docs/build.py) in a real headless browser.

Chromium (Debian's `chromium` and `chromium-driver`, which .ci/run installs) is driven through
selenium. The site is served over HTTP from a local thread, as a reader's browser would get it.
Which site: $KB_SITE_DIR when set (`nox -s docs` sets it to what it just built), else
docs/_build/html when it is newer than every input, else a fresh build in a temporary folder.
With $KB_SITE_SCREENSHOTS set, the front page and the pipeline pattern are saved there as PNG.

Skips, with the reason, where chromium, its driver, selenium or Sphinx is missing.
"""

from __future__ import annotations

import functools
import importlib.util
import os
import re
import shutil
import threading
import time
from collections import deque
from http.server import SimpleHTTPRequestHandler, ThreadingHTTPServer
from pathlib import Path
from urllib.parse import unquote, urldefrag, urlsplit

import pytest

REPO = Path(__file__).resolve().parents[1]
DOCS = REPO / "docs"
DEFAULT_SITE = DOCS / "_build" / "html"
PATTERN = "knowledge/languages/cute-dsl/optimizations/tma-multistage-mbarrier-pipeline.html"
READING = "knowledge/reading/blackwell-mla_decode_fp16.html"
DEVLOG = "knowledge/kernels/hopper-dense-gemm.html"

BROWSERS = ("chromium", "chromium-browser", "google-chrome", "google-chrome-stable")
DRIVERS = ("chromedriver",)


def _which(names: tuple[str, ...], extra: tuple[str, ...] = ()) -> str | None:
    for n in names:
        hit = shutil.which(n)
        if hit:
            return hit
    for p in extra:
        if Path(p).is_file() and os.access(p, os.X_OK):
            return p
    return None


CHROMIUM = _which(BROWSERS)
CHROMEDRIVER = _which(DRIVERS, ("/usr/lib/chromium/chromedriver",))


def _missing() -> list[str]:
    need = [
        ("selenium (the docs dependency group: uv sync)", importlib.util.find_spec("selenium")),
        ("sphinx (the docs dependency group: uv sync)", importlib.util.find_spec("sphinx")),
        ("myst-parser (the docs dependency group)", importlib.util.find_spec("myst_parser")),
        ("furo (the docs dependency group)", importlib.util.find_spec("furo")),
        ("chromium (apt-get install -y chromium)", CHROMIUM),
        ("chromedriver (apt-get install -y chromium-driver)", CHROMEDRIVER),
    ]
    return [what for what, ok in need if not ok]


MISSING = _missing()
pytestmark = pytest.mark.skipif(bool(MISSING), reason=f"site browser test needs: {MISSING}")


def _inputs_newest() -> float:
    newest = 0.0
    roots = [REPO / "knowledge", REPO / "results", DOCS]
    for root in roots:
        for p in root.rglob("*"):
            if "_build" in p.parts or not p.is_file():
                continue
            if root.name == "results" and p.suffix not in (".md", ".png", ".json"):
                continue
            newest = max(newest, p.stat().st_mtime)
    return max(newest, (REPO / "README.md").stat().st_mtime)


@pytest.fixture(scope="module")
def site(tmp_path_factory: pytest.TempPathFactory) -> Path:
    env = os.environ.get("KB_SITE_DIR")
    if env:
        path = Path(env)
        assert (path / "index.html").is_file(), f"KB_SITE_DIR={env} holds no built site"
        return path
    index = DEFAULT_SITE / "index.html"
    if index.is_file() and index.stat().st_mtime >= _inputs_newest():
        return DEFAULT_SITE
    import importlib.util as iu

    spec = iu.spec_from_file_location("kb_site_build", DOCS / "build.py")
    assert spec and spec.loader
    mod = iu.module_from_spec(spec)
    spec.loader.exec_module(mod)
    out = tmp_path_factory.mktemp("site") / "html"
    assert mod.build(out) == 0, "sphinx build of the site failed"
    return out


@pytest.fixture(scope="module")
def server(site: Path):
    handler = functools.partial(_QuietHandler, directory=str(site))
    httpd = ThreadingHTTPServer(("127.0.0.1", 0), handler)
    thread = threading.Thread(target=httpd.serve_forever, daemon=True)
    thread.start()
    yield f"http://127.0.0.1:{httpd.server_address[1]}/"
    httpd.shutdown()
    httpd.server_close()


class _QuietHandler(SimpleHTTPRequestHandler):
    def log_message(self, *args) -> None:  # no request log on stderr
        pass


@pytest.fixture(scope="module")
def browser():
    from selenium import webdriver
    from selenium.webdriver.chrome.service import Service

    opts = webdriver.ChromeOptions()
    opts.binary_location = CHROMIUM
    for arg in (
        "--headless=new",
        "--no-sandbox",
        "--disable-gpu",
        "--disable-dev-shm-usage",
        "--window-size=1280,1000",
    ):
        opts.add_argument(arg)
    driver = webdriver.Chrome(service=Service(executable_path=CHROMEDRIVER), options=opts)
    driver.set_page_load_timeout(60)
    yield driver
    driver.quit()


def _open(browser, url: str):
    browser.get(url)
    return browser


def _h1(browser) -> str:
    from selenium.webdriver.common.by import By

    return browser.find_element(By.CSS_SELECTOR, "article h1").text


def _shot(browser, name: str) -> None:
    where = os.environ.get("KB_SITE_SCREENSHOTS")
    if where:
        Path(where).mkdir(parents=True, exist_ok=True)
        browser.save_screenshot(str(Path(where) / name))


def test_front_page_renders_with_navigation(browser, server) -> None:
    from selenium.webdriver.common.by import By

    _open(browser, server + "index.html")
    assert "learn-cute-dsl" in browser.title
    assert _h1(browser).startswith("learn-cute-dsl")
    captions = {
        e.get_attribute("textContent").strip()
        for e in browser.find_elements(By.CSS_SELECTOR, ".sidebar-tree .caption-text")
    }
    assert {"Start here", "Patterns", "Anti-patterns", "Reading notes", "Kernel devlogs"} <= (
        captions
    ), captions
    nav = [
        a.get_attribute("href") for a in browser.find_elements(By.CSS_SELECTOR, ".sidebar-tree a")
    ]
    assert any(h.endswith("knowledge/QUESTIONS.html") for h in nav), nav
    assert any(h.endswith(PATTERN) for h in nav), nav
    _shot(browser, "front-page.png")


def test_reading_note_renders(browser, server) -> None:
    from selenium.webdriver.common.by import By

    _open(browser, server + READING)
    assert _h1(browser).startswith("Reading notes: Blackwell MLA decode")
    assert browser.find_element(By.ID, "tma-descriptors").is_displayed()
    assert browser.find_elements(By.CSS_SELECTOR, "article table"), "tables did not render"
    cited = [
        a.get_attribute("href")
        for a in browser.find_elements(By.CSS_SELECTOR, "article a.reference.external")
    ]
    assert any(
        "github.com/NVIDIA/cutlass/blob/" in h and "mla_decode_fp16.py#L" in h for h in cited
    )


def test_pattern_renders(browser, server) -> None:
    from selenium.webdriver.common.by import By

    _open(browser, server + PATTERN)
    assert _h1(browser).startswith("TMA multi-stage pipeline")
    for section in ("mechanism", "implementation", "performance-evidence", "pitfalls"):
        assert browser.find_element(By.ID, section).is_displayed(), section
    assert browser.find_elements(By.CSS_SELECTOR, "article div.highlight pre"), "no code block"
    _shot(browser, "pattern-tma-multistage-mbarrier-pipeline.png")


def test_devlog_renders_with_its_plot(browser, server) -> None:
    from selenium.webdriver.common.by import By

    _open(browser, server + DEVLOG)
    assert _h1(browser).startswith("Hopper dense GEMM")
    imgs = browser.find_elements(By.CSS_SELECTOR, "article img")
    assert imgs, "the devlog shows no plot"
    for img in imgs:
        loaded = browser.execute_script(
            "return arguments[0].complete && arguments[0].naturalWidth > 0;", img
        )
        assert loaded, f"plot {img.get_attribute('src')} did not load"
    assert any("roofline" in (i.get_attribute("src") or "") for i in imgs)


def test_search_for_mbarrier_finds_the_pipeline_pattern(browser, server) -> None:
    from selenium.webdriver.common.by import By
    from selenium.webdriver.support import expected_conditions as ec
    from selenium.webdriver.support.ui import WebDriverWait

    _open(browser, server + "search.html?q=mbarrier")
    WebDriverWait(browser, 30).until(
        ec.presence_of_element_located((By.CSS_SELECTOR, "ul.search li a"))
    )
    # Sphinx appends results as it scores them: wait until the list stops growing.
    count, stable_since = -1, time.monotonic()
    while time.monotonic() - stable_since < 1.0:
        n = len(browser.find_elements(By.CSS_SELECTOR, "ul.search li"))
        if n != count:
            count, stable_since = n, time.monotonic()
        time.sleep(0.2)
    hits = [
        a.get_attribute("href") for a in browser.find_elements(By.CSS_SELECTOR, "ul.search li a")
    ]
    assert any(PATTERN in (h or "") for h in hits), hits


def test_no_internal_link_is_broken(browser, server, site: Path) -> None:
    """Every page reachable from the front page, visited in the browser: each link that stays
    on the site names a file the site has and, with a #fragment, an element of that page."""

    def local(url: str) -> str | None:
        if not url.startswith(server):
            return None
        return unquote(urlsplit(url).path).lstrip("/") or "index.html"

    ids: dict[str, set[str]] = {}
    links: list[tuple[str, str]] = []  # (page, href)
    queue, seen = deque(["index.html"]), {"index.html"}
    while queue:
        page = queue.popleft()
        browser.get(server + page)
        # the page's ids from its file (the browser's DOM was read while a heavily loaded
        # machine still rendered it, and missed ids that are there: a static site's anchors
        # are in its HTML)
        ids[page] = set(re.findall(r'\bid="([^"]+)"', (site / page).read_text(errors="replace")))
        hrefs = browser.execute_script(
            "return Array.from(document.querySelectorAll('a[href]')).map(a => a.href);"
        )
        for href in hrefs:
            if not href or local(href) is None:
                continue
            links.append((page, href))
            path = local(urldefrag(href)[0])
            if path.endswith(".html") and path not in seen and (site / path).is_file():
                seen.add(path)
                queue.append(path)
    assert len(ids) > 30, f"only {len(ids)} pages reachable from the front page"
    broken = []
    for page, href in links:
        url, frag = urldefrag(href)
        path = local(url)
        if path.endswith("/"):
            path += "index.html"
        if not (site / path).is_file():
            broken.append(f"{page}: {href} (no such file)")
        elif frag and path.endswith(".html") and path in ids and unquote(frag) not in ids[path]:
            broken.append(f"{page}: {href} (no element #{frag})")
    assert not broken, "\n".join(sorted(set(broken)))
