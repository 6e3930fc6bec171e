"""Open the Snakemake report in headless Chromium and check that its figures really load.

    python bench/report_screenshot.py results/report.html [--out results/report_check] [--show results/monet/figure1.png]

Checks, each printed with its count:

1. static: the report's ``results`` table parses; every image result is a data URI (self-contained, no
   file links) that decodes to a PNG/SVG with a size; every result has a caption, no caption holds
   unrendered Jinja (``{{``, ``{%``), every caption states this run's config values (its ``This run``
   sentence) and every figure's caption names the paper's figure or table; the agreement pages
   (``agreement.html``) carry coloured rows and their "N of M claims agree" line.
2. in Chromium: a copy of the report with a probe script appended loads every image data URI into an
   ``Image`` (``naturalWidth`` > 0 proves the browser decoded it), then asks the report's own app to
   show one figure with its caption. ``--dump-dom`` of that page must contain the probe's verdict and
   the report's ``<img>`` with a ``data:image`` source. Then each agreement page is shown in the report's
   own view in a 1,400 px wide window, with a script added to the page that measures its table against
   the page (the report's ``<iframe>``) and posts the numbers to the report: the table must be whole
   (no wider than the frame, so nothing is cropped); its tallest row is printed. Then each interactive design-space
   page (``traincost design-space``) is shown in the report's view with no network (every host name resolves to
   nothing), with a script added to the page that hovers its first point, clicks two points, picks a filter and
   posts what the page showed: the tooltip must name the hovered point's ``config_id``, the difference table both
   clicked points, and the filter must leave fewer points.
3. screenshots, to look at: ``<out>/report.png`` (a figure with its caption, ``--show`` picks which),
   ``<out>/report_agreement.png`` (the last agreement page, as the report shows it) and
   ``<out>/report_design_space.png`` (the design-space page of the most points, after the hover and the two clicks).
   ``--docs DIR`` also writes them, with the report's opening page, as small palette PNGs for the README
   (``docs/screenshots``).

Every HTML result must also fit the longest URL Chromium opens (2 MB, base64 included): the report shows it in an
``<iframe>`` whose source is a ``data:`` URL, and a longer one shows an empty frame.

Needs Chromium (Debian: ``apt-get install -y chromium``); CI has none, so this is a bench script.
Exit status 1 if any check fails.
"""

from __future__ import annotations

import argparse
import base64
import html
import json
import re
import shutil
import struct
import subprocess
import sys
import tempfile
from pathlib import Path

PROBE = """
<script id="bench-probe">
window.addEventListener("load", function () {
  const paths = Object.keys(results);
  const images = paths.filter(p => (results[p].mime_type || "").startsWith("image/"));
  const checks = images.map(p => new Promise(function (resolve) {
    const img = new Image();
    img.onload = () => resolve({path: p, ok: img.naturalWidth > 0, width: img.naturalWidth, height: img.naturalHeight});
    img.onerror = () => resolve({path: p, ok: false, width: 0, height: 0});
    img.src = results[p].data_uri;
  }));
  Promise.all(checks).then(function (loaded) {
    const pre = document.createElement("pre");
    pre.id = "bench-probe-result";
    pre.style.display = "none";
    pre.textContent = JSON.stringify(loaded);
    document.body.appendChild(pre);
    const show = SHOW_PATH;
    // null: the report's opening page, as it first shows
    const target = show === null ? null : show && results[show] ? show : images[0];
    if (target) {
      const kind = results[target].mime_type === "text/html" ? "html" : "img";
      app.setView({content: kind, contentPath: results[target].data_uri, resultPath: target, navbarMode: "resultinfo"});
    }
  });
});
</script>
"""

# added to an agreement page inside the probe copy of the report: the page is a data: URI in an <iframe>, which the
# report cannot read, so the page measures itself and posts the numbers to the report
TABLE_PROBE = """
<script id="bench-table-probe">
window.addEventListener("load", function () {
  const table = document.querySelector("table");
  const rows = Array.from(document.querySelectorAll("tbody tr"));
  parent.postMessage({bench: "table", frameWidth: document.documentElement.clientWidth,
    tableWidth: table ? Math.ceil(table.getBoundingClientRect().width) : 0, scrollWidth: document.documentElement.scrollWidth,
    tallestRow: Math.max(0, ...rows.map(r => Math.round(r.getBoundingClientRect().height)))}, "*");
});
</script>
"""

