"""The graph viewer in headless chromium on a synthetic graph (prints figures; issue 18).

The standalone viewer (``service/static/viewer.html``, built by ``make web``) is served from a
temporary folder with a synthetic graph embedded as ``<script id="ukr-graph">``: by default
5,000 nodes and 20,000 edges in 25 communities (most edges inside a community), every node
with a label, an entity type, a degree and a community, as a slice of the API would carry.
Chromium runs as the browser tests run it (headless, ``--disable-gpu``: WebGL on SwiftShader,
software rendering).

Figures:

1. *First draw*: ms from navigation start to sigma's first rendered frame (the canvas's
   ``data-drawn-at``), over ``--runs`` page loads: each run and the median.
2. *Frames while the layout runs*: the first ``LAYOUT_MS`` after the draw, ForceAtlas2 moving
   the nodes from its web worker: frame time p50/p95 and fps (requestAnimationFrame), and
   how many layout rounds reached the page (each is a redraw).
3. *Frames while panning*: after the layout stopped (``data-layout="done"``), the camera
   animated across the graph (and zoomed in and out) for ``--pan-s`` seconds: frame time
   p50/p95 and fps (target 30). Edges are hidden while the camera moves above 2,000 edges
   (canvas.tsx ``HIDE_EDGES_ABOVE``); ``--show-edges`` keeps them, to compare.
4. *Bundle*: each built file's size and gzipped size; the app's first load (index.html's
   script and stylesheet), the Graph view's lazy chunk, the viewer.

Usage:  python benchmarks/bench_web_graph.py [--nodes 5000] [--edges 20000] [--runs 3]
        [--pan-s 5]   (needs playwright and the system's chromium, as the browser tests)
"""

from __future__ import annotations

import argparse
import gzip
import random
import shutil
import statistics
import sys
import tempfile
from pathlib import Path
from typing import Any

ROOT = Path(__file__).resolve().parents[1]
sys.path.insert(0, str(ROOT))

from tests.service.conftest import chromium_binary  # noqa: E402
from tests.support.viewer import embed, serve  # noqa: E402

from unified_kg_rag.service.web import STATIC_DIR  # noqa: E402

LAYOUT_MS = 2500  # web/src/graph/canvas.tsx LAYOUT_MS; model.ts layoutTime: up to 4 times
TYPES = ("PERSON", "ORGANIZATION", "GEO", "EVENT", "CONCEPT")


def synthetic_graph(nodes: int, edges: int, communities: int, seed: int = 7) -> dict[str, Any]:
    """A graphology serialized graph: ``nodes`` nodes in ``communities`` groups, ``edges``
    distinct undirected edges, 80 % of them inside a community."""
    rng = random.Random(seed)
    group = [i % communities for i in range(nodes)]
    members: list[list[int]] = [[] for _ in range(communities)]
    for i, c in enumerate(group):
        members[c].append(i)
    seen: set[tuple[int, int]] = set()
    while len(seen) < edges:
        a = rng.randrange(nodes)
        b = rng.choice(members[group[a]]) if rng.random() < 0.8 else rng.randrange(nodes)
        if a != b:
            seen.add((min(a, b), max(a, b)))
    degree = [0] * nodes
    for a, b in seen:
        degree[a] += 1
        degree[b] += 1
    return {
        "attributes": {"index": "synthetic", "graph": "entities", "label": "synthetic graph",
                       "truncated": False},
        "options": {"type": "undirected", "multi": False, "allowSelfLoops": True},
        "nodes": [{"key": f"n{i}", "attributes": {
            "label": f"Entity {i}", "entity_type": TYPES[i % len(TYPES)], "degree": degree[i],
            "depth": 0, "community": f"c{group[i]}", "community_level": 0,
        }} for i in range(nodes)],
        "edges": [{"key": f"e{k}", "source": f"n{a}", "target": f"n{b}",
                   "attributes": {"weight": 1.0, "relation": "RELATED"}}
                  for k, (a, b) in enumerate(sorted(seen))],
    }  # fmt: skip


FRAMES_JS = """async ([ms, pan]) => {
  const box = document.querySelector('.graph-canvas');
  const sigma = box.sigma;
  const camera = sigma.getCamera();
  const times = [];
  let last = performance.now();
  let running = true;
  const tick = (t) => { times.push(t - last); last = t; if (running) requestAnimationFrame(tick); };
  requestAnimationFrame(tick);
  const end = performance.now() + ms;
  let step = 0;
  while (pan && performance.now() < end) {
    const a = step++ * 1.3;
    const target = {x: 0.5 + 0.35 * Math.cos(a), y: 0.5 + 0.35 * Math.sin(a),
                    ratio: step % 3 === 0 ? 0.4 : 1};
    await camera.animate(target, {duration: 500});
  }
  await new Promise((r) => setTimeout(r, Math.max(0, end - performance.now())));
  running = false;
  return times.slice(1);
}"""


