"""Whether a study's report is whole: the banner of a report written while steps had failed, and
the mark put on an earlier report when a run of the study begins, so that no report passes for
complete when it is not (``docs/study.md``; ``tests/test_study_validation.py``).
"""

from __future__ import annotations

import html
from collections.abc import Mapping
from pathlib import Path

__all__ = ["INCOMPLETE", "OUT_OF_DATE", "incomplete_text", "mark_out_of_date", "html_banner"]

INCOMPLETE = "INCOMPLETE REPORT"
"""First words of the banner of a report written after steps failed."""
OUT_OF_DATE = "OUT OF DATE"
"""First words of the mark on a report whose study began another run that has not finished."""


def incomplete_text(failed: Mapping[str, str]) -> str:
    """The banner's text: how many steps failed, each with its reason, and what to do."""
    steps = "; ".join(f"{step}: {why}" for step, why in sorted(failed.items()))
    return (f"{INCOMPLETE}: {len(failed)} step(s) failed, so the cells they feed are missing or stale "
            f"({steps}). Run the same 'testgen study' command to retry them.")


def html_banner(text: str) -> str:
    """The banner as the first element of the HTML page."""
    return (f"<p class=\"incomplete\" style=\"background:#fdd;border:2px solid #c00;padding:8px;font-weight:bold\">"
            f"{html.escape(text)}</p>")


def mark_out_of_date(out: Path) -> bool:
    """Mark the report of the study folder ``out`` (if any) as out of date: ``done.json`` of the
    report step removed, a banner at the top of ``index.html`` and ``report.md``. Returns whether
    there was a report to mark."""
    dest = out / "report"
    (dest / "done.json").unlink(missing_ok=True)
    text = (f"{OUT_OF_DATE}: a run of this study began after this report was written and has not "
            "finished; the report is written again when it does.")
    marked = False
    page = dest / "index.html"
    if page.is_file():
        body = page.read_text(encoding="utf-8")
        if OUT_OF_DATE not in body:
            at = body.find("<body>")
            at = at + len("<body>") if at >= 0 else 0
            page.write_text(body[:at] + "\n" + html_banner(text) + body[at:], encoding="utf-8")
        marked = True
    md = dest / "report.md"
    if md.is_file():
        body = md.read_text(encoding="utf-8")
        if OUT_OF_DATE not in body:
            md.write_text(f"**{text}**\n\n" + body, encoding="utf-8")
        marked = True
    return marked
