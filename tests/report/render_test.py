#!/usr/bin/env python3
"""Renders `hetrain report` output in headless Chromium and fails if a plot is
missing, empty, or not drawn.

1. `hetrain report` on the fixture runs (real metrics files, equal vs adaptive).
2. Chromium loads a copy of the page with a probe script appended (the report
   itself has no script) that, after layout, writes onto each <svg class="plot">
   its rendered size and how many of its data elements (lines, markers, bars)
   have a non-empty bounding box; --dump-dom hands the result back.
3. Chromium takes a screenshot of the page itself; its pixels are decoded here
   and must not be blank.

Chromium is required: without it this test fails and says how to install it.
"""
import argparse
import html.parser
import os
import shutil
import struct
import subprocess
import sys
import tempfile
import zlib

EXPECTED_PLOTS = ["compare-time", "compare-efficiency", "compare-accuracy"] + [
    f"{kind}-{k}" for k in (0, 1) for kind in ("split", "timeline", "time", "loss", "accuracy")]
WINDOW = (1400, 2400)            # px, the screenshot's size
MIN_INK_FRACTION = 0.01          # a blank page has none; the report has several % of coloured pixels
CHROMIUM_TIMEOUT_S = 120         # a headless start takes seconds; a hang must not block CI

# The machine's network is closed: without these Chromium retries background
# connections and can fail to start (see the environment notes).
CHROMIUM_FLAGS = ["--headless", "--no-sandbox", "--disable-gpu", "--disable-quic", "--no-first-run",
                  "--disable-background-networking", "--disable-component-update", "--disable-sync",
                  "--hide-scrollbars", "--force-device-scale-factor=1"]

PROBE = """<script>
for (const svg of document.querySelectorAll('svg.plot')) {
  const box = svg.getBoundingClientRect();
  let drawn = 0;
  for (const el of svg.querySelectorAll('.data')) {
    const b = el.getBBox();
    if ((b.width > 0 || b.height > 0) && getComputedStyle(el).display !== 'none') drawn++;
  }
  svg.setAttribute('data-drawn', drawn);
  svg.setAttribute('data-width', Math.round(box.width));
  svg.setAttribute('data-height', Math.round(box.height));
}
document.body.setAttribute('data-probe', 'done');
</script>"""


def fail(msg):
    print(f"render_test: FAIL: {msg}", file=sys.stderr)
    sys.exit(1)


def chromium_binary():
    for name in (os.environ.get("CHROMIUM", ""), "chromium", "chromium-browser"):
        if name and shutil.which(name):
            return shutil.which(name)
    fail("chromium not found: install Debian's chromium package (scripts/setup.sh --test does), "
         "or point CHROMIUM at the binary")


def chromium(binary, profile, args):
    cmd = [binary, *CHROMIUM_FLAGS, f"--user-data-dir={profile}", *args]
    try:
        p = subprocess.run(cmd, capture_output=True, text=True, timeout=CHROMIUM_TIMEOUT_S)
    except subprocess.TimeoutExpired:
        fail(f"chromium did not finish in {CHROMIUM_TIMEOUT_S} s: {' '.join(cmd)}")
    if p.returncode != 0:
        fail(f"chromium exited {p.returncode}: {p.stderr.strip()[-2000:]}")
    return p.stdout


class PlotParser(html.parser.HTMLParser):
    def __init__(self):
        super().__init__()
        self.plots, self.probe_done = {}, False

    def handle_starttag(self, tag, attrs):
        a = dict(attrs)
        if tag == "svg" and "plot" in (a.get("class") or "").split():
            self.plots[a.get("id")] = a
        if tag == "body" and a.get("data-probe") == "done":
            self.probe_done = True


