"""`synth report`'s HTML page as a browser shows it (issue 22, item 7): headless Chromium (Debian's
`chromium`, installed by scripts/install-system-packages.sh) lays the page out at a desktop and a
narrow width and must not need a horizontal scroll bar for the page itself (wide tables scroll in
their own box), and every figure must decode and show drawn pixels. The figures' pixels are then
read back here: each series' colour covers more than a legend entry would, so its data was drawn.

Skipped only on a machine without Chromium outside CI; under CI=true a missing Chromium fails.
"""

import base64
import contextlib
import io
import json
import os
import re
import shutil
import signal
import subprocess
from html.parser import HTMLParser

import matplotlib.colors
import matplotlib.image
import numpy as np
import pytest

from synth.cli import main

CHROMIUM = shutil.which("chromium") or shutil.which("chromium-browser")
if CHROMIUM is None and not os.environ.get("CI"):
    pytest.skip("headless Chromium is not installed (scripts/install-system-packages.sh installs it)",
                allow_module_level=True)

NETWORK = "dragonfly:2,4,2"
PATTERNS = ["randperm:1", "randperm:2", "a2a-lin"]  # one phase (bars), two (grouped bars), 72 (panels)
ROUTERS = {"minimal": "minimal", "valiant": "valiant", "ugal": "ugal", "minimal-random": "minimal-random",
           "valiant-any": "valiant-any"}
COLLECTIVES = ["allreduce", "alltoall"]  # alltoall's table has more columns than a narrow page is wide
WIDTHS = (1280, 720)
BROWSER_SECONDS = 120  # one Chromium run: a page load takes about a second here

# Runs in the page after it loaded (images included): the page's widths, the elements that stick out
# of the viewport (for the message), and per image what the browser decoded and drew.
PROBE = """
<script>
window.addEventListener("load", () => {
  const width = window.innerWidth;
  const out = {innerWidth: width, scrollWidth: document.documentElement.scrollWidth,
               bodyScrollWidth: document.body.scrollWidth, outside: [], images: []};
  const clips = (e) => {  // an ancestor inside the viewport that scrolls or hides what sticks out of it
    for (let a = e.parentElement; a && a !== document.body; a = a.parentElement)
      if (getComputedStyle(a).overflowX !== "visible" && a.getBoundingClientRect().right <= width + 0.5) return true;
    return false;
  };
  for (const e of document.body.querySelectorAll("*")) {
    const box = e.getBoundingClientRect();
    if (box.right > width + 0.5 && !clips(e)) out.outside.push(e.tagName + " to " + Math.round(box.right) + " px");
  }
  for (const img of document.images) {
    const canvas = document.createElement("canvas");
    canvas.width = img.naturalWidth; canvas.height = img.naturalHeight;
    const context = canvas.getContext("2d");
    let drawn = 0;
    if (img.naturalWidth > 0) {
      context.drawImage(img, 0, 0);
      const data = context.getImageData(0, 0, canvas.width, canvas.height).data;
      for (let i = 0; i < data.length; i += 4)
        if (data[i + 3] > 0 && (data[i] < 250 || data[i + 1] < 250 || data[i + 2] < 250)) drawn++;
    }
    const box = img.getBoundingClientRect();
    out.images.push({alt: img.alt, complete: img.complete, naturalWidth: img.naturalWidth,
                     naturalHeight: img.naturalHeight, shownWidth: box.width, right: box.right, drawn: drawn});
  }
  const pre = document.createElement("pre");
  pre.id = "synth-probe";
  pre.textContent = JSON.stringify(out);
  document.body.appendChild(pre);
});
</script>
"""


def cli(*argv):
    out, err = io.StringIO(), io.StringIO()
    with contextlib.redirect_stdout(out), contextlib.redirect_stderr(err):
        code = main([str(a) for a in argv])
    return code, out.getvalue(), err.getvalue()


def chromium_probe(page, width, profile) -> dict:
    """The probe's result for `page` laid out `width` CSS pixels wide."""
    assert CHROMIUM is not None, ("CI is set but chromium is missing: `make install` runs "
                                  "scripts/install-system-packages.sh")
    probe = page.with_name(page.stem + "-probe.html")
    text = page.read_text()
    probe.write_text(text.replace("</body>", PROBE + "</body>"))
    command = [CHROMIUM, "--headless", "--no-sandbox", "--disable-gpu", "--disable-quic", "--no-first-run",
               "--disable-background-networking", "--disable-component-update", "--disable-sync",
               "--disable-extensions", "--hide-scrollbars", f"--user-data-dir={profile}",
               f"--window-size={width},900", "--dump-dom", probe.as_uri()]
    # Its own process group: Chromium's helper processes share the output pipes, and a timeout
    # that killed only the browser would leave communicate() waiting on them.
    with subprocess.Popen(command, stdin=subprocess.DEVNULL, stdout=subprocess.PIPE, stderr=subprocess.PIPE,
                          text=True, start_new_session=True) as browser:
        try:
            stdout, stderr = browser.communicate(timeout=BROWSER_SECONDS)
        except subprocess.TimeoutExpired:
            os.killpg(browser.pid, signal.SIGKILL)
            browser.communicate()
            pytest.fail(f"chromium did not finish the page within {BROWSER_SECONDS} s")
        finally:
            with contextlib.suppress(ProcessLookupError):
                os.killpg(browser.pid, signal.SIGKILL)  # a helper left behind
    match = re.search(r'<pre id="synth-probe">(.*?)</pre>', stdout, re.S)
    assert match, f"chromium exited {browser.returncode} without the probe's result: {stderr[-2000:]}"
    return json.loads(match.group(1).replace("&quot;", '"').replace("&lt;", "<").replace("&gt;", ">")
                      .replace("&amp;", "&"))


