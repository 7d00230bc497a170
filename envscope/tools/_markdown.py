"""``--format markdown``: ``explain``, ``diff`` and ``check-spawns`` for ``$GITHUB_STEP_SUMMARY``.

The same rows the text tables print (``_report.explain_parts``,
``_report.diff_parts``, the check's sites), as GitHub-flavoured markdown: a
heading, one table, the summary. Every cell is text from files others may
write (a key of a profile's ``.env``), so it is made printable and each
character markdown or HTML would act on is escaped: a key never becomes a
link, an image, a tag or a second column.
"""

from __future__ import annotations

import re
from collections.abc import Callable, Mapping, Sequence
from typing import Any

from envscope.tools._report import (
    KEYS_DIFFER_NOTE,
    DiffEntry,
    JsonDict,
    diff_parts,
    explain_parts,
    printable,
)

__all__ = ["diff_markdown", "explain_markdown", "md_text", "spawn_sites_markdown"]

# What markdown or HTML acts on inside a table cell, a heading's text or a list item's:
# emphasis, code, links and images, tags and entities, strikethrough, a column break.
_SPECIAL = re.compile(r"([\\`*_\[\]<>|~&])")


def md_text(text: str) -> str:
    """``text`` as literal markdown: printable, each markdown or HTML character escaped."""
    return _SPECIAL.sub(r"\\\1", printable(text))


def _table(rows: Sequence[Sequence[str]]) -> list[str]:
    header, *body = rows
    lines = ["| " + " | ".join(md_text(cell) for cell in header) + " |"]
    lines.append("|" + "|".join(" --- " for _ in header) + "|")
    lines.extend("| " + " | ".join(md_text(cell) for cell in row) + " |" for row in body)
    return lines


def explain_markdown(
    snapshot: JsonDict,
    *,
    values: Mapping[str, str] | None = None,
    is_tier1: Callable[[str], bool] = lambda _key: True,
    shown: Callable[[str, Mapping[str, Any]], bool] | None = None,
) -> str:
    """``explain`` as a heading, a table of every decision shown, and the summary."""
    title, rows, footer = explain_parts(snapshot, values=values, is_tier1=is_tier1, shown=shown)
    table = _table(rows) if len(rows) > 1 else ["(no key matches)"]
    return "\n".join([f"### {md_text(title)}", "", *table, "", *map(_item, footer)]) + "\n"


def _item(line: str) -> str:
    return f"- {md_text(line)}"


def diff_markdown(
    entries: Sequence[DiffEntry], labels: tuple[str, str], *, comparable: bool = True
) -> str:
    """``diff`` as a heading, the note when values cannot be compared, a table, the summary."""
    lines = [f"### {md_text(f'envscope diff: {labels[0]} → {labels[1]}')}", ""]
    if not comparable:
        lines += [f"> **note:** {md_text(KEYS_DIFFER_NOTE)}", ""]
    if not entries:
        return "\n".join([*lines, "no differences"]) + "\n"
    rows, summary = diff_parts(entries, labels)
    return "\n".join([*lines, *_table(rows), "", md_text(summary)]) + "\n"


def spawn_sites_markdown(
    sites: Sequence[Any], errors: Sequence[str], *, show_allowed: bool = False
) -> str:
    """``check-spawns`` as a heading, a table of the sites, the files not checked, a summary."""
    shown = [s for s in sites if show_allowed or not s.allowed]
    bypass = sum(1 for s in sites if not s.allowed)
    lines = ["### envscope check-spawns", ""]
    if shown:
        rows = [["WHERE", "CALL", "REASON"]]
        for s in shown:
            tail = " (allowed)" if s.allowed else ""
            rows.append([f"{s.path}:{s.line}:{s.col}", s.call, s.reason + tail])
        lines += [*_table(rows), ""]
    lines += [f"- not checked: {md_text(error)}" for error in errors]
    summary = f"{bypass} spawn site(s) bypass the factory ({len(sites) - bypass} allowed)"
    if errors:
        summary += f"; {len(errors)} file(s) could not be checked"
    return "\n".join([*lines, md_text(summary)]) + "\n"