# added to a design-space page (traincost.plots.design_space) inside the probe copy of the report: hovers the first
# point, clicks it and the point farthest from it, picks the first parameter's first value and back, posts what the page
# showed
DESIGN_PROBE = """
<script id="bench-design-probe">
window.addEventListener("load", function () {
  let waited = 0;
  (function wait() {
    if (!window.designSpace && waited++ < 100) { setTimeout(wait, 100); return; }
    if (!window.designSpace) { parent.postMessage({bench: "design", ready: false}, "*"); return; }
    const points = window.designSpace.points();
    const at = (p, type) => document.elementFromPoint(p.x, p.y).dispatchEvent(
      new PointerEvent(type, {clientX: p.x, clientY: p.y, bubbles: true}));
    const first = points[0];
    const distance = (p) => (p.step === first.step ? Math.hypot(p.x - first.x, p.y - first.y) : -1);
    const other = points.reduce((far, p) => (distance(p) > distance(far) ? p : far), first);  // the farthest in its panel
    const tooltip = document.getElementById("tooltip");
    at(first, "pointermove");
    // the points drawn within 6 px of a point (it may hide under another): hovering or clicking it shows one of them
    const under = (q) => points.filter(p => p.step === q.step && Math.hypot(p.x - q.x, p.y - q.y) < 6).map(p => p.config_id);
    const named = tooltip.hidden ? [] : under(first).filter(id => tooltip.textContent.includes(id));
    const tooltipText = tooltip.textContent;
    at(first, "click");
    at(other, "click");
    const difference = document.getElementById("difference").textContent;
    const compared = [first, other].filter(p => under(p).some(id => difference.includes(id))).length;
    at(first, "pointermove");  // the tooltip shown again, for the screenshot
    const select = document.querySelector("#controls select:not([name=view])");
    let filtered = null;
    if (select && select.options.length > 2) {
      select.selectedIndex = 1;
      select.dispatchEvent(new Event("change"));
      filtered = {parameter: select.name, value: select.value, points: window.designSpace.points().length};
      select.selectedIndex = 0;
      select.dispatchEvent(new Event("change"));
    }
    parent.postMessage({bench: "design", ready: true, points: points.length, hovered: first.config_id, named,
      tooltip: tooltipText.slice(0, 200), compared, filtered}, "*");
  })();
});
</script>
"""

# in the report: writes what a page posted (bench: "table" or "design") into the DOM, for --dump-dom
TABLE_LISTENER = """
<script id="bench-table-listener">
window.addEventListener("message", function (event) {
  if (!event.data || !["table", "design"].includes(event.data.bench)) return;
  const pre = document.createElement("pre");
  pre.id = `bench-${event.data.bench}-result`;
  pre.style.display = "none";
  pre.textContent = JSON.stringify(event.data);
  document.body.appendChild(pre);
});
</script>
"""

TABLE_WINDOW = "1400,1000"  # a laptop-sized window, where the report gives the frame about half its width

ROW_CLASS = re.compile(r'<tr class="(agree|disagree|unchecked)">')

# the longest URL Chromium opens (url::kMaxURLChars); the report shows an HTML result as a data: URL in an <iframe>
URL_LIMIT = 2 * 1024 * 1024

# a page that loads something from elsewhere: a script, style sheet, image or frame with a source outside the page
REMOTE = re.compile(r"""<(script|link|img|iframe)\b[^>]*\b(src|href)\s*=\s*["']?(https?:)?//""", re.I)

OFFLINE = "--host-resolver-rules=MAP * ~NOTFOUND"  # every host name resolves to nothing: no network


def _chromium() -> str:
    for name in ("chromium", "chromium-browser", "google-chrome"):
        path = shutil.which(name)
        if path:
            return path
    sys.exit("no Chromium found: apt-get install -y chromium")