def png_ink_fraction(path):
    """Fraction of pixels that are not (near) white, for 8-bit RGB(A) PNGs."""
    data = open(path, "rb").read()
    if data[:8] != b"\x89PNG\r\n\x1a\n":
        fail(f"{path} is not a PNG")
    pos, idat, header = 8, b"", None
    while pos < len(data):
        length, kind = struct.unpack(">I4s", data[pos:pos + 8])
        body = data[pos + 8:pos + 8 + length]
        if kind == b"IHDR":
            header = struct.unpack(">IIBBBBB", body)
        elif kind == b"IDAT":
            idat += body
        pos += 12 + length
    width, height, depth, color, _, _, interlace = header
    if depth != 8 or color not in (2, 6) or interlace:
        fail(f"{path}: unexpected PNG format (depth {depth}, colour type {color}, interlace {interlace})")
    bpp = 3 if color == 2 else 4
    raw, stride = zlib.decompress(idat), width * bpp
    prev, ink, i = bytearray(stride), 0, 0
    for _ in range(height):
        ftype, line = raw[i], bytearray(raw[i + 1:i + 1 + stride])
        i += 1 + stride
        for x in range(stride):  # undo the PNG row filter
            a = line[x - bpp] if x >= bpp else 0
            b, c = prev[x], prev[x - bpp] if x >= bpp else 0
            if ftype == 1: line[x] = (line[x] + a) & 255
            elif ftype == 2: line[x] = (line[x] + b) & 255
            elif ftype == 3: line[x] = (line[x] + (a + b) // 2) & 255
            elif ftype == 4:
                p = a + b - c
                pa, pb, pc = abs(p - a), abs(p - b), abs(p - c)
                line[x] = (line[x] + (a if pa <= pb and pa <= pc else b if pb <= pc else c)) & 255
        ink += sum(1 for x in range(0, stride, bpp) if min(line[x], line[x + 1], line[x + 2]) < 200)
        prev = line
    return (width, height), ink / float(width * height)


def main():
    ap = argparse.ArgumentParser(description=__doc__)
    ap.add_argument("--hetrain", required=True)
    ap.add_argument("--fixtures", required=True, help="folder with equal.json and adaptive.json")
    ap.add_argument("--work", required=True, help="scratch folder (the report and screenshot stay there)")
    args = ap.parse_args()
    binary = chromium_binary()
    os.makedirs(args.work, exist_ok=True)
    report = os.path.join(args.work, "report.html")
    runs = [os.path.join(args.fixtures, f"{p}.json") for p in ("equal", "adaptive")]
    p = subprocess.run([args.hetrain, "report", *runs, "-o", report], capture_output=True, text=True)
    if p.returncode != 0:
        fail(f"hetrain report exited {p.returncode}: {p.stderr.strip()}")

    probe = os.path.join(args.work, "probe.html")
    page = open(report, encoding="utf-8").read()
    if "</body>" not in page:
        fail("the report has no </body>")
    open(probe, "w", encoding="utf-8").write(page.replace("</body>", PROBE + "\n</body>"))
    with tempfile.TemporaryDirectory() as profile:
        dom = chromium(binary, profile, ["--dump-dom", "file://" + os.path.abspath(probe)])
    parser = PlotParser()
    parser.feed(dom)
    if not parser.probe_done:
        fail("the probe script did not run in Chromium: nothing was measured")
    problems = []
    for pid in EXPECTED_PLOTS:
        a = parser.plots.get(pid)
        if a is None:
            problems.append(f"plot {pid} is missing")
        elif int(a.get("data-drawn", 0)) <= 0:
            problems.append(f"plot {pid} has no drawn data elements")
        elif int(a.get("data-width", 0)) <= 0 or int(a.get("data-height", 0)) <= 0:
            problems.append(f"plot {pid} renders with no size ({a.get('data-width')}x{a.get('data-height')})")
    if problems:
        fail("; ".join(problems))

    shot = os.path.join(args.work, "report.png")
    if os.path.exists(shot):
        os.remove(shot)
    with tempfile.TemporaryDirectory() as profile:
        chromium(binary, profile, [f"--screenshot={shot}", f"--window-size={WINDOW[0]},{WINDOW[1]}",
                                   "file://" + os.path.abspath(report)])
    if not os.path.exists(shot):
        fail("chromium wrote no screenshot")
    size, ink = png_ink_fraction(shot)
    if size != WINDOW:
        fail(f"screenshot is {size[0]}x{size[1]}, expected {WINDOW[0]}x{WINDOW[1]}")
    if ink < MIN_INK_FRACTION:
        fail(f"screenshot is blank: {ink:.4f} of pixels drawn (< {MIN_INK_FRACTION})")
    drawn = ", ".join(f"{pid}={parser.plots[pid]['data-drawn']}" for pid in EXPECTED_PLOTS)
    print(f"render_test: ok: {len(EXPECTED_PLOTS)} plots drawn ({drawn}); screenshot {shot}, "
          f"{ink:.3f} of pixels drawn")


if __name__ == "__main__":
    main()
