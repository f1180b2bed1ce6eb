"""The report's two renderings of one list of blocks: report.html, self-contained (its charts inline as
data URIs, so that it opens anywhere offline), and report.md, its charts as PNG files beside it.

A block is (kind, content): "h2", "h3", "p" and "facts" hold text, "warn" a list of warnings,
"table" a DataFrame (a cell may hold a why.Link or a list of them) and "chart" a Chart.
"""
from __future__ import annotations

import base64
import html
import io
from dataclasses import dataclass
from typing import TYPE_CHECKING

from orchestrator import lazy
from orchestrator.report.why import Link

pd = lazy.module("pandas")
if TYPE_CHECKING:
    from matplotlib.figure import Figure


@dataclass
class Chart:
    name: str    # the PNG's file name beside report.md
    title: str
    png: bytes


def png(fig: Figure) -> bytes:
    buf = io.BytesIO()
    fig.savefig(buf, format="png")
    return buf.getvalue()


CSS = ("body{font-family:system-ui,sans-serif;max-width:1100px;margin:2em auto;padding:0 1em;color:#222}\n"
       "table{border-collapse:collapse;margin:.5em 0 1.5em;font-size:13px}"
       "th,td{border:1px solid #ccc;padding:3px 8px;\n"
       "text-align:left}th{background:#f3f3f3}td.fail{color:#c62828}td.flag{color:#8a6d00;background:#fff8e1}\n"
       ".warn{background:#fff8e1;border-left:4px solid #f0b400;padding:4px 8px;margin:4px 0;font-size:13px}"
       ".warn ul{margin:2px 0}\n"
       ".facts{color:#555;font-size:14px}img{max-width:100%;display:block;margin:1em 0}")


def _links(value) -> list[Link] | None:
    """A cell of links (flame graphs) as a list of them; None for any other cell."""
    if isinstance(value, Link):
        return [value]
    return value if isinstance(value, list) and all(isinstance(v, Link) for v in value) else None


def _td(value) -> str:
    links = _links(value)
    if links is not None:
        return "<td>" + " ".join(f'<a href="{html.escape(a.href)}">{html.escape(a.text)}</a>' for a in links) + "</td>"
    text = "" if value is None or (not isinstance(value, str) and pd.isna(value)) else str(value)
    css = ' class="fail"' if "✗" in text else ' class="flag"' if "⚠" in text else ""
    return f"<td{css}>{html.escape(text)}</td>"


def to_html(run_id: str, blocks: list[tuple]) -> str:
    out = [f"<!doctype html><html lang=en><head><meta charset=utf-8><title>Run {run_id}</title>"
           f"<style>{CSS}</style></head><body><h1>Run {html.escape(run_id)}</h1>"]
    for kind, content in blocks:
        if kind == "table":
            head = "".join(f"<th>{html.escape(str(c))}</th>" for c in content.columns)
            body = "".join("<tr>" + "".join(_td(v) for v in row) + "</tr>" for row in content.itertuples(index=False))
            out.append(f"<table><thead><tr>{head}</tr></thead><tbody>{body}</tbody></table>")
        elif kind == "warn":
            items = "".join(f"<li>{html.escape(w)}</li>" for w in content)
            out.append(f'<div class="warn">warnings of the run (they may have skewed it):<ul>{items}</ul></div>')
        elif kind == "chart":
            data = base64.b64encode(content.png).decode()
            out.append(f'<img alt="{html.escape(content.title)}" src="data:image/png;base64,{data}">')
        else:
            tag, css = {"p": ("p", ""), "facts": ("p", ' class="facts"'), "h2": ("h2", ""), "h3": ("h3", "")}[kind]
            out.append(f"<{tag}{css}>{html.escape(content)}</{tag}>")
    return "\n".join(out + ["</body></html>"])


def _md_cell(value) -> str:
    links = _links(value)
    if links is not None:
        return " ".join(f"[{a.text}]({a.href.replace(' ', '%20')})" for a in links)
    text = "" if value is None or (not isinstance(value, str) and pd.isna(value)) else str(value)
    return text.replace("|", "\\|").replace("\n", " ")


def to_markdown(run_id: str, blocks: list[tuple]) -> str:
    out = [f"# Run {run_id}"]
    for kind, content in blocks:
        if kind == "table":
            out.append("| " + " | ".join(_md_cell(c) for c in content.columns) + " |")
            out.append("|" + "---|" * len(content.columns))
            out += ["| " + " | ".join(_md_cell(v) for v in row) + " |" for row in content.itertuples(index=False)]
        elif kind == "chart":
            out.append(f"![{content.title}]({content.name})")
        elif kind == "warn":
            out += ["> warnings of the run (they may have skewed it):", *[f"> - {w}" for w in content]]
        else:
            out.append({"p": "{}", "facts": "{}", "h2": "## {}", "h3": "### {}"}[kind].format(content))
        out.append("")
    return "\n".join(out)
