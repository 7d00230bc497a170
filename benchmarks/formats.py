"""The credential-format figures of issue 20 (``python -m benchmarks.formats``).

Prints, for the table in ``envscope/policy/data/credential_formats.yaml``:

- formats detected on the generated corpus: every row's fake example, bare and
  inside URLs, quotes, ``Bearer``, lists and lines (target: all);
- false positives on the real-environment and platform corpora ``fixtures/real-envs/``
  and ``fixtures/platform-envs/`` (target 0);
- how many of gitleaks' and detect-secrets' default rules the table covers
  (``benchmarks/peer_rules.yaml``, mapped by each row's ``cross_checks``);
- the time of one search over a 1 MiB value (linear: no target, a figure);
- the catalog's entries per category, before issue 20 → now.

Counts only; it never prints a value. ``--page`` writes docs/format-coverage.md
(every peer rule and what envscope answers; a test fails when the page drifts).
"""

from __future__ import annotations

import json
import time
from pathlib import Path

import yaml

from envscope.policy.formats import find_format, format_table

ROOT = Path(__file__).resolve().parents[1]
CONTEXTS = (
    "{}", '"{}"', "'{}'", "Bearer {}", "first\n{}\nlast", "  {}  ", "a,{},b",
    "https://x-access-token:{}@github.com/o/r.git", "https://example.invalid/api/{}/status",
    "/usr/bin:{}:/bin", '{{"key": "{}"}}',
)  # fmt: skip


def corpus_figure() -> tuple[int, int, int, list[str]]:
    """(formats, found in every context, values tried, formats missed somewhere)."""
    table = format_table()
    missed, tried = [], 0
    for fmt in table.formats:
        token_like = fmt.category != "structural" and "://" not in fmt.example
        contexts = CONTEXTS if token_like else CONTEXTS[:7]
        tried += len(contexts)
        if any(find_format(c.format(fmt.example)) is not fmt for c in contexts):
            missed.append(fmt.name)
    return len(table.formats), len(table.formats) - len(missed), tried, missed


def false_positive_figure() -> tuple[int, int, list[str]]:
    """(environments, values, keys whose value matched a format): real and platform envs."""
    hits, values = [], 0
    paths = sorted((ROOT / "fixtures" / "real-envs").glob("*.json"))
    paths += sorted((ROOT / "fixtures" / "platform-envs").glob("*.json"))
    for path in paths:
        data = json.loads(path.read_text(encoding="utf-8"))
        env = data.get("env", data)
        values += len(env)
        hits += [f"{path.stem}:{k}" for k, v in env.items() if find_format(v) is not None]
    return len(paths), values, hits


def coverage_figure() -> dict[str, tuple[int, int, int]]:
    """Per peer: (rules, rules a row cross-checks, other rules deliberately no row)."""
    peers = yaml.safe_load((ROOT / "benchmarks" / "peer_rules.yaml").read_text(encoding="utf-8"))
    mapped = {c for f in format_table().formats for c in f.cross_checks}
    excluded = set(peers.get("not_formats", {}))
    excluded |= {f"trufflehog:{r}" for r in peers["trufflehog"]["keyword_context"]}
    result = {}
    for peer in PEERS:
        rules = {f"{peer}:{r}" for r in peers[peer]["rules"]}
        unknown = {c for c in mapped if c.startswith(f"{peer}:")} - rules
        if unknown:
            raise SystemExit(f"cross_checks name rules {peer} does not have: {sorted(unknown)}")
        result[peer] = (len(rules), len(rules & mapped), len((rules & excluded) - mapped))
    return result


COVERAGE_PAGE = ROOT / "docs" / "format-coverage.md"
PEERS = ("gitleaks", "detect-secrets", "trufflehog")
KEYWORD_CONTEXT = (
    "keyword context (every pattern sits behind a keyword next to the value): inside an"
    " environment the variable's name is that context, and name context reads it"
)


