"""docs/catalog.md, generated from the default catalog (``python -m envscope.policy._catalog_doc``).

The page lists, by category, every name the default catalog declares, its
tier, what it is and where that is documented, then the injection vectors,
the platform prefixes of the gate rule, the global names and the
network-trust family. A test fails
when the page in docs/ differs from what this module renders, so the page is
regenerated, never edited::

    python -m envscope.policy._catalog_doc            # rewrite docs/catalog.md
    python -m envscope.policy._catalog_doc --check    # exit 1 when it is stale
"""

from __future__ import annotations

import argparse
import sys
from collections.abc import Sequence
from pathlib import Path

from envscope.policy._declarations import Tier
from envscope.policy.catalog import DEFAULT_CATALOG_NAME, Catalog

__all__ = ["DOC_PATH", "main", "render"]

DOC_PATH = Path(__file__).resolve().parents[2] / "docs" / "catalog.md"

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
    vectors = sorted(catalog.injection_names | {f"{p}*" for p in catalog.injection_prefixes})
    lines += [
        "",
        "## Injection vectors",
        "",
        "Names that change how a child's loader, shell or interpreter starts (a superset",
        "of sudo's `env_delete` table and glibc's `UNSECURE_ENVVARS`). A routed scope,",
        "an `extra`, a force prefix or a passthrough may not introduce one unless the",
        "host allows it.",
        "",
        ", ".join(f"`{v}`" for v in vectors),
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


def main(argv: Sequence[str] | None = None) -> int:
    """Write (or ``--check``) docs/catalog.md; exit 1 when ``--check`` finds it stale."""
    parser = argparse.ArgumentParser(prog="python -m envscope.policy._catalog_doc")
    parser.add_argument("--check", action="store_true", help="exit 1 when the page is stale")
    parser.add_argument("--output", type=Path, default=DOC_PATH, help="the page to write")
    args = parser.parse_args(argv)
    text = render(Catalog.default())
    if args.check:
        try:
            current = args.output.read_text(encoding="utf-8")
        except OSError:
            current = None
        if current != text:
            print(
                f"{args.output}: stale; run python -m envscope.policy._catalog_doc", file=sys.stderr
            )
            return 1
        return 0
    args.output.write_text(text, encoding="utf-8")
    print(f"wrote {args.output}")
    return 0


if __name__ == "__main__":  # pragma: no cover - the command line
    raise SystemExit(main())
