"""The generated pages of the tables: docs/catalog.md, credential-formats.md, injection-vectors.md.

``catalog.md`` lists, by category, every name the default catalog declares,
its tier, what it is and where that is documented, then the platform
prefixes of the gate rule, the global names and the network-trust family;
``credential-formats.md`` lists every credential format (issuer, prefix,
regex, checksum, provider, source, a fake example); ``injection-vectors.md``
lists every injection vector and redirecting name by category with its
platform and sources. A test fails when a page in docs/ differs from what
this module renders, so the pages are regenerated, never edited::

    python -m envscope.policy._catalog_doc            # rewrite the three pages
    python -m envscope.policy._catalog_doc --check    # exit 1 when one is stale
"""

from __future__ import annotations

import argparse
import sys
from collections.abc import Sequence
from pathlib import Path
from typing import TYPE_CHECKING

from envscope.policy._declarations import Tier
from envscope.policy.catalog import DEFAULT_CATALOG_NAME, VECTORS_NAME, Catalog

if TYPE_CHECKING:
    from collections.abc import Callable

    from envscope.policy.formats import FormatTable

__all__ = [
    "DOC_PATH",
    "FORMATS_DOC_PATH",
    "PAGES",
    "VECTORS_DOC_PATH",
    "main",
    "render",
    "render_formats",
    "render_vectors",
]

DOCS = Path(__file__).resolve().parents[2] / "docs"
DOC_PATH = DOCS / "catalog.md"
FORMATS_DOC_PATH = DOCS / "credential-formats.md"
VECTORS_DOC_PATH = DOCS / "injection-vectors.md"

_INTRO = """\
**The tier rule.** Tier 2 is what a credentialed child (a model CLI such as
claude, codex or gemini) legitimately needs: model-provider keys and base
URLs. Everything else the host holds for itself is Tier 1: no child ever
receives it, passthrough refuses it and the force prefix never unwraps to
it. Tier 2 names are stripped from every child that does not inherit
credentials. Names are matched case-insensitively; a name with `*` is a
glob over upper-cased names.
"""


def _cell(text: str) -> str:
    return text.replace("|", "\\|")


def _tier(tier: Tier) -> str:
    return f"Tier {tier.value}"


def render(catalog: Catalog, *, source: str = DEFAULT_CATALOG_NAME) -> str:
    """The Markdown page for ``catalog`` (deterministic: the same catalog, the same text)."""
    lines = [
        "# The default catalog",
        "",
        f"<!-- generated from {source} by `python -m envscope.policy._catalog_doc`;"
        " do not edit -->",
        "",
        _INTRO,
        "| category | tier | names | patterns |",
        "|---|---|---|---|",
    ]
    for cat in catalog.categories:
        names = sum(1 for e in cat.entries if not e.is_pattern)
        globs = len(cat.entries) - names
        lines.append(f"| [{cat.title}](#{cat.id}) | {_tier(cat.tier)} | {names} | {globs} |")
    for cat in catalog.categories:
        lines += [
            "",
            f'<a id="{cat.id}"></a>',
            "",
            f"## {cat.title} ({_tier(cat.tier)})",
            "",
            _cell(cat.about),
            "",
            "| name | tier | what it is | source |",
            "|---|---|---|---|",
        ]
        for e in cat.entries:
            about = e.about
            if e.examples:
                about += " (e.g. " + ", ".join(f"`{x}`" for x in e.examples) + ")"
            where = f"<{e.source}>" if e.source.startswith("https://") else e.source
            lines.append(f"| `{e.name}` | {_tier(cat.tier)} | {_cell(about)} | {_cell(where)} |")
    lines += [
        "",
        "## Injection vectors",
        "",
        "Names that make a child load or run other code, and the opt-in redirecting",
        "family, are a table of their own: [injection-vectors.md](injection-vectors.md).",
        "",
        "## Platform prefixes",
        "",
        "A launch authorization gate is a name under one of these prefixes (or a",
        "platform plugin's or an adapter's) with an allow token or a channel/user/chat",
        "setting (see concepts.md).",
        "",
        ", ".join(f"`{p}`" for p in sorted(catalog.platform_prefixes)),
        "",
        "## Global names",
        "",
        "Never launch residue: a routed child keeps the process's value.",
        "",
        ", ".join(f"`{n}`" for n in sorted(catalog.global_names)),
        "",
        "## Network trust",
        "",
        "Proxies and certificate authorities: how a child reaches the network and whom it",
        "trusts. Never launch residue, and forwarded to MCP children unless the host turns",
        "that off (`Host(mcp_network_trust=False)`, `mcp_network_trust: false` in",
        "envscope.yaml). Matched in any case; on POSIX `http_proxy` and `HTTP_PROXY` are",
        "two variables and both reach the child.",
        "",
        ", ".join(f"`{n}`" for n in sorted(catalog.network_trust)),
        "",
    ]
    return "\n".join(lines)


