"""Open an HTML report in headless Chromium, offline, take a screenshot, check it fetched nothing, and
measure what a reader sees.

    python tools/check_report_browser.py report.html --screenshot shot.png --min-text-px 10

Checks, in order: the HTML names no external resource (no http(s):// or protocol-relative
``src``/``href``/``url()``, no ``<link>``/``<script src>``); Chromium renders the page from a
file:// URL with networking off (``--dump-dom`` must give back the report's body, with
every image decoded into the DOM); a screenshot is written.  Then :func:`measure` lays the
page out at the window width and prints its height (as it opens, with every section open,
with everything open) and its smallest text in CSS pixels: the page's own text and the text
inside each figure (the figure's ``data-min-text-px`` scaled by how wide the browser draws
it).  Exit status 0 when all checks pass, 1 otherwise (each failure on its own line), 2 when
Chromium is missing.
"""
import argparse
import html as html_text
import json
import os
import re
import shutil
import subprocess
import sys
import tempfile
from html.parser import HTMLParser
from typing import Any, Dict, List, Optional

CHROMIUM_NAMES = ("chromium", "chromium-browser", "google-chrome", "chrome")
OFFLINE_FLAGS = ["--headless", "--no-sandbox", "--disable-gpu", "--disable-background-networking",
                 "--disable-component-update", "--disable-sync", "--no-first-run", "--disable-extensions",
                 "--disable-default-apps", "--metrics-recording-only", "--mute-audio",
                 "--host-resolver-rules=MAP * ~NOTFOUND"]
_EXTERNAL = re.compile(r"^\s*(https?:)?//", re.IGNORECASE)
_CSS_URL = re.compile(r"url\(\s*['\"]?\s*((https?:)?//[^)'\"]*)", re.IGNORECASE)


class _Resources(HTMLParser):
    """Collects every attribute that makes a browser fetch something, and <link>/<script src> tags."""

    def __init__(self) -> None:
        super().__init__()
        self.external: List[str] = []
        self.images = 0

    def handle_starttag(self, tag, attrs):
        for name, value in attrs:
            if name in ("src", "href", "srcset", "poster", "data", "action", "background") and value \
                    and _EXTERNAL.match(value):
                self.external.append(f"<{tag} {name}={value[:80]}>")
            if name == "style" and value and _CSS_URL.search(value):
                self.external.append(f"<{tag} style url({_CSS_URL.search(value).group(1)[:80]})>")
        if tag == "img":
            self.images += 1
        if tag == "link":
            self.external.append(f"<link {dict(attrs)}> (a linked resource)")
        if tag == "script" and any(n == "src" for n, _ in attrs):
            self.external.append("<script src=...> (a fetched script)")

    def handle_data(self, data):
        for match in _CSS_URL.finditer(data):
            self.external.append(f"url({match.group(1)[:80]}) in a style")


def external_resources(page: str) -> List[str]:
    """Every resource the page would fetch from the network (empty: self-contained)."""
    parser = _Resources()
    parser.feed(page)
    found = parser.external
    if re.search(r"@import|@font-face", page):
        found.append("@import/@font-face in a style")
    return found


def find_chromium() -> Optional[str]:
    for name in CHROMIUM_NAMES:
        path = shutil.which(name)
        if path:
            return path
    return None


def _chromium(binary: str, profile: str, extra: List[str], url: str, timeout: float) -> subprocess.CompletedProcess:
    return subprocess.run([binary, *OFFLINE_FLAGS, f"--user-data-dir={profile}", *extra, url],
                          capture_output=True, text=True, timeout=timeout)


def check(page_path: str, screenshot: str, width: int = 1400, height: int = 2400, timeout: float = 120) -> List[str]:
    """Failures (empty when the page is self-contained and renders offline)."""
    failures: List[str] = []
    with open(page_path, encoding="utf-8") as fh:
        page = fh.read()
    failures += [f"external resource: {r}" for r in external_resources(page)]
    parser = _Resources()
    parser.feed(page)
    binary = find_chromium()
    if binary is None:
        raise FileNotFoundError("no Chromium found (apt-get install -y chromium)")
    url = "file://" + os.path.abspath(page_path)
    with tempfile.TemporaryDirectory(prefix="staicc-chromium-") as profile:
        dom = _chromium(binary, profile, ["--dump-dom", "--virtual-time-budget=5000"], url, timeout)
        if dom.returncode != 0 or "<h1>" not in dom.stdout:
            failures.append(f"chromium --dump-dom failed (exit {dom.returncode}): {dom.stderr.strip()[-300:]}")
        else:
            rendered = dom.stdout.count("<img")
            if rendered != parser.images:
                failures.append(f"the rendered DOM has {rendered} images, the page {parser.images}")
            failures += [f"external resource in the rendered DOM: {r}" for r in external_resources(dom.stdout)]
        shot = _chromium(binary, profile, [f"--screenshot={os.path.abspath(screenshot)}",
                                           f"--window-size={width},{height}", "--hide-scrollbars"], url, timeout)
        if shot.returncode != 0 or not os.path.isfile(screenshot) or os.path.getsize(screenshot) == 0:
            failures.append(f"no screenshot (exit {shot.returncode}): {shot.stderr.strip()[-300:]}")
    return failures


