"""``envscope sources check``: does each configured secret source answer? Never a value.

For each source of ``envscope.yaml`` and each home it has entries for (the
launch home and every configured home, or the ``--home`` ones), the command
fetches once and reports the names the source answered, the names it
declares but did not answer, or its ``SourceError``. The host is built
without its sources and its launch ``.env`` loaded first, so a source reads
its credentials from the env the host would give it. ``check_sources`` is
the check; ``format_source_checks`` and ``source_checks_json`` the formatters.
"""

from __future__ import annotations

from collections.abc import MutableMapping, Sequence
from dataclasses import dataclass
from typing import Any

from envscope.cli.config import HostConfig
from envscope.errors import SourceError
from envscope.tools._report import format_json, printable

__all__ = [
    "SourceCheck",
    "check_sources",
    "format_source_checks",
    "source_checks_json",
    "sources_check",
]


@dataclass(frozen=True, slots=True)
class SourceCheck:
    """One source asked for one home: what it answered, what it left out, or why it failed."""

    source: str
    type: str
    home: str  # the config's name for it (launch, a home name) or its path
    answered: tuple[str, ...]
    unanswered: tuple[str, ...]
    failure: str | None  # the SourceError's message (names the source and entry, no value)

    @property
    def ok(self) -> bool:
        """The source answered every name it declares for the home."""
        return self.failure is None and not self.unanswered


def check_sources(
    config: HostConfig, environ: MutableMapping[str, str], homes: Sequence[str]
) -> list[SourceCheck]:
    """Ask each configured source for each of ``homes`` (paths) it has entries for."""
    from envscope.policy.sources import declared_names_of

    host = config.build_host(environ, sources=False)
    host.load_launch_env()  # a source's credential may be in the launch .env
    checks = []
    for spec in config.sources:
        source = spec.make(environ)
        for home in homes:
            declared = declared_names_of(source, home)
            if not declared:
                continue
            failure: str | None = None
            answered: set[str] = set()
            try:
                answered = set(source.fetch(home))
            except SourceError as exc:  # its message names the entry, never a value
                failure = str(exc)
            checks.append(
                SourceCheck(
                    source=source.name,
                    type=spec.type,
                    home=config.home_name(home),
                    answered=tuple(sorted(answered & declared)),
                    unanswered=() if failure else tuple(sorted(declared - answered)),
                    failure=failure,
                )
            )
    return checks


def format_source_checks(checks: Sequence[SourceCheck]) -> str:
    """One line per source and home: ``ok``, the names not answered, or the failure."""
    if not checks:
        return "no configured source has entries for these homes\n"
    lines = []
    for check in checks:
        head = f"{check.source} ({check.type}) {check.home}:"
        if check.failure is not None:
            lines.append(f"{head} failed: {check.failure}")
            continue
        answered = ", ".join(check.answered) or "nothing"
        line = f"{head} ok: {answered}"
        if check.unanswered:
            line = f"{head} answered {answered}; not answered: {', '.join(check.unanswered)}"
        lines.append(line)
    failed = sum(not check.ok for check in checks)
    lines.append(f"{len(checks)} checked, {failed} not answering in full")
    return "".join(printable(line) + "\n" for line in lines)


def source_checks_json(checks: Sequence[SourceCheck]) -> dict[str, Any]:
    """The checks as JSON data (names and messages only)."""
    return {
        "version": 1,
        "checks": [
            {
                "source": c.source,
                "type": c.type,
                "home": c.home,
                "ok": c.ok,
                "answered": list(c.answered),
                "unanswered": list(c.unanswered),
                "failure": c.failure,
            }
            for c in checks
        ],
    }


def sources_check(
    config: HostConfig,
    environ: MutableMapping[str, str],
    home_args: Sequence[str],
    *,
    as_json: bool,
) -> tuple[str, int]:
    """The command's output and exit code: 0 when every source answered in full, else 1.

    ``home_args`` are ``--home`` values (none: the launch home and every configured one).
    """
    names: Sequence[str | None] = home_args or [None, *config.homes]
    homes = list(dict.fromkeys(config.resolve_home(name) for name in names))
    checks = check_sources(config, environ, homes)
    text = format_json(source_checks_json(checks)) if as_json else format_source_checks(checks)
    return text, 0 if all(check.ok for check in checks) else 1
