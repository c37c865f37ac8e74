"""Export a graph slice without a server: JSON, GraphML, GEXF, or one self-contained HTML page.

- **json**: the `GraphSlice` as is (graphology's serialized graph: ``Graph.from(json)``).
- **graphml** / **gexf**: through networkx's writers; attributes those formats cannot hold
  are adapted (a list is joined with commas, a missing value left out).
- **html**: the web app's standalone viewer (``service/static/viewer.html``, built by
  ``make web``) with its scripts, style sheets and the files they name inlined and the graph
  in its ``<script type="application/json" id="ukr-graph">``, so the page opens from disk
  with no server and no network (`inline_viewer`).

`export_slice` picks what to export: a label's neighbourhood, an answer's trace, or the
whole graph. Not here: the CLI (``ukr graph export``).
"""

from __future__ import annotations

import base64
import html
import json
import mimetypes
import re
from collections.abc import Sequence
from pathlib import Path
from typing import TYPE_CHECKING, Any, Literal

from pydantic import ValidationError

from unified_kg_rag.domain.models import RAGOutput
from unified_kg_rag.retrieval.graph_view.models import GraphKind, GraphSlice, TraceSource
from unified_kg_rag.retrieval.graph_view.view import WHOLE_GRAPH
from unified_kg_rag.util.errors import ConfigurationError, NotFoundError, UsageError

if TYPE_CHECKING:
    import networkx as nx

    from unified_kg_rag.retrieval.graph_view.reader import GraphReader

__all__ = [
    "EXPORT_FORMATS",
    "GRAPH_SCRIPT_ID",
    "NO_VIEWER",
    "STATIC_DIR",
    "ExportFormat",
    "embed_json",
    "export_slice",
    "inline_viewer",
    "read_trace",
    "to_networkx",
    "viewer_page",
    "write_export",
]

ExportFormat = Literal["json", "graphml", "gexf", "html"]
EXPORT_FORMATS: tuple[ExportFormat, ...] = ("json", "graphml", "gexf", "html")
"""The formats `write_export` writes."""

STATIC_DIR = Path(__file__).resolve().parents[2] / "service" / "static"
"""The web app's built bundle (``make web``), where ``viewer.html`` and its assets are."""

GRAPH_SCRIPT_ID = "ukr-graph"
"""The id of the viewer's ``<script type="application/json">`` that holds the graph."""

NO_VIEWER = "the web bundle has no viewer (make web)"
"""The error when ``viewer.html`` is missing from the bundle."""

_JSON_ESCAPES = {ord("<"): "\\u003c", ord(">"): "\\u003e", ord("&"): "\\u0026",
                 0x2028: "\\u2028", 0x2029: "\\u2029"}  # fmt: skip
_TAG = re.compile(
    r"<script\b(?P<sattrs>[^>]*)>(?P<body>.*?)</script\s*>|<link\b(?P<lattrs>[^>]*?)/?>",
    re.S | re.I,
)
_ATTR = re.compile(r"""([^\s"'>/=]+)(\s*=\s*(?:"([^"]*)"|'([^']*)'|([^\s"'=<>`]+)))?""")
_CSS_URL = re.compile(r"""url\(\s*(['"]?)([^'")]+)\1\s*\)""", re.I)
_REMOTE = re.compile(r"^(?:[a-z][a-z0-9+.-]*:|//)", re.I)


async def export_slice(
    reader: GraphReader,
    *,
    graph: GraphKind | None = None,
    label: str | None = None,
    max_depth: int | None = None,
    max_nodes: int | None = None,
    trace: Sequence[TraceSource] | None = None,
) -> GraphSlice:
    """Return the slice to export: an answer's trace, a label's neighbourhood, or the graph.

    Args:
        reader: the index's graph reader.
        graph: which graph (None: the entity graph when held, else the concept graph).
        label: the centre node's label or id (None: the whole graph, or the trace).
        max_depth: hops around the centre (default 2) or the traced nodes (default 1).
        max_nodes: the node cap (default 200 with a label or a trace; all nodes otherwise).
        trace: an answer's sources (`read_trace`); exclusive with ``label``.

    Raises:
        UsageError: both ``label`` and ``trace`` were given.
        NotFoundError: no node has that label or id.
        MethodologyNotIndexedError: the index holds no such graph.
        StoreError: a store failed.
    """
    if trace is not None and label is not None:
        raise UsageError("--trace draws an answer's trace; --label a node's neighbourhood: "
                         "give one of them", field="--label")  # fmt: skip
    if trace is not None:
        return await reader.trace(trace, graph=graph, max_nodes=max_nodes or 200,
                                  max_depth=1 if max_depth is None else max_depth)  # fmt: skip
    if label is not None:
        try:
            return await reader.slice(label, graph=graph, max_nodes=max_nodes or 200,
                                      max_depth=2 if max_depth is None else max_depth)
        except NotFoundError as exc:  # the reader's hint names the HTTP route
            raise NotFoundError(
                f"--label {label!r}: no node of index {reader.stores.name!r} has that label or "
                "id (`ukr graph stats` lists the most connected nodes)", kind=exc.kind,
                key=label,
            ) from None  # fmt: skip
    view = await reader.view(graph)
    return await reader.slice(WHOLE_GRAPH, graph=view.kind, max_depth=0,
                              max_nodes=max_nodes or max(len(view.ids), 1))  # fmt: skip