#: run in a copy of the page (the report itself holds no script): heights, then every text's size with all open
_MEASURE = r"""<script>
(function () {
  const height = () => document.documentElement.scrollHeight;
  const out = {width: window.innerWidth, initial: height()};
  for (const d of document.querySelectorAll("details.section")) d.open = true;
  out.sections = height();
  for (const d of document.querySelectorAll("details")) d.open = true;
  out.expanded = height();
  let smallest = [Infinity, ""];
  const walker = document.createTreeWalker(document.body, NodeFilter.SHOW_TEXT);
  for (let node = walker.nextNode(); node; node = walker.nextNode()) {
    const element = node.parentElement;
    if (!node.data.trim() || !element.getClientRects().length) continue;
    const size = parseFloat(getComputedStyle(element).fontSize);
    if (size < smallest[0]) smallest = [size, element.tagName + ": " + node.data.trim().slice(0, 60)];
  }
  out.figures = [];
  for (const img of document.images) {
    const shown = img.getBoundingClientRect().width, natural = img.naturalWidth;
    const inside = parseFloat(img.dataset.minTextPx || "NaN");
    out.figures.push([img.alt, shown, natural, inside * shown / natural]);
    if (!(inside * shown / natural >= smallest[0])) smallest = [inside * shown / natural, "figure: " + img.alt];
  }
  out.smallest_text_px = smallest[0];
  out.smallest_text = smallest[1];
  const report = document.createElement("pre");
  report.id = "staicc-measure";
  report.textContent = JSON.stringify(out);
  document.body.appendChild(report);
})();
</script>"""


def measure(page_path: str, width: int = 1400, timeout: float = 120) -> Dict[str, Any]:
    """Lay the page out in Chromium at ``width`` px: its heights (``initial``: as it opens; ``sections``: every
    section open; ``expanded``: everything open) and ``smallest_text_px``, the smallest text of the page and
    of its figures as drawn (a figure without ``data-min-text-px`` counts as NaN, i.e. fails a bound)."""
    binary = find_chromium()
    if binary is None:
        raise FileNotFoundError("no Chromium found (apt-get install -y chromium)")
    with open(page_path, encoding="utf-8") as fh:
        page = fh.read()
    with tempfile.TemporaryDirectory(prefix="staicc-measure-") as folder:
        copy = os.path.join(folder, "page.html")
        with open(copy, "w", encoding="utf-8") as fh:
            fh.write(page.replace("</body>", _MEASURE + "</body>"))
        done = _chromium(binary, os.path.join(folder, "profile"), ["--dump-dom", "--virtual-time-budget=5000",
                                                                   f"--window-size={width},1000"],
                         "file://" + copy, timeout)
    found = re.search(r'<pre id="staicc-measure">(.*?)</pre>', done.stdout, re.DOTALL)
    if found is None:
        raise RuntimeError(f"chromium gave no measurement (exit {done.returncode}): {done.stderr.strip()[-300:]}")
    return json.loads(html_text.unescape(found.group(1)))


def main(argv: Optional[List[str]] = None) -> int:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("page", help="the HTML report")
    parser.add_argument("--screenshot", default="report.png", help="where to write the screenshot (PNG)")
    parser.add_argument("--width", type=int, default=1400)
    parser.add_argument("--height", type=int, default=2400)
    parser.add_argument("--min-text-px", type=float, default=10.0,
                        help="fail when any text (page or figure) is drawn smaller (default: 10)")
    args = parser.parse_args(argv)
    try:
        failures = check(args.page, args.screenshot, args.width, args.height)
        found = measure(args.page, args.width)
    except FileNotFoundError as exc:
        print(f"check_report_browser: {exc}", file=sys.stderr)
        return 2
    print(f"at {found['width']} px: page {found['initial']} px tall as it opens, {found['sections']} px with every "
          f"section open, {found['expanded']} px with everything open; smallest text {found['smallest_text_px']:.1f} "
          f"px ({found['smallest_text']})")
    if not found["smallest_text_px"] >= args.min_text_px:
        failures.append(f"text drawn at {found['smallest_text_px']} px, under {args.min_text_px} px: "
                        f"{found['smallest_text']}")
    for failure in failures:
        print(f"FAIL: {failure}")
    if not failures:
        print(f"ok: {args.page} is self-contained and renders offline; screenshot {args.screenshot}")
    return 1 if failures else 0


if __name__ == "__main__":
    sys.exit(main())