def render_vectors(catalog: Catalog, *, source: str = VECTORS_NAME) -> str:
    """The Markdown page of ``catalog``'s injection-vector table (deterministic)."""
    lines = [
        "# Injection vectors",
        "",
        f"<!-- generated from {source} by `python -m envscope.policy._catalog_doc`;"
        " do not edit -->",
        "",
        "Variables that make a child load or run other code. A build refuses any of",
        "them that it *introduces* (`extra`, a routed scope, an MCP env block, a",
        "surface `set`, a secret source's values); the launch process's own inherited",
        "values are kept (`explain` warns about them). A name with surrounding",
        "whitespace is the name it strips to. `PREFIX*` is a family (every name that",
        "starts with the prefix); names match in any case. The redirecting family is",
        "refused only by a host that opts in (`Host(refuse_redirecting=True)`,",
        "`refuse_redirecting: true` in envscope.yaml). `Host(allow_injection=[...])`",
        "lets named vectors through.",
        "",
        "| category | refused | names |",
        "|---|---|---|",
    ]
    for cat in catalog.vector_categories:
        when = "when the host opts in" if cat.opt_in else "always"
        lines.append(f"| [{cat.title}](#{cat.id}) | {when} | {len(cat.rows)} |")
    for cat in catalog.vector_categories:
        lines += ["", f'<a id="{cat.id}"></a>', "", f"## {cat.title}", "", _cell(cat.about), ""]
        lines += ["| name | platform | sources |", "|---|---|---|"]
        for row in cat.rows:
            where = ", ".join(f"[{k}]({catalog.vector_sources[k]})" for k in row.sources)
            lines.append(f"| `{row.name}` | {row.platform} | {where} |")
    lines.append("")
    return "\n".join(lines)


def render_formats(table: FormatTable, *, source: str | None = None) -> str:
    """The Markdown page of a credential-format table (deterministic)."""
    from envscope.policy.formats import FILTERS, FORMATS_SOURCE

    lines = [
        "# Credential formats",
        "",
        f"<!-- generated from {source or FORMATS_SOURCE} by"
        " `python -m envscope.policy._catalog_doc`; do not edit -->",
        "",
        "A value of one of these formats is a secret value for every child, whatever",
        "its name: stripped, traced `value-shape` with the format's name.",
        "Exceptions: the operator's MCP env block, a name in `known_safe`, a grant, and,",
        "on a child that inherits credentials, a model-provider format under a catalog",
        "name of its provider. A format is found anywhere in a value (a URL, `Bearer …`,",
        "quotes, a list); the character before its prefix and the one after its end are",
        "not token characters (`[A-Za-z0-9_-]`) unless the row says otherwise. Every",
        "example is fake: the real shape, never a real secret. What the table covers of",
        "gitleaks' and detect-secrets' default rules, rule by rule, and its false-positive",
        "figures: [format-coverage.md](format-coverage.md).",
        "",
        "A match a named filter takes is a stand-in, not a credential (`formats.FILTERS`):",
        "",
        *(f"- `{name}`: {what}" for name, what, _ in FILTERS),
        "",
        "| format | issuer | category | prefix | checksum | provider |",
        "|---|---|---|---|---|---|",
    ]
    for f in table.formats:
        check = f.checksum.value if f.checksum is not None else ""
        lines.append(
            f"| [{f.name}](#{f.name}) | {_cell(f.issuer)} | {f.category} | `{_code(f.prefix)}` "
            f"| {check} | {f.provider or ''} |"
        )
    for f in table.formats:
        lines += ["", f'<a id="{f.name}"></a>', "", f"## {f.name}", ""]
        lines.append(f"- issuer: {f.issuer}; category: {f.category}")
        lines.append(f"- source: <{f.source}>")
        lines.append(f"- regex: `{_code(f.regex)}`")
        if f.checksum is not None:
            lines.append(f"- checksum: {f.checksum.value}")
        if f.provider is not None:
            lines.append(f"- provider: {f.provider} (kept under its names by a credentialed child)")
        if f.cross_checks:
            lines.append("- cross-checked with: " + ", ".join(f"`{c}`" for c in f.cross_checks))
        lines.append(f"- example (fake): `{_code(f.example)}`")
    lines.append("")
    return "\n".join(lines)


def _code(text: str) -> str:
    """Text for an inline code span in a table: no backtick, no pipe, no newline."""
    return text.replace("\n", "\\n").replace("|", "\\|").replace("`", "'")


def _formats_page() -> str:
    from envscope.policy.formats import format_table

    return render_formats(format_table())


PAGES: dict[str, tuple[Path, Callable[[], str]]] = {
    "catalog": (DOC_PATH, lambda: render(Catalog.default())),
    "credential-formats": (FORMATS_DOC_PATH, _formats_page),
    "injection-vectors": (VECTORS_DOC_PATH, lambda: render_vectors(Catalog.default())),
}


def main(argv: Sequence[str] | None = None) -> int:
    """Write (or ``--check``) the generated pages; exit 1 when ``--check`` finds one stale."""
    parser = argparse.ArgumentParser(prog="python -m envscope.policy._catalog_doc")
    parser.add_argument("--check", action="store_true", help="exit 1 when a page is stale")
    parser.add_argument("--page", choices=sorted(PAGES), help="one page (default: all three)")
    parser.add_argument("--output", type=Path, help="where to write the page (one page only)")
    args = parser.parse_args(argv)
    names = [args.page or "catalog"] if args.output or args.page else sorted(PAGES)
    status = 0
    for name in names:
        default, make = PAGES[name]
        output = args.output or default
        text = make()
        if args.check:
            try:
                current = output.read_text(encoding="utf-8")
            except OSError:
                current = None
            if current != text:
                print(
                    f"{output}: stale; run python -m envscope.policy._catalog_doc", file=sys.stderr
                )
                status = 1
            continue
        output.write_text(text, encoding="utf-8")
        print(f"wrote {output}")
    return status


if __name__ == "__main__":  # pragma: no cover - the command line
    raise SystemExit(main())