# a headless Chromium on a loaded machine now and then hangs on a page it renders in seconds on the next try; a run
# that hangs every time yields no output, and the check that needed it fails
_TIMEOUT_S = 120
_ATTEMPTS = 2


def _run_chromium(chromium: str, url: str, *args: str, budget_ms: int) -> subprocess.CompletedProcess[str]:
    command = [
        chromium,
        "--headless",
        "--no-sandbox",
        "--disable-gpu",
        "--hide-scrollbars",
        f"--virtual-time-budget={budget_ms}",
        *args,
        url,
    ]
    for attempt in range(_ATTEMPTS):
        try:
            return subprocess.run(command, capture_output=True, text=True, timeout=_TIMEOUT_S, check=False)
        except subprocess.TimeoutExpired:
            print(f"      Chromium hung for {_TIMEOUT_S} s (attempt {attempt + 1} of {_ATTEMPTS}): {' '.join(args)}")
    return subprocess.CompletedProcess(command, returncode=-1, stdout="", stderr="timed out")


def _results_table(text: str) -> dict[str, dict]:
    match = re.search(r'<script id="results">\s*var results = (.*?);\s*</script>', text, re.S)
    if not match:
        raise SystemExit("no `var results = ...` in the report: not a Snakemake 8+ report?")
    return json.loads(match.group(1))


def _decode(data_uri: str) -> tuple[str, bytes]:
    header, _, payload = data_uri.partition(",")
    mime = header.removeprefix("data:").split(";")[0]
    return mime, base64.b64decode(payload) if ";base64" in header else payload.encode()


def _png_size(data: bytes) -> tuple[int, int] | None:
    if data[:8] != b"\x89PNG\r\n\x1a\n" or data[12:16] != b"IHDR":
        return None
    return struct.unpack(">II", data[16:24])


class Checks:
    """Collects named checks; prints each as it is made."""

    def __init__(self) -> None:
        self.failed: list[str] = []

    def check(self, ok: bool, what: str) -> None:
        print(f"  [{'ok' if ok else 'FAIL'}] {what}")
        if not ok:
            self.failed.append(what)


def design_pages(results: dict[str, dict]) -> list[str]:
    """The interactive design-space pages among the results."""
    html_results = [p for p, r in results.items() if r.get("mime_type") == "text/html"]
    return [p for p in html_results if b'id="design-space"' in _decode(results[p]["data_uri"])[1]]


