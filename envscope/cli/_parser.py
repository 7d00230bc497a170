"""The ``envscope`` argument parser: every command and option carries its help text.

``tests/cli/test_cli_help.py`` walks this parser and fails on an option or
a command without help, so ``envscope COMMAND --help`` always says what each
flag does.
"""

from __future__ import annotations

import argparse
from collections.abc import Sequence

from envscope.policy.surfaces import Surface

__all__ = ["SURFACES", "parser"]

SURFACES = [s.value for s in Surface]
ONLY = ("removed", "kept")
COLOR = ("auto", "always", "never")


class UsageError(Exception):
    """A command-line mistake (exit code 2, or ``code``: 126/127 for ``run``)."""

    def __init__(self, message: str, code: int = 2) -> None:
        super().__init__(message)
        self.code = code


DOCS_URL = "https://github.com/envscope/envscope/tree/main/docs"
"""Where the documentation lives (pyproject's ``Documentation`` URL): a pip install has no docs/."""

_EPILOG = (
    "Exit codes: 0 ok, 1 findings, 2 usage or I/O error (run: 126 not executable, "
    "127 not found). Values are never printed unless --show-values. "
    f"Documentation: {DOCS_URL}/cli.md"
)
_CONFIG_HELP = "host config file (default: $ENVSCOPE_CONFIG, else ./envscope.yaml)"
_HOST_HELP = (
    "build the host from its own code: MODULE:ATTR names a Host or a no-argument factory "
    "returning one (as uvicorn app:app does); no config file is read"
)
_PID_HELP = "audit a running host: take the parent env from /proc/PID/environ instead of this shell"


def _common(p: argparse.ArgumentParser, default: object) -> None:
    """The options that say which host and parent env to audit (before or after the command)."""
    p.add_argument("--config", default=default, metavar="FILE", help=_CONFIG_HELP)
    p.add_argument("--host", default=default, metavar="MODULE:ATTR", help=_HOST_HELP)
    p.add_argument("--pid", default=default, metavar="PID", help=_PID_HELP)


def _build_options(p: argparse.ArgumentParser) -> None:
    p.add_argument(
        "--home",
        metavar="HOME",
        help="a home name from the config's homes, 'launch', or an existing directory "
        "(default: the launch home)",
    )
    p.add_argument(
        "--surface",
        choices=SURFACES,
        default="terminal",
        help="the kind of child to build for (default: terminal)",
    )


_Subparsers = argparse._SubParsersAction  # the object add_subparsers returns


def _format_option(p: argparse.ArgumentParser, choices: tuple[str, ...]) -> None:
    """``--format``: text (the default), json (as ``--json``), markdown, sarif where offered."""
    p.add_argument(
        "--format", choices=choices, default=None,
        help="the output's format: text (default), json (as --json), markdown (for "
        "$GITHUB_STEP_SUMMARY)" + (", sarif (SARIF 2.1.0, for code scanning)"
                                   if "sarif" in choices else "")
        + "; with GITHUB_ACTIONS=true, text also prints ::error annotations where a finding "
        "has a file and line",
    )  # fmt: skip


def output_format(args: argparse.Namespace) -> str:
    """The ``--format`` chosen (``--json`` is ``json``); both, disagreeing: a usage error."""
    chosen: str | None = getattr(args, "format", None)
    if getattr(args, "json", False):
        if chosen not in (None, "json"):
            raise UsageError(f"{args.command}: --json and --format {chosen} disagree")
        return "json"
    return chosen or "text"


def _command(
    sub: _Subparsers[argparse.ArgumentParser],
    name: str,
    summary: str,
    description: str,
    parents: Sequence[argparse.ArgumentParser],
) -> argparse.ArgumentParser:
    return sub.add_parser(
        name, parents=list(parents), help=summary, description=description, epilog=_EPILOG
    )


OPERANDS: dict[str, tuple[str, ...]] = {"diff": ("a", "b")}
"""Each command's one-word positional operands (every other positional is a list)."""


def missing_operand(args: argparse.Namespace) -> str | None:
    """The operand argparse left as a list, or None.

    After ``--``, a lone ``--`` fills an operand with ``[]`` (CPython's argparse),
    so ``diff - -- --`` parses: the operand is missing, a usage error.
    """
    for name in OPERANDS.get(getattr(args, "command", ""), ()):
        if not isinstance(getattr(args, name, None), str):
            return name
    return None


def parser(version: str) -> argparse.ArgumentParser:
    """The whole command line."""
    top = argparse.ArgumentParser(
        prog="envscope",
        description="Explain, compare and reproduce the env envscope builds for a child process.",
        epilog=_EPILOG,
    )
    top.add_argument(
        "-V", "--version", action="version", version=f"envscope {version}",
        help="print the version and exit",
    )  # fmt: skip
    _common(top, None)
    sub = top.add_subparsers(
        dest="command", required=True, metavar="COMMAND", help="one of the commands below"
    )
    common = argparse.ArgumentParser(add_help=False)
    _common(common, argparse.SUPPRESS)  # given after the command, it wins

    for add in (_add_explain, _add_snapshot, _add_diff, _add_scan, _add_run, _add_sources):
        add(sub, [common])
    _add_check_spawns(sub, ())  # reads source files: no config, no home
    return top