ROUNDS_JS = """() => {
  window.__rounds = 0;
  document.querySelector('.graph-canvas').sigma.getGraph()
    .on('eachNodeAttributesUpdated', () => { window.__rounds += 1; });
}"""


def frame_figures(times: list[float]) -> str:
    if not times:
        return "no frames"
    ordered = sorted(times)
    p50 = statistics.median(ordered)
    p95 = ordered[min(len(ordered) - 1, int(0.95 * len(ordered)))]
    fps = 1000 * len(times) / sum(times)
    return f"{len(times)} frames, frame time p50 {p50:.1f} ms, p95 {p95:.1f} ms, {fps:.1f} fps"


def bundle_figures() -> list[str]:
    lines = []
    sizes = {}
    for path in sorted((STATIC_DIR / "assets").iterdir()):
        raw = path.read_bytes()
        sizes[path.name] = (len(raw), len(gzip.compress(raw, 9)))
        kb, gz = len(raw) / 1024, sizes[path.name][1] / 1024
        lines.append(f"  {path.name:32} {kb:8.1f} KB  gzip {gz:7.1f} KB")
    page = (STATIC_DIR / "index.html").read_text(encoding="utf-8")
    first = sum(g for name, (_, g) in sizes.items() if name in page)
    lazy = sum(g for name, (_, g) in sizes.items() if name.startswith("explorer-"))
    viewer = sum(g for name, (_, g) in sizes.items() if name.startswith("viewer-"))
    lines.append(f"  app first load {first / 1024:.1f} KB gzip; Graph view chunk "
                 f"{lazy / 1024:.1f} KB; app total {(first + lazy) / 1024:.1f} KB (target < 500); "
                 f"viewer {viewer / 1024:.1f} KB")  # fmt: skip
    return lines


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--nodes", type=int, default=5000)
    parser.add_argument("--edges", type=int, default=20000)
    parser.add_argument("--communities", type=int, default=25)
    parser.add_argument("--runs", type=int, default=3)
    parser.add_argument("--pan-s", type=float, default=5.0)
    parser.add_argument("--show-edges", action="store_true", help="draw edges while panning")
    args = parser.parse_args()

    from playwright.sync_api import sync_playwright

    executable = chromium_binary()
    if executable is None:
        sys.exit("no chromium binary (apt-get install chromium, or set UKR_CHROMIUM)")
    graph = synthetic_graph(args.nodes, args.edges, args.communities)
    with tempfile.TemporaryDirectory() as tmp:
        folder = Path(tmp)
        shutil.copytree(STATIC_DIR / "assets", folder / "assets")
        page_text = embed((STATIC_DIR / "viewer.html").read_text(encoding="utf-8"), graph)
        (folder / "viewer.html").write_text(page_text, encoding="utf-8")
        print(f"graph: {args.nodes} nodes, {args.edges} edges; page {len(page_text) / 1e6:.1f} MB")
        with serve(folder) as url, sync_playwright() as playwright:
            browser = playwright.chromium.launch(
                executable_path=executable, headless=True, args=["--no-sandbox", "--disable-gpu"])
            renderer = browser.new_page().evaluate(
                "() => { const gl = document.createElement('canvas').getContext('webgl');"
                " const d = gl && gl.getExtension('WEBGL_debug_renderer_info');"
                " return d ? gl.getParameter(d.UNMASKED_RENDERER_WEBGL) : String(!!gl); }"
            )
            print(f"WebGL renderer: {renderer}")
            draws = []
            for run in range(args.runs):
                page = browser.new_page(viewport={"width": 1280, "height": 900})
                page.goto(f"{url}/viewer.html")
                page.wait_for_selector(".graph-canvas[data-drawn]", timeout=120_000)
                drawn = int(page.get_attribute(".graph-canvas", "data-drawn-at") or 0)
                draws.append(drawn)
                if run == args.runs - 1:
                    page.evaluate(ROUNDS_JS)
                    layout = page.evaluate(FRAMES_JS, [LAYOUT_MS, False])
                    rounds = page.evaluate("() => window.__rounds")
                    page.wait_for_selector(".graph-canvas[data-layout=done]", timeout=60_000)
                    if args.show_edges:
                        page.evaluate("() => document.querySelector('.graph-canvas').sigma"
                                      ".setSetting('hideEdgesOnMove', false)")  # fmt: skip
                    pan = page.evaluate(FRAMES_JS, [int(args.pan_s * 1000), True])
                page.close()
            browser.close()
    runs = ", ".join(f"{d} ms" for d in draws)
    print(f"first draw: {runs}; median {statistics.median(draws):.0f} ms")
    print(f"while the layout runs (first {LAYOUT_MS} ms): {frame_figures(layout)}; "
          f"{rounds} layout rounds drawn")
    print(f"while panning ({args.pan_s:.0f} s): {frame_figures(pan)}")
    print("bundle:")
    print("\n".join(bundle_figures()))


if __name__ == "__main__":
    main()