def static_checks(results: dict[str, dict], checks: Checks) -> tuple[list[str], list[str]]:
    """Data URIs, image headers, captions and agreement pages; returns (image paths, agreement pages)."""
    images = [p for p, r in results.items() if (r.get("mime_type") or "").startswith("image/")]
    pages = [p for p in results if p.endswith("agreement.html")]
    by_kind: dict[str, int] = {}
    for entry in results.values():
        by_kind[entry.get("mime_type") or "?"] = by_kind.get(entry.get("mime_type") or "?", 0) + 1
    print("results in the report: " + ", ".join(f"{n} {kind}" for kind, n in sorted(by_kind.items())))
    not_embedded = [p for p, r in results.items() if not str(r.get("data_uri", "")).startswith("data:")]
    embedded = len(results) - len(not_embedded)
    checks.check(not not_embedded, f"every result is embedded as a data URI ({embedded} of {len(results)})")
    bad = []
    for path in images:
        mime, data = _decode(results[path]["data_uri"])
        size = _png_size(data) if mime == "image/png" else ((1, 1) if b"<svg" in data[:2000] else None)
        if not size or min(size) == 0:
            bad.append(path)
    decoded = len(images) - len(bad)
    checks.check(not bad and bool(images), f"{decoded} of {len(images)} figures decode to an image with a size {bad or ''}")
    no_caption = [p for p, r in results.items() if not re.sub(r"<[^>]+>", "", r.get("caption") or "").strip()]
    checks.check(not no_caption, f"every result has a caption {no_caption or ''}")
    raw_jinja = [p for p, r in results.items() if "{{" in (r.get("caption") or "") or "{%" in (r.get("caption") or "")]
    checks.check(not raw_jinja, f"no caption holds unrendered Jinja {raw_jinja or ''}")
    without_config = [p for p, r in results.items() if "This run" not in (r.get("caption") or "")]
    stating = len(results) - len(without_config)
    stated = f"{stating} of {len(results)} captions state this run's config values {without_config or ''}"
    checks.check(not without_config, stated)
    naming = [p for p in images if re.search(r"(Figure|Table) \w+", results[p].get("caption") or "")]
    checks.check(len(naming) == len(images), f"{len(naming)} of {len(images)} figure captions name a paper figure or table")
    html_results = [p for p, r in results.items() if r.get("mime_type") == "text/html"]
    too_long = [f"{p} ({len(results[p]['data_uri']):,})" for p in html_results if len(results[p]["data_uri"]) > URL_LIMIT]
    checks.check(not too_long, f"every HTML result's data: URL fits Chromium's {URL_LIMIT:,} characters {too_long or ''}")
    remote = [p for p in html_results if REMOTE.search(_decode(results[p]["data_uri"])[1].decode("utf-8"))]
    checks.check(not remote, f"no HTML result loads a script, style, image or frame from elsewhere {remote or ''}")
    for page in pages:
        _, data = _decode(results[page]["data_uri"])
        rows = ROW_CLASS.findall(data.decode("utf-8"))
        summary = re.search(r"<b>(\d+ of \d+ claims agree[^<]*)</b>", data.decode("utf-8"))
        counts = {kind: rows.count(kind) for kind in ("agree", "disagree", "unchecked")}
        agree = summary.group(1) if summary else "no summary line"
        checks.check(bool(rows) and summary is not None, f"{page}: {agree}; rows coloured {counts}")
    return images, pages


def _probe_page(text: str, folder: Path, show: str | None, *, extra: str = "") -> str:
    """A copy of the report with the probe (and ``extra``) appended, showing ``show`` (None: the opening page);
    returns its file URL."""
    end = text.rfind("</body>")  # the last one: bundled scripts hold "</body>" in strings
    page = folder / f"probe{abs(hash(show))}.html"
    page.write_text(text[:end] + extra + PROBE.replace("SHOW_PATH", json.dumps(show)) + text[end:], encoding="utf-8")
    return page.as_uri()


def _with_page_probe(text: str, data_uri: str, probe: str) -> str | None:
    """The report with one HTML result's data URI replaced by the same page plus ``probe``; None if absent."""
    if text.count(data_uri) != 1:
        return None
    mime, data = _decode(data_uri)
    page = data.decode("utf-8")
    end = page.rfind("</body>")
    probed = (page[:end] + probe + page[end:]).encode("utf-8")
    return text.replace(data_uri, f"data:{mime};charset=utf-8;base64,{base64.b64encode(probed).decode()}")


def table_checks(
    text: str, results: dict[str, dict], pages: list[str], checks: Checks, *, chromium: str, folder: Path, budget_ms: int
) -> None:
    """Each agreement page shown in the report's view at :data:`TABLE_WINDOW`: its table whole, none of it cropped."""
    for page in pages:
        probed = _with_page_probe(text, results[page]["data_uri"], TABLE_PROBE)
        if probed is None:
            checks.check(False, f"{page}: its data URI is in the report once (to add the table probe to)")
            continue
        url = _probe_page(probed, folder, page, extra=TABLE_LISTENER)
        dom = _run_chromium(chromium, url, "--dump-dom", f"--window-size={TABLE_WINDOW}", budget_ms=budget_ms).stdout
        found = re.search(r'<pre id="bench-table-result"[^>]*>(.*?)</pre>', dom, re.S)
        if not found:
            checks.check(False, f"{page}: the table probe reported from the report's view")
            continue
        size = json.loads(html.unescape(found.group(1)))
        whole = 0 < size["tableWidth"] <= size["frameWidth"] and size["scrollWidth"] <= size["frameWidth"]
        measured = f"table {size['tableWidth']} px (page {size['scrollWidth']} px) in a {size['frameWidth']} px frame"
        checks.check(whole, f"{page}: the table is whole in the report at a {TABLE_WINDOW} window: {measured}")
        print(f"      tallest row: {size['tallestRow']} px")


