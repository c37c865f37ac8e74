"""A small stand-in for the web app's built standalone viewer (``service/static/viewer.html``).

The real page is built by ``make web``; tests of the HTML export write this one instead: a
module script, a style sheet naming a font, an icon, a preload hint and the graph script,
laid out as Vite lays out a build (``/assets/…``).
"""

from __future__ import annotations

from pathlib import Path

__all__ = ["SCRIPT", "STYLE", "write_fake_viewer"]

SCRIPT = 'const g = JSON.parse(document.getElementById("ukr-graph").textContent);\n' \
    'document.title = "</script> " + g.nodes.length;\n'
STYLE = "@font-face{font-family:x;src:url(./font.woff2)}body{color:#123}\n"

PAGE = """<!doctype html>
<html lang="en">
  <head>
    <meta charset="utf-8" />
    <title>ukr graph</title>
    <link rel="icon" href="/favicon.svg" />
    <script type="module" crossorigin src="/assets/viewer-abc123.js"></script>
    <link rel="modulepreload" crossorigin href="/assets/viewer-abc123.js">
    <link rel="stylesheet" crossorigin href="/assets/viewer-def456.css">
  </head>
  <body>
    <div id="app"></div>
    <script type="application/json" id="ukr-graph">null</script>
  </body>
</html>
"""


def write_fake_viewer(folder: Path) -> Path:
    """Write the fake bundle into ``folder`` (created); return ``folder``."""
    (folder / "assets").mkdir(parents=True, exist_ok=True)
    (folder / "viewer.html").write_text(PAGE, encoding="utf-8")
    (folder / "assets" / "viewer-abc123.js").write_text(SCRIPT, encoding="utf-8")
    (folder / "assets" / "viewer-def456.css").write_text(STYLE, encoding="utf-8")
    (folder / "assets" / "font.woff2").write_bytes(b"wOF2\x00fake")
    (folder / "favicon.svg").write_text('<svg xmlns="http://www.w3.org/2000/svg"/>',
                                        encoding="utf-8")  # fmt: skip
    return folder
