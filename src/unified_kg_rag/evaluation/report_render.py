"""The evaluation report as Markdown and as one self-contained HTML page.

What belongs here: markup only. The sections and tables come from
`evaluation.report_tables`, the figures from `evaluation.report_figures`.

The HTML page loads nothing: its style is inline, figures are SVG embedded as ``data:``
URIs (each its own document, so the element ids of two figures never clash), and a
Content-Security-Policy forbids any other source. Every string from the run is escaped with
`html.escape`. Colours follow the reader's light or dark preference. The Markdown file
links the figures as PNG files beside it (``report-figures/NAME.png``).
"""

from __future__ import annotations

import base64
import html
from collections.abc import Mapping, Sequence

from unified_kg_rag.evaluation.report_figures import Figure
from unified_kg_rag.evaluation.report_tables import Section, Table

__all__ = ["to_html", "to_markdown"]

_STYLE = """
:root{color-scheme:light dark;--fg:#1f2328;--bg:#fff;--muted:#59636e;--line:#d1d9e0;
--warn-bg:#fff8c5;--warn-fg:#4d2d00;--good:#1a7f37;--bad:#cf222e}
@media (prefers-color-scheme:dark){:root{--fg:#e6edf3;--bg:#0d1117;--muted:#9198a1;
--line:#3d444d;--warn-bg:#3b2e00;--warn-fg:#f2cc60;--good:#3fb950;--bad:#f85149}}
body{font:15px/1.5 system-ui,-apple-system,"Segoe UI",sans-serif;color:var(--fg);
background:var(--bg);margin:0}
main{max-width:80rem;margin:auto;padding:1rem 1.5rem 3rem}
h1{font-size:1.6rem}h2{font-size:1.25rem;border-bottom:1px solid var(--line);padding-bottom:.2rem}
.scroll{overflow-x:auto}
table{border-collapse:collapse;margin:.25rem 0 1.25rem;font-variant-numeric:tabular-nums}
caption{caption-side:top;text-align:left;font-weight:600;padding:.25rem 0}
th,td{border-bottom:1px solid var(--line);padding:.2rem .6rem;text-align:right;white-space:nowrap}
th{font-weight:600}th:first-child,td:first-child,.l{text-align:left}td.l{white-space:normal}
.warn{background:var(--warn-bg);color:var(--warn-fg);border-left:4px solid currentColor;
padding:.35rem .8rem;margin:.5rem 0}
.note{color:var(--muted)}
.better,.pass{color:var(--good)}.worse,.fail{color:var(--bad);font-weight:600}
figure{margin:1rem 0}figure img{max-width:100%;height:auto;background:#fff;border-radius:4px}
figcaption{color:var(--muted);font-size:.9em}
"""

_CSP = "default-src 'none'; img-src data:; style-src 'unsafe-inline'"

_CELL_CLASSES = (("▲", "better"), ("▼", "worse"), ("PASS", "pass"), ("FAIL", "fail"))


def to_markdown(
    title: str, sections: Sequence[Section], figures: Mapping[str, tuple[str, str]]
) -> str:
    """Render the report as Markdown.

    Args:
        title: the top heading.
        sections: the sections, in order.
        figures: figure name -> ``(title, relative PNG path)``; a section's figure missing
            here is left out.
    """
    out = [f"# {_md(title)}", ""]
    for section in sections:
        out += [f"## {_md(section.title)}", ""]
        for line in section.warnings:
            out += [f"> **Warning:** {_md(line)}", ""]
        for line in section.text:
            out += [_md(line), ""]
        for table in section.tables:
            out += _md_table(table)
        for name in section.figures:
            if name in figures:
                caption, path = figures[name]
                out += [f"![{_md(caption)}]({path})", ""]
    return "\n".join(out).rstrip() + "\n"


def _md(text: str) -> str:
    """Text safe in a Markdown line or table cell (no raw HTML, no cell breaks)."""
    text = " ".join(text.split())
    return text.replace("&", "&amp;").replace("<", "&lt;").replace("|", "\\|")


def _md_table(table: Table) -> list[str]:
    align = ["---" if table.aligned_left(n) else "---:" for n in range(len(table.header))]
    lines = [f"**{_md(table.caption)}**", "",
             "| " + " | ".join(_md(h) for h in table.header) + " |",
             "| " + " | ".join(align) + " |"]  # fmt: skip
    lines += ["| " + " | ".join(_md(c) for c in row) + " |" for row in table.rows]
    return [*lines, ""]


def to_html(title: str, sections: Sequence[Section], figures: Sequence[Figure]) -> str:
    """Render the report as one HTML page that needs no file and no network.

    Args:
        title: the page title and top heading.
        sections: the sections, in order.
        figures: the drawn figures; each is shown in the section naming it.
    """
    by_name = {f.name: f for f in figures}
    e = _esc
    parts = [
        "<!doctype html>",
        '<html lang="en"><head><meta charset="utf-8">',
        '<meta name="viewport" content="width=device-width, initial-scale=1">',
        f'<meta http-equiv="Content-Security-Policy" content="{_CSP}">',
        f"<title>{e(title)}</title><style>{_STYLE.strip()}</style></head>",
        f"<body><main><h1>{e(title)}</h1>",
    ]
    for section in sections:
        parts.append(f"<section><h2>{e(section.title)}</h2>")
        parts += [f'<p class="warn" role="alert"><strong>Warning:</strong> {e(w)}</p>'
                  for w in section.warnings]  # fmt: skip
        parts += [f'<p class="note">{e(line)}</p>' for line in section.text]
        parts += [_html_table(t) for t in section.tables]
        parts += [_html_figure(by_name[n]) for n in section.figures if n in by_name]
        parts.append("</section>")
    parts.append("</main></body></html>")
    return "\n".join(parts) + "\n"


def _esc(text: str) -> str:
    return html.escape(text, quote=True)


def _html_table(table: Table) -> str:
    head = "".join(f'<th scope="col"{_left(table, n)}>{_esc(h)}</th>'
                   for n, h in enumerate(table.header))  # fmt: skip
    body = []
    for row in table.rows:
        cells = [f'<th scope="row">{_esc(row[0])}</th>' if row else ""]
        cells += [_html_cell(c, _left(table, n)) for n, c in enumerate(row[1:], start=1)]
        body.append("<tr>" + "".join(cells) + "</tr>")
    caption = f"<caption>{_esc(table.caption)}</caption>"
    return (f'<div class="scroll"><table>{caption}<thead><tr>{head}</tr></thead>'
            f"<tbody>{''.join(body)}</tbody></table></div>")  # fmt: skip


def _left(table: Table, column: int) -> str:
    return ' class="l"' if column > 0 and table.aligned_left(column) else ""


def _html_cell(text: str, left: str) -> str:
    for prefix, cls in _CELL_CLASSES:
        if text.startswith(prefix) or text.endswith(f" {prefix}"):
            return f'<td class="{cls}{" l" if left else ""}">{_esc(text)}</td>'
    return f"<td{left}>{_esc(text)}</td>"


def _html_figure(figure: Figure) -> str:
    data = base64.b64encode(figure.svg).decode("ascii")
    alt = _esc(figure.title)
    return (f'<figure><img src="data:image/svg+xml;base64,{data}" alt="{alt}">'
            f"<figcaption>{alt}</figcaption></figure>")  # fmt: skip