@pytest.fixture(scope="module")
def page(tmp_path_factory):
    directory = tmp_path_factory.mktemp("browser")
    out = directory / "r.html"
    code, _, err = cli("report", NETWORK, "--patterns", ",".join(PATTERNS), "--routers", ",".join(ROUTERS),
                       "--collectives", ",".join(COLLECTIVES), "--collective-bytes", "1KiB..1MiB", "--out", out,
                       "--quiet")
    assert code == 0, err
    return out


@pytest.mark.parametrize("width", WIDTHS)
def test_page_does_not_overflow_and_every_figure_is_drawn(page, tmp_path, width):
    result = chromium_probe(page, width, tmp_path / "profile")
    assert result["innerWidth"] == width
    assert result["scrollWidth"] <= width and result["bodyScrollWidth"] <= width, result["outside"][:10]
    assert result["outside"] == []
    images = result["images"]
    assert [i["alt"].rsplit(": ", 1)[0] for i in images] == (["Estimated exchange time per pattern and routing"]
                                                       + PATTERNS[:2] + ["LIN"] + COLLECTIVES)
    for image in images:
        assert image["complete"] and image["naturalWidth"] > 400 and image["naturalHeight"] > 200, image
        assert image["shownWidth"] <= width and image["right"] <= width, image  # scaled into the page
        # A figure of axes, ticks and labels alone has a few thousand dark pixels; data makes it more.
        assert image["drawn"] > 0.04 * image["naturalWidth"] * image["naturalHeight"], image


class Images(HTMLParser):
    def __init__(self):
        super().__init__()
        self.images = []

    def handle_starttag(self, tag, attrs):
        if tag == "img":
            self.images.append(dict(attrs))


def colour_pixels(pixels, colour, coverage=0.6) -> int:
    """Pixels of `colour` over white covering at least `coverage` of the pixel: on the segment from
    white to the colour (an antialiased line's edge blends the two), at least that far along it."""
    ink = 1.0 - np.array(matplotlib.colors.to_rgb(colour))
    seen = 1.0 - pixels[:, :, :3].astype(np.float64)
    along = seen @ ink / (ink @ ink)
    off = np.linalg.norm(seen - along[:, :, None] * ink, axis=2)
    return int(((along >= coverage) & (along <= 1.05) & (off <= 0.04)).sum())


def test_every_series_is_drawn_in_its_colour(page):
    """Bars and per-routing panels: each series' colour covers more pixels than its legend entry
    (a line about 20 px long and a marker: under 100) or a tick label would, so the bars and lines
    themselves were drawn. A collective's curves may lie on one another (two algorithms of equal
    cost): each colour shows at least in the legend, and together they cover what their curves
    across the plot do."""
    from synth.report.styles import styles_for

    parser = Images()
    parser.feed(page.read_text())
    figures = {image["alt"].rsplit(": ", 1)[0]: image["src"] for image in parser.images}
    routings = list(ROUTERS.values())
    expected = {"Estimated exchange time per pattern and routing": routings, "randperm:1": routings,
                "randperm:2": routings, "LIN": routings}
    assert set(expected) | set(COLLECTIVES) == set(figures)
    for alt, src in figures.items():
        prefix, data = src.split(",", 1)
        assert prefix == "data:image/png;base64"
        pixels = matplotlib.image.imread(io.BytesIO(base64.b64decode(data)), format="png")
        names = expected.get(alt)
        if names is not None:
            for name, style in zip(names, styles_for(names)):
                assert colour_pixels(pixels, style.colour) > 300, (alt, name, style)
            continue
        table = page.read_text().split(f"<h2>Collective: {alt}</h2>")[1].split("</tr>")[0]
        names = re.findall(r"<th>([^<]+)</th>", table)[1:-2]  # its algorithms: the columns between bytes and bound, best
        assert len(names) >= 3, alt
        counts = {style.colour: colour_pixels(pixels, style.colour) for style in styles_for(names)}
        assert min(counts.values()) >= 30 and sum(counts.values()) > 300 * len(counts), (alt, counts)
