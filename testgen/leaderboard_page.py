"""The files of ``testgen leaderboard``: the table as Markdown, CSV and JSON, a plot of every
column's intervals, and one self-contained HTML page whose table sorts by any column on a click
(a few lines of inline script: no external script or stylesheet, so it works offline and as an
attachment). ``index.html#sort=KEY&dir=asc`` opens it sorted by that column."""

from __future__ import annotations

import csv
import html
import json
from collections.abc import Mapping, Sequence
from pathlib import Path
from typing import Any

from testgen.leaderboard_board import Board, ordered_rows

__all__ = ["write_board", "table_cells"]



def _pct(x: float | None) -> str:
    return "-" if x is None else f"{100 * x:.2f}"


def _cell(iv: Mapping[str, Any] | None) -> tuple[str, float | None]:
    """``est [low, high]`` with ``*`` (best) or ``≈`` (not significantly below the best), and the estimate."""
    if iv is None:
        return "-", None
    text = _pct(iv["estimate"])
    if iv.get("low") is not None:
        text += f" [{_pct(iv['low'])}, {_pct(iv['high'])}]"
    if iv.get("best"):
        text += " *"
    elif iv.get("vs_best") is not None and not iv["vs_best"]["significant"]:
        text += " ≈"
    return text, float(iv["estimate"])


def _delta(c: Mapping[str, Any] | None) -> tuple[str, float | None]:
    if c is None:
        return "-", None
    d = c["difference"]
    sign = "" if c["significant"] else " (n.s.)"
    return f"{100 * d['estimate']:+.2f} [{100 * d['low']:+.2f}, {100 * d['high']:+.2f}], p = {c['p_value']:.3g}{sign}", \
        float(d["estimate"])


def table_cells(board: Board, stats: Mapping[str, Any]) -> tuple[list[tuple[str, str]], list[list[tuple[str, Any]]]]:
    """``([(key, header)], rows of [(text, sort value)])``: rank, generator, every column, and the
    reranking's differences from the random pick and from the human tests."""
    header = [("rank", "rank"), ("generator", "generator")]
    header += [(c.key, c.title) for c in board.columns]
    rr = stats.get("rerank")
    if rr is not None:
        header.append(("rerank_vs_random", "rerank - random"))
        if rr["reference"]:
            header.append(("rerank_vs_reference", f"rerank - {rr['reference']}"))
    ranks = (stats.get("order") or {}).get("ranks", {})
    rows = []
    for i, r in enumerate(ordered_rows(board, stats)):
        rank = ranks.get(r)
        cells: list[tuple[str, Any]] = [
            (f"{i + 1}" + (f" ({rank['low']}-{rank['high']})" if rank and rank["low"] != rank["high"] else ""), i + 1),
            (r, r)]
        cells += [_cell(stats["columns"][c.key]["rows"].get(r)) for c in board.columns]
        if rr is not None:
            cells.append(_delta(rr["random"].get(r)))
            if rr["reference"]:
                cells.append(("(the reference)", None) if r == rr["reference"] else _delta(rr["vs_reference"].get(r)))
        rows.append(cells)
    return header, rows


def _notes(board: Board, stats: Mapping[str, Any], warning: str | None) -> list[str]:
    """The paragraphs under the table: tasks, marks, P's pairs and order, reranking baselines, columns."""
    rows = "row" if len(board.runs) == len(board.rows) else "row with a HumanEval run"
    lines = [f"**warning: {warning}.**" if warning else
             f"Every {rows} was scored on the same {len(board.compared):,} tasks."] if board.runs else []
    lines += [f"**warning: {w}.**" for w in board.warnings]
    lines.append("Cells: mean over tasks in percent [95% bootstrap interval over tasks]; `*` the column's best; "
                 f"`≈` not significantly below it (paired permutation test over tasks, p >= {stats['alpha']}); "
                 "unmarked: significantly below it; `-` not measured. Tests are per comparison, not corrected for "
                 "multiplicity. The rank's range is its 95% bootstrap range over tasks.")
    if any(c.unit != "tasks" for c in board.columns):
        lines.append("TestEval's columns (`TE ...`): the same over its programs (coverage) or targets (hits), "
                     "only those every row with the column has; `-` where the row has no such TestEval run.")
    order = stats.get("order")
    if order and order["resamples"]:
        same = [f"{p['a']} and {p['b']} (p = {p['p_value']:.3g})" for p in stats["pairs"] if not p["significant"]]
        lines.append(f"Order on P: the same in {100 * order['same_order']:.1f}% of {order['resamples']:,} bootstrap "
                     "resamples of the tasks; " + ("pairs not significantly different on P: " + "; ".join(same) + "."
                                                    if same else "every pair of rows differs significantly on P."))
    rr = stats.get("rerank")
    if rr is not None and rr["random_pass1"] is not None:
        lines.append(f"Reranking: the random pick of the same pool scores {_pct(rr['random_pass1'])}% pass@1; "
                     "`rerank - random` and `rerank - " + str(rr["reference"]) + "` are paired differences over "
                     "tasks (percentage points [95% interval], permutation p).")
    for c in board.columns:
        n = stats["columns"][c.key]["tasks"]
        what = c.help.rstrip(".")
        lines.append(f"`{c.title}`: {what} ({n:,} {c.unit})." if n else f"`{c.title}`: {what}.")
    return lines


def _markdown(header: Sequence[tuple[str, str]], rows: Sequence[Sequence[tuple[str, Any]]]) -> str:
    out = ["| " + " | ".join(h for _, h in header) + " |", "|" + "---|" * len(header)]
    out += ["| " + " | ".join(text for text, _ in r) + " |" for r in rows]
    return "\n".join(out) + "\n"