def read_trace(path: Path) -> tuple[str, list[TraceSource]]:
    """Read the output of ``ukr query --json``: ``(its index, its sources as trace sources)``.

    Raises:
        UsageError: the file is missing or unreadable, not JSON, not a query output, or
            its answer has no sources (field ``--trace``).
    """
    try:
        text = path.read_text(encoding="utf-8")
    except FileNotFoundError:
        raise UsageError(f"{path}: no such file", field="--trace") from None
    except (OSError, UnicodeDecodeError) as exc:
        raise UsageError(f"{path}: cannot read it ({type(exc).__name__})",
                         field="--trace") from None  # fmt: skip
    try:
        data = json.loads(text)
    except json.JSONDecodeError as exc:
        raise UsageError(f"{path}: not JSON ({exc.msg}, line {exc.lineno})",
                         field="--trace") from None  # fmt: skip
    try:
        output = RAGOutput.model_validate(data)
    except ValidationError:
        raise UsageError(f"{path}: not the output of `ukr query --json` (it needs "
                         "question, answer, strategy, index and sources)",
                         field="--trace") from None  # fmt: skip
    if not output.sources:
        raise UsageError(f"{path}: the answer has no sources to trace", field="--trace")
    sources = [TraceSource(n=s.n, kind=s.kind, id=s.id, text_unit_ids=list(s.text_unit_ids))
               for s in output.sources]  # fmt: skip
    return output.index, sources


def write_export(piece: GraphSlice, fmt: ExportFormat, path: Path) -> None:
    """Write ``piece`` to ``path`` as ``fmt`` (see the module's doc for each format).

    Raises:
        ConfigurationError: ``html`` and the web bundle has no viewer.
        OSError: the file cannot be written.
    """
    if fmt == "json":
        path.write_text(piece.model_dump_json(indent=2) + "\n", encoding="utf-8")
    elif fmt == "html":
        path.write_text(viewer_page(piece), encoding="utf-8")
    else:
        import networkx as nx

        graph = to_networkx(piece)
        if fmt == "graphml":
            nx.write_graphml(graph, path, edge_id_from_attribute="id")
        else:
            nx.write_gexf(graph, path)


def to_networkx(piece: GraphSlice) -> nx.Graph:
    """Return ``piece`` as a networkx graph with flat attributes (GraphML/GEXF can hold).

    Entity graphs become a ``MultiDiGraph`` (edge keys: relationship ids), concept graphs a
    ``Graph``. Each edge has an ``id`` attribute; lists are joined with commas and missing
    values left out; graph attributes keep only scalars.
    """
    import networkx as nx

    graph: nx.Graph = (nx.MultiDiGraph() if piece.options.type == "directed"
                            and piece.options.multi else nx.Graph())  # fmt: skip
    graph.graph.update(_flat(piece.attributes.model_dump(exclude={"communities", "notes"})))
    for node in piece.nodes:
        graph.add_node(node.key, **_flat(node.attributes.model_dump()))
    for edge in piece.edges:
        attrs = {"id": edge.key, **_flat(edge.attributes.model_dump())}
        if isinstance(graph, nx.MultiGraph):
            graph.add_edge(edge.source, edge.target, key=edge.key, **attrs)
        else:
            graph.add_edge(edge.source, edge.target, **attrs)
    return graph


def _flat(attrs: dict[str, Any]) -> dict[str, str | int | float | bool]:
    out: dict[str, str | int | float | bool] = {}
    for key, value in attrs.items():
        if isinstance(value, list | tuple):
            out[key] = ",".join(str(v) for v in value)
        elif isinstance(value, str | int | float | bool):
            out[key] = value
    return out


def viewer_page(piece: GraphSlice, static_dir: Path | None = None) -> str:
    """Return the standalone viewer with ``piece`` and every asset inlined (one file).

    Args:
        piece: the graph to show.
        static_dir: the built bundle (default: the package's `STATIC_DIR`).

    Raises:
        ConfigurationError: the bundle has no ``viewer.html``, or it loads something that
            cannot be inlined (a remote URL, a file outside the bundle or missing).
    """
    folder = static_dir or STATIC_DIR
    page = folder / "viewer.html"
    if not page.is_file():
        raise ConfigurationError(NO_VIEWER)
    return inline_viewer(page.read_text(encoding="utf-8"), folder,
                         piece.model_dump_json())  # fmt: skip