def _add_explain(
    sub: _Subparsers[argparse.ArgumentParser], parents: Sequence[argparse.ArgumentParser]
) -> None:
    """The ``explain`` command."""
    explain = _command(
        sub, "explain", "every key a child gets or not, and why",
        "Build the env a spawn would get and print one decision per key: the action, the "
        "stage that decided, the reason and where the rule came from.",
        parents,
    )  # fmt: skip
    _build_options(explain)
    explain.add_argument("--json", action="store_true", help="stable JSON (the snapshot format)")
    _format_option(explain, ("text", "json", "markdown"))
    explain.add_argument(
        "--show-values", action="store_true",
        help="also print values (protected values masked as ********)",
    )  # fmt: skip
    explain.add_argument(
        "--strict", action="store_true", help="exit 1 on manifest problems or warnings"
    )
    explain.add_argument(
        "--key", action="append", metavar="NAME",
        help="show only this key (any case; repeat for more)",
    )  # fmt: skip
    explain.add_argument(
        "--only", choices=ONLY,
        help="show only the keys the child gets (kept) or does not get (removed)",
    )  # fmt: skip
    explain.add_argument(
        "--color", choices=COLOR, default="auto",
        help="colour the ACTION column: auto (a terminal, unless NO_COLOR; FORCE_COLOR forces), "
        "always or never",
    )  # fmt: skip


def _add_snapshot(
    sub: _Subparsers[argparse.ArgumentParser], parents: Sequence[argparse.ArgumentParser]
) -> None:
    """The ``snapshot`` command."""
    snapshot = _command(
        sub, "snapshot", "save the JSON an auditor diffs later",
        "Write the JSON of `explain --json` (keys, decisions, fingerprints; never values).",
        parents,
    )  # fmt: skip
    _build_options(snapshot)
    snapshot.add_argument(
        "-o", "--output", required=True, metavar="FILE", help="file to write ('-' for stdout)"
    )


def _add_diff(
    sub: _Subparsers[argparse.ArgumentParser], parents: Sequence[argparse.ArgumentParser]
) -> None:
    """The ``diff`` command."""
    diff = _command(
        sub, "diff", "compare two snapshots or live builds",
        "List keys added to, removed from and changed between two children's envs, with "
        "each side's decision. Exit 1 when they differ or cannot be compared.",
        parents,
    )  # fmt: skip
    operand = "a snapshot file, '-' for stdin, or home:NAME[/surface] to build live"
    for name in OPERANDS["diff"]:
        diff.add_argument(name, help=operand)
    diff.add_argument("--json", action="store_true", help="stable JSON")
    _format_option(diff, ("text", "json", "markdown"))


def _add_scan(
    sub: _Subparsers[argparse.ArgumentParser], parents: Sequence[argparse.ArgumentParser]
) -> None:
    """The ``scan`` command."""
    scan = _command(
        sub, "scan", "lint every plugin manifest",
        "Print the secrets each plugin manifest declares and every problem (file:line: "
        "field). Exit 1 on any problem.",
        parents,
    )  # fmt: skip
    scan.add_argument(
        "homes", nargs="*", metavar="HOME",
        help="home names or paths (default: the launch home and every configured home)",
    )  # fmt: skip
    scan.add_argument(
        "--plugin", metavar="DIR", help="lint one plugin directory alone (needs no config)"
    )
    scan.add_argument("--json", action="store_true", help="stable JSON")


def _add_run(
    sub: _Subparsers[argparse.ArgumentParser], parents: Sequence[argparse.ArgumentParser]
) -> None:
    """The ``run`` command."""
    run = _command(
        sub, "run", "run a command with exactly the env a child would get",
        "Execute CMD with the env envscope builds for the home and surface (exec on POSIX).",
        parents,
    )  # fmt: skip
    _build_options(run)
    run.add_argument(
        "--redact", action="store_true",
        help="run CMD as a child and mask every secret value the host holds in its output "
        "(needs envscope[redact])",
    )  # fmt: skip
    run.add_argument("cmd", nargs=argparse.REMAINDER, metavar="-- CMD", help="the command and args")


def _add_check_spawns(
    sub: _Subparsers[argparse.ArgumentParser], parents: Sequence[argparse.ArgumentParser]
) -> None:
    """The ``check-spawns`` command."""
    check = _command(
        sub, "check-spawns", "find spawn sites that bypass the factory",
        "Statically check Python files for child processes started without an env built by "
        "envscope. Virtualenvs, site-packages, node_modules, build/ and what .gitignore "
        "ignores are skipped. Exit 1 on a finding, 2 when a file cannot be checked.",
        (),
    )  # fmt: skip
    check.add_argument("paths", nargs="+", metavar="PATH", help="files or directories to check")
    _format_option(check, ("text", "json", "markdown", "sarif"))
    check.add_argument(
        "--show-allowed", action="store_true",
        help="also list sites marked '# envscope: allow-inherit'",
    )  # fmt: skip
    check.add_argument(
        "--exclude", action="append", default=[], metavar="GLOB",
        help="skip paths matching this gitignore-style pattern (repeat for more)",
    )  # fmt: skip
    check.add_argument("--json", action="store_true", help="stable JSON")


def _add_sources(
    sub: _Subparsers[argparse.ArgumentParser], parents: Sequence[argparse.ArgumentParser]
) -> None:
    """The ``sources`` command and its one subcommand, ``check``."""
    sources = _command(
        sub, "sources", "check the config's secret sources",
        "Commands over the secret sources envscope.yaml configures (sources:).",
        (),
    )  # fmt: skip
    inner = sources.add_subparsers(
        dest="sources_command", required=True, metavar="COMMAND", help="check"
    )
    check = inner.add_parser(
        "check", parents=list(parents), help="ask each source once per home, print no value",
        description="Ask each configured source for each home it has entries for and print the "
        "names it answered, the names it did not, or its error. Values are never printed. "
        "Exit 1 when a source fails or leaves a declared name unanswered.",
        epilog=_EPILOG,
    )  # fmt: skip
    check.add_argument(
        "--home", action="append", metavar="HOME",
        help="a home name, 'launch' or a directory (repeat for more; default: every home)",
    )  # fmt: skip
    check.add_argument("--json", action="store_true", help="stable JSON")