def design_checks(
    text: str, results: dict[str, dict], pages: list[str], checks: Checks, *, chromium: str, folder: Path, budget_ms: int
) -> str | None:
    """Each design-space page shown in the report's view with no network: hovered, clicked twice, filtered.

    Returns the probe copy of the report showing the page of the most points (for its screenshot), or None.
    """
    first, most = None, -1
    for page in pages:
        probed = _with_page_probe(text, results[page]["data_uri"], DESIGN_PROBE)
        if probed is None:
            checks.check(False, f"{page}: its data URI is in the report once (to add the design probe to)")
            continue
        url = _probe_page(probed, folder, page, extra=TABLE_LISTENER)
        dom = _run_chromium(chromium, url, "--dump-dom", f"--window-size={TABLE_WINDOW}", OFFLINE, budget_ms=budget_ms).stdout
        found = re.search(r'<pre id="bench-design-result"[^>]*>(.*?)</pre>', dom, re.S)
        posted = json.loads(html.unescape(found.group(1))) if found else {}
        if posted.get("points", 0) > most:
            first, most = url, posted.get("points", 0)
        checks.check(bool(posted.get("ready")), f"{page}: drawn offline in the report's view ({posted.get('points', 0)} points)")
        if not posted.get("ready"):
            continue
        hovered = posted["hovered"]
        named = posted["named"]
        checks.check(bool(named), f"{page}: hovering point {hovered} shows a tooltip naming its config_id {named}")
        print(f"      tooltip: {posted['tooltip'][:120]}")
        checks.check(posted["compared"] == 2, f"{page}: clicking two points tabulates both ({posted['compared']} of 2 named)")
        filtered = posted["filtered"]
        if filtered is not None:
            fewer = 0 < filtered["points"] < posted["points"]
            checks.check(fewer, f"{page}: {filtered['parameter']} = {filtered['value']} leaves {filtered['points']} points")
    return first


def browser_checks(
    text: str,
    results: dict[str, dict],
    images: list[str],
    pages: list[str],
    checks: Checks,
    *,
    out: Path,
    show: str,
    budget_ms: int,
    docs: Path | None = None,
) -> None:
    """Load the report in headless Chromium: decode every figure, show one figure, every agreement page and every
    design-space page, screenshot them (and the opening page too, with ``docs``)."""
    chromium = _chromium()
    out.mkdir(parents=True, exist_ok=True)
    version = subprocess.run([chromium, "--version"], capture_output=True, text=True, check=False).stdout.strip()
    print(f"in Chromium ({version}):")
    with tempfile.TemporaryDirectory() as tmp:
        url = _probe_page(text, Path(tmp), show)
        dom = _run_chromium(chromium, url, "--dump-dom", budget_ms=budget_ms).stdout
        verdict = re.search(r'<pre id="bench-probe-result"[^>]*>(.*?)</pre>', dom, re.S)
        loaded = json.loads(html.unescape(verdict.group(1))) if verdict else []
        good = [item for item in loaded if item["ok"]]
        checks.check(bool(verdict), "the probe ran in the page (its verdict is in the dumped DOM)")
        decoded = f"{len(good)} of {len(images)} figures decoded by Chromium (naturalWidth > 0)"
        checks.check(len(good) == len(images) and bool(images), decoded)
        for item in loaded:
            print(f"      {item['width']:>5} x {item['height']:<5} {'ok' if item['ok'] else 'BROKEN'}  {item['path']}")
        shown = re.findall(r'<img[^>]+src="data:image/[^"]{100,}', dom)
        checks.check(bool(shown), f"the report's own view shows the figure as <img src=data:image/...> ({len(shown)} in the DOM)")
        menu = [name for name in ("MONET", "MTrain", "TM-Training") if f">{name}<" in dom]
        checks.check(bool(menu), f"the report's app rendered its menu (categories in the DOM: {', '.join(menu) or 'none'})")
        shot = out / "report.png"
        _run_chromium(chromium, url, f"--screenshot={shot}", "--window-size=1600,1000", budget_ms=budget_ms)
        checks.check(shot.is_file() and shot.stat().st_size > 10_000, f"screenshot {shot}")
        if pages:
            url = _probe_page(text, Path(tmp), pages[-1])
            dom = _run_chromium(chromium, url, "--dump-dom", budget_ms=budget_ms).stdout
            framed = re.findall(r'<iframe[^>]+src="data:text/html[^"]{100,}', dom)
            checks.check(bool(framed), f"the report shows {pages[-1]} in its own view (<iframe src=data:text/html...>)")
            shot = out / "report_agreement.png"
            _run_chromium(chromium, url, f"--screenshot={shot}", f"--window-size={TABLE_WINDOW}", budget_ms=budget_ms)
            checks.check(shot.is_file() and shot.stat().st_size > 10_000, f"screenshot {shot}")
        table_checks(text, results, pages, checks, chromium=chromium, folder=Path(tmp), budget_ms=budget_ms)
        designs = design_pages(results)
        checks.check(bool(designs), f"the report holds interactive design-space pages ({len(designs)})")
        url = design_checks(text, results, designs, checks, chromium=chromium, folder=Path(tmp), budget_ms=budget_ms)
        if url:
            shot = out / "report_design_space.png"
            _run_chromium(chromium, url, f"--screenshot={shot}", "--window-size=1600,1000", OFFLINE, budget_ms=budget_ms)
            checks.check(shot.is_file() and shot.stat().st_size > 10_000, f"screenshot {shot}")
        if docs is not None:
            shot = out / "report_start.png"
            start = _probe_page(text, Path(tmp), None)
            _run_chromium(chromium, start, f"--screenshot={shot}", "--window-size=1600,1000", budget_ms=budget_ms)
            write_docs_screenshots(out, docs)