def embed_json(text: str) -> str:
    r"""Return JSON text safe inside an HTML ``<script>``: ``< > &`` U+2028 U+2029 as ``\uXXXX``.

    Those characters only occur inside JSON strings, where the escapes mean the same, so
    the result parses to the same value and holds no ``</script>``.
    """
    return text.translate(_JSON_ESCAPES)


def inline_viewer(page: str, static_dir: Path, graph_json: str) -> str:
    """Return ``page`` with its assets inlined and ``graph_json`` in the graph script.

    One pass over the page's ``<script>`` and ``<link>`` tags (what is inserted is not
    scanned again): ``<script src=X>`` becomes the script X inline (same attributes, no
    ``src``; ``</script`` in it escaped), ``<link rel=stylesheet href=Y>`` a ``<style>`` with
    Y (its ``url(...)`` files as ``data:`` URIs), ``<link rel=modulepreload>`` (a loading
    hint) is dropped, another link to a bundle file (an icon) gets a ``data:`` URI, and the
    ``<script id="ukr-graph">`` holds the graph (`embed_json`). Assets resolve in
    ``static_dir`` (``/assets/x.js``, ``./assets/x.js`` and ``assets/x.js`` alike).

    Raises:
        ConfigurationError: the page has no graph script, or loads a remote URL or a file
            missing from (or outside) ``static_dir``.
    """
    found = False

    def tag(match: re.Match[str]) -> str:
        nonlocal found
        if match.group("lattrs") is not None:
            return _link(match.group(0), _attrs(match.group("lattrs")), static_dir)
        raw_attrs = match.group("sattrs")
        attrs = _attrs(raw_attrs)
        if attrs.get("id") == GRAPH_SCRIPT_ID:
            found = True
            return f"<script{raw_attrs}>{embed_json(graph_json)}</script>"
        src = attrs.get("src")
        if src is None:
            return match.group(0)
        code = _asset(src, static_dir).read_text(encoding="utf-8")
        code = re.sub(r"</(script)", r"<\\/\1", code, flags=re.I).replace("<!--", "<\\!--")
        kept = "".join(f" {k}" if v is None else f' {k}="{html.escape(v)}"'
                       for k, v in attrs.items() if k not in ("src", "crossorigin"))  # fmt: skip
        return f"<script{kept}>{code}</script>"

    out = _TAG.sub(tag, page)
    if not found:
        raise ConfigurationError(f'the viewer has no <script id="{GRAPH_SCRIPT_ID}"> to hold '
                                 "the graph (make web)")  # fmt: skip
    return out


def _attrs(text: str) -> dict[str, str | None]:
    out: dict[str, str | None] = {}
    for name, equals, dq, sq, bare in _ATTR.findall(text):
        out[name.lower()] = html.unescape(dq or sq or bare) if equals else None
    return out


def _link(raw: str, attrs: dict[str, str | None], static_dir: Path) -> str:
    rel = (attrs.get("rel") or "").lower().split()
    href = attrs.get("href")
    if not href or href.startswith(("data:", "#")):
        return raw
    if "modulepreload" in rel or "preload" in rel or "prefetch" in rel:
        return ""
    path = _asset(href, static_dir)
    if "stylesheet" in rel:
        css = _inline_css(path.read_text(encoding="utf-8"), path.parent, static_dir)
        return "<style>" + re.sub(r"</(style)", r"<\\/\1", css, flags=re.I) + "</style>"
    return raw.replace(_href_text(raw), _data_uri(path), 1)


def _href_text(raw: str) -> str:
    match = re.search(r"""href\s*=\s*("[^"]*"|'[^']*'|[^\s>]+)""", raw, re.I)
    assert match is not None  # the caller found an href
    return match.group(1).strip("'\"")


def _inline_css(css: str, base: Path, static_dir: Path) -> str:
    def url(match: re.Match[str]) -> str:
        ref = match.group(2).strip()
        if ref.startswith(("data:", "#")):
            return match.group(0)
        path = _asset(ref, static_dir, base=base)
        return f'url("{_data_uri(path)}")'

    return _CSS_URL.sub(url, css)


def _asset(ref: str, static_dir: Path, *, base: Path | None = None) -> Path:
    if _REMOTE.match(ref):
        raise ConfigurationError(f"the viewer loads {ref!r} from the network; a standalone "
                                 "page cannot (make web)")  # fmt: skip
    clean = ref.split("?", 1)[0].split("#", 1)[0]
    root = static_dir.resolve()
    path = ((root / clean.lstrip("/")) if clean.startswith("/") or base is None
            else base / clean).resolve()  # fmt: skip
    if not path.is_relative_to(root) or not path.is_file():
        raise ConfigurationError(f"the viewer names {ref!r}, which the web bundle does not "
                                 "hold (make web)")  # fmt: skip
    return path


def _data_uri(path: Path) -> str:
    kind = mimetypes.guess_type(path.name)[0] or "application/octet-stream"
    return f"data:{kind};base64,{base64.b64encode(path.read_bytes()).decode('ascii')}"