def _write_csv(board: Board, stats: Mapping[str, Any], path: Path) -> None:
    """One row per generator, every figure a number (fractions), with its interval and p against the best."""
    with open(path, "w", newline="", encoding="utf-8") as fh:
        w = csv.writer(fh)
        w.writerow(["generator", "tasks", *(f"{c.key}{end}" for c in board.columns
                                            for end in ("", "_ci95_low", "_ci95_high", "_p_vs_best", "_tasks"))])
        for r in ordered_rows(board, stats):
            cells: list[Any] = [r, len(board.compared) if r in board.runs else None]
            for c in board.columns:
                block = stats["columns"][c.key]
                iv = block["rows"].get(r) or {}
                vs = iv.get("vs_best") or {}
                cells += [iv.get("estimate"), iv.get("low"), iv.get("high"), vs.get("p_value"),
                          block["tasks"] if iv else None]
            w.writerow(cells)


_CSS = """body{font-family:sans-serif;margin:2em;max-width:1500px}table{border-collapse:collapse;margin:1em 0}
th,td{border:1px solid #bbb;padding:4px 8px;font-size:13px}th{background:#eee;cursor:pointer;user-select:none}
th[aria-sort=ascending]::after{content:" \\25B2"}th[aria-sort=descending]::after{content:" \\25BC"}
td{text-align:right;white-space:nowrap}td:nth-child(2){text-align:left}img{max-width:100%;border:1px solid #ddd}"""

_SCRIPT = """(function(){
const table=document.getElementById('board'), heads=[...table.tHead.rows[0].cells];
function value(cell){const v=cell.dataset.value;return v===undefined||v===''?null:(isNaN(Number(v))?v:Number(v));}
function sortBy(i,dir){const body=table.tBodies[0], rows=[...body.rows];
 rows.sort((a,b)=>{const x=value(a.cells[i]), y=value(b.cells[i]);
  if(x===null||y===null){return x===y?0:(x===null?1:-1);}
  const c=(typeof x==='number'&&typeof y==='number')?x-y:String(x).localeCompare(String(y));
  return dir==='asc'?c:-c;});
 rows.forEach(r=>body.appendChild(r));
 heads.forEach((h,j)=>{if(j===i){h.setAttribute('aria-sort',dir==='asc'?'ascending':'descending');}
  else{h.removeAttribute('aria-sort');}});}
heads.forEach((h,i)=>h.addEventListener('click',()=>{
 const now=h.getAttribute('aria-sort');sortBy(i,now==='descending'?'asc':(now==='ascending'?'desc':h.dataset.first));}));
const want=new URLSearchParams(location.hash.slice(1));
if(want.get('sort')){const i=heads.findIndex(h=>h.dataset.key===want.get('sort'));
 if(i>=0){sortBy(i,want.get('dir')==='asc'?'asc':'desc');}}
})();"""


def _inline(text: str) -> str:
    import re

    out = html.escape(text)
    out = re.sub(r"\*\*(.+?)\*\*", r"<b>\1</b>", out)
    return re.sub(r"`([^`]+)`", r"<code>\1</code>", out)


def _html(title: str, header: Sequence[tuple[str, str]], rows: Sequence[Sequence[tuple[str, Any]]],
          notes: Sequence[str], png: Path) -> str:
    import base64

    first = {"rank": "asc", "generator": "asc"}
    head = "".join(f'<th data-key="{html.escape(k)}" data-first="{first.get(k, "desc")}">{html.escape(h)}</th>'
                   for k, h in header)
    body = "".join("<tr>" + "".join(f'<td data-value="{"" if v is None else html.escape(str(v))}">'
                                    f"{html.escape(t)}</td>" for t, v in r) + "</tr>" for r in rows)
    img = ""
    if png.is_file():
        img = (f'<p><img alt="every column: means and 95% intervals per generator" '
               f'src="data:image/png;base64,{base64.b64encode(png.read_bytes()).decode()}"></p>')
    return (f'<!DOCTYPE html>\n<html lang="en"><head><meta charset="utf-8"><title>{html.escape(title)}</title>'
            f"<style>{_CSS}</style></head><body>\n<h1>{html.escape(title)}</h1>\n"
            f'<p>Click a column header to sort by it.</p>\n<table id="board"><thead><tr>{head}</tr></thead>'
            f"<tbody>{body}</tbody></table>\n" + "\n".join(f"<p>{_inline(n)}</p>" for n in notes)
            + f"\n{img}\n<script>{_SCRIPT}</script>\n</body></html>\n")


def write_board(board: Board, stats: Mapping[str, Any], out: Path, *, warning: str | None,
                title: str = "testgen leaderboard") -> None:
    """``leaderboard.md``, ``leaderboard.csv``, ``leaderboard.json``, ``leaderboard.png`` and ``index.html``."""
    from testgen.leaderboard_plot import plot_board

    header, rows = table_cells(board, stats)
    notes = _notes(board, stats, warning)
    table = _markdown(header, rows)
    (out / "leaderboard.md").write_text(f"# {title}\n\n{table}\n" + "\n\n".join(notes)
                                        + "\n\n![every column's intervals](leaderboard.png)\n", encoding="utf-8")
    _write_csv(board, stats, out / "leaderboard.csv")
    (out / "leaderboard.json").write_text(json.dumps({"rows": ordered_rows(board, stats), "compared_tasks":
                                                      len(board.compared), "left_out": board.left_out,
                                                      "testeval_runs": board.testeval,
                                                      "testeval_left_out": board.testeval_left_out,
                                                      "warnings": board.warnings, "statistics": stats}, indent=1)
                                          + "\n", encoding="utf-8")
    plot_board(board, stats, out / "leaderboard.png")
    (out / "index.html").write_text(_html(title, header, rows, notes, out / "leaderboard.png"), encoding="utf-8")
