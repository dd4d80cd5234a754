"""``testgen report``'s ``index.html``: its ``report.md`` as one self-contained page (headings,
paragraphs, the Markdown tables as tables, the plots embedded), so that the report opens in a
browser as a study's does."""

from __future__ import annotations

from pathlib import Path

__all__ = ["html_page"]

_CSS = """body{font-family:sans-serif;margin:2em;max-width:1400px}table{border-collapse:collapse;margin:1em 0}
th,td{border:1px solid #bbb;padding:4px 8px;font-size:13px}th{background:#eee}td{text-align:right}
td:first-child{text-align:left}img{max-width:100%;border:1px solid #ddd}"""


def _inline(text: str) -> str:
    import html
    import re

    out = html.escape(text)
    out = re.sub(r"\*\*(.+?)\*\*", r"<b>\1</b>", out)
    return re.sub(r"`([^`]+)`", r"<code>\1</code>", out)


def html_page(markdown: str, folder: Path, title: str) -> str:
    """``index.html``: ``report.md`` as one self-contained page (its tables as tables, its
    plots embedded), so that the report opens in a browser as a study's does."""
    import base64
    import html
    import re

    body: list[str] = []
    table: list[list[str]] = []

    def flush() -> None:
        if table:
            head, rows = table[0], [r for r in table[1:] if not all(set(c) <= set("-: ") for c in r)]
            body.append("<table><thead><tr>" + "".join(f"<th>{_inline(c)}</th>" for c in head) + "</tr></thead><tbody>"
                        + "".join("<tr>" + "".join(f"<td>{_inline(c)}</td>" for c in r) + "</tr>" for r in rows)
                        + "</tbody></table>")
            table.clear()

    for line in markdown.splitlines():
        if line.startswith("|"):
            table.append([c.strip() for c in line.strip().strip("|").split("|")])
            continue
        flush()
        image = re.fullmatch(r"!\[([^\]]*)\]\(([^)]+)\)", line.strip())
        if image and (folder / image.group(2)).is_file():
            data = base64.b64encode((folder / image.group(2)).read_bytes()).decode()
            body.append(f"<p><img alt=\"{html.escape(image.group(1))}\" src=\"data:image/png;base64,{data}\"></p>")
        elif line.startswith("#"):
            level = min(len(line) - len(line.lstrip("#")), 6)
            body.append(f"<h{level}>{_inline(line.lstrip('#').strip())}</h{level}>")
        elif line.strip():
            body.append(f"<p>{_inline(line)}</p>")
    flush()
    return (f"<!DOCTYPE html>\n<html lang=\"en\"><head><meta charset=\"utf-8\"><title>{html.escape(title)}</title>"
            f"<style>{_CSS}</style></head><body>\n" + "\n".join(body) + "\n</body></html>\n")