def coverage_page() -> str:
    """docs/format-coverage.md: every default rule of each peer and what envscope answers."""
    peers = yaml.safe_load((ROOT / "benchmarks" / "peer_rules.yaml").read_text(encoding="utf-8"))
    covering: dict[str, list[str]] = {}
    for fmt in format_table().formats:
        for check in fmt.cross_checks:
            covering.setdefault(check, []).append(fmt.name)
    reasons: dict[str, str] = dict(peers.get("not_formats", {}))
    reasons |= {f"trufflehog:{r}": KEYWORD_CONTEXT for r in peers["trufflehog"]["keyword_context"]}
    envs, values, hits = false_positive_figure()
    figures = coverage_figure()
    lines = [
        "# Credential-format coverage against the peer scanners",
        "",
        "<!-- generated from benchmarks/peer_rules.yaml and the format table by"
        " `python -m benchmarks.formats --page`; do not edit -->",
        "",
        "Every default rule of gitleaks and detect-secrets and every detector of trufflehog,",
        "and what envscope answers:",
        "the format rows that cover it (each row's `cross_checks`,",
        "[credential-formats.md](credential-formats.md)), the reason it is",
        "deliberately no row (entropy, or a keyword next to the value: inside an",
        "environment the variable's name is that context, and name context",
        "(docs/concepts.md) reads it), or *not covered yet*. trufflehog's detectors are",
        "listed by `python -m benchmarks.peer_rules_trufflehog` from a clone.",
        "",
        f"- formats: {len(format_table().formats)}; false positives on the corpora"
        f" (`fixtures/real-envs/`, `fixtures/platform-envs/`): {len(hits)} of {values} values"
        f" in {envs} environments",
    ]
    for peer, (total, covered, excluded) in figures.items():
        lines.append(
            f"- {peer}: {total} rules; {covered} covered by a row, {excluded}"
            f" deliberately no row, {total - covered - excluded} not covered yet"
        )
    for peer in PEERS:
        lines += ["", f"## {peer}", "", f"Read at <{peers[peer]['source']}>.", ""]
        lines += ["| rule | envscope |", "|---|---|"]
        for rule in sorted(peers[peer]["rules"], key=str.lower):
            key = f"{peer}:{rule}"
            if key in covering:
                answer = ", ".join(
                    f"[{n}](credential-formats.md#{n})" for n in sorted(covering[key])
                )
            elif key in reasons:
                answer = "no row: " + reasons[key].replace("|", "\\|")
            else:
                answer = "not covered yet"
            lines.append(f"| `{rule}` | {answer} |")
    lines.append("")
    return "\n".join(lines)


# Entries per category of the default catalog before issue 20 (commit bccf458).
CATALOG_BEFORE = {
    "model-providers": 117, "chat-platforms": 53, "gateway-and-dashboard": 19,
    "auxiliary-models": 2, "agent-tools": 22, "sandbox-providers": 7, "code-hosts": 11,
    "package-and-deploy": 15, "memory-and-observability": 12, "training-and-eval": 2,
    "secret-sources": 8,
}  # fmt: skip


def catalog_figure() -> list[tuple[str, int, int]]:
    """(category, entries before, entries now) for every category of the default catalog."""
    from envscope import Catalog

    return [
        (c.id, CATALOG_BEFORE.get(c.id, 0), len(c.entries)) for c in Catalog.default().categories
    ]


def one_mib_figure() -> float:
    """Milliseconds of one search over a 1 MiB base64-like value with no credential (best of 5)."""
    import random
    import string

    rnd = random.Random(20)
    value = "".join(rnd.choice(string.ascii_letters + string.digits + "+/") for _ in range(1 << 20))
    best = float("inf")
    for _ in range(5):
        start = time.perf_counter()
        assert find_format(value) is None
        best = min(best, time.perf_counter() - start)
    return best * 1000


def main(argv: list[str] | None = None) -> int:
    """Print the figures (exit 1 on a missed format or a false positive), or ``--page``."""
    import sys

    args = sys.argv[1:] if argv is None else argv
    if args == ["--page"]:
        COVERAGE_PAGE.write_text(coverage_page(), encoding="utf-8")
        print(f"wrote {COVERAGE_PAGE.relative_to(ROOT)}")
        return 0
    rows, found, tried, missed = corpus_figure()
    envs, values, hits = false_positive_figure()
    print(f"formats detected on the generated corpus: {found}/{rows} ({tried} values)")
    if missed:
        print("  missed somewhere:", ", ".join(missed))
    print(
        f"false positives on the real-env and platform corpora: {len(hits)} "
        f"({values} values, {envs} envs)"
    )
    for hit in hits:
        print("  ", hit)
    for peer, (total, covered, excluded) in coverage_figure().items():
        print(
            f"{peer} default rules covered: {covered}/{total} "
            f"({excluded} deliberately no row: entropy/keyword rules, see peer_rules.yaml)"
        )
    print(f"one search over a 1 MiB value: {one_mib_figure():.1f} ms")
    print("catalog entries per category (before issue 20 -> now):")
    for cid, before, now in catalog_figure():
        print(f"  {cid}: {before} -> {now}")
    return 1 if missed or hits else 0


if __name__ == "__main__":
    raise SystemExit(main())