# the screenshots the README shows, in the order it shows them: (file in --out, file in --docs)
DOCS_SCREENSHOTS = (
    ("report_start.png", "report_start.png"),
    ("report.png", "report_figure.png"),
    ("report_agreement.png", "report_agreement.png"),
    ("report_design_space.png", "report_design_space.png"),
)


def write_docs_screenshots(out: Path, docs: Path, *, width: int = 1000, colors: int = 128) -> None:
    """The screenshots of ``out`` as small PNGs in ``docs``: ``width`` pixels wide, a palette of ``colors``."""
    from PIL import Image  # noqa: PLC0415 (matplotlib's dependency, needed only with --docs: the checks need no package)

    docs.mkdir(parents=True, exist_ok=True)
    for name, target in DOCS_SCREENSHOTS:
        with Image.open(out / name) as shot:
            small = shot.convert("RGB").resize((width, round(shot.height * width / shot.width)), Image.Resampling.LANCZOS)
        small.quantize(colors=colors, method=Image.Quantize.FASTOCTREE).save(docs / target, optimize=True)
        print(f"      {docs / target}: {(docs / target).stat().st_size / 1e3:.0f} kB")


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("report", type=Path, help="the report HTML (snakemake --report results/report.html)")
    parser.add_argument("--out", type=Path, default=Path("results/report_check"), help="folder for the screenshots")
    parser.add_argument("--show", default="", help="result path to show in the screenshot (default: the first figure)")
    parser.add_argument("--budget-ms", type=int, default=20000, help="Chromium's virtual time budget")
    parser.add_argument("--docs", type=Path, help="also write small screenshots for the README here (docs/screenshots)")
    args = parser.parse_args()
    text = args.report.read_text(encoding="utf-8")
    checks = Checks()
    print(f"{args.report} ({args.report.stat().st_size / 1e6:.1f} MB)")
    print("static checks:")
    results = _results_table(text)
    images, pages = static_checks(results, checks)
    browser_checks(text, results, images, pages, checks, out=args.out, show=args.show, budget_ms=args.budget_ms, docs=args.docs)
    if checks.failed:
        print(f"{len(checks.failed)} check(s) failed")
        sys.exit(1)
    print("all checks passed")


if __name__ == "__main__":
    main()
