"""The ``envscope`` command line (a thin layer over pure formatters).

This first version has one command, ``plan``: build a child env for a home
and print, per key, what happened and why (never a value).
"""

from __future__ import annotations

import argparse
import sys
from collections.abc import Sequence

from envscope.errors import EnvscopeError
from envscope.host import Host
from envscope.policy import SecretPolicy
from envscope.surfaces import Surface
from envscope.trace import Action, Trace

__all__ = ["format_plan", "main"]

_CLEAN_ENV = {"PATH": "/usr/local/bin:/usr/bin:/bin", "HOME": "/home/operator", "LANG": "C.UTF-8"}


def format_plan(trace: Trace, child: dict[str, str], policy: SecretPolicy, title: str) -> str:
    """A plain-text table: one row per key with its final action, stage, reason and origin."""
    final = trace.final()
    rows = [("KEY", "ACTION", "STAGE", "REASON", "ORIGIN")]
    for up in sorted(final):
        d = final[up]
        in_child = any(k.upper() == up for k in child)
        action = d.action.value if in_child or d.action is not Action.KEPT else "stripped"
        rows.append(
            (
                d.key,
                action,
                d.stage.value,
                d.reason.value,
                "" if d.origin is None else str(d.origin),
            )
        )
    for key in sorted(k for k in child if k.upper() not in final):
        rows.append((key, "kept", "-", "inherited", ""))
    widths = [max(len(r[i]) for r in rows) for i in range(4)]
    lines = [title, ""]
    for row in rows:
        cells = [row[i].ljust(widths[i]) for i in range(4)]
        lines.append("  ".join([*cells, row[4]]).rstrip())
    stripped = sum(1 for d in final.values() if d.action in (Action.STRIPPED, Action.REFUSED))
    status = "complete" if policy.complete else "PARTIAL (failing closed)"
    lines.append("")
    lines.append(f"{len(child)} variables reach the child, {stripped} removed; policy {status}")
    lines.extend(f"  problem: {p}" for p in policy.problems)
    return "\n".join(lines)


def _parser() -> argparse.ArgumentParser:
    parser = argparse.ArgumentParser(prog="envscope", description=__doc__)
    sub = parser.add_subparsers(dest="command", required=True)
    plan = sub.add_parser("plan", help="print a child's env plan (keys and reasons, no values)")
    plan.add_argument("--launch-home", required=True)
    plan.add_argument("--home", help="the routed home (default: the launch home)")
    plan.add_argument("--surface", choices=[s.value for s in Surface], default="terminal")
    plan.add_argument("--managed", help="the administrator-managed dotenv file")
    plan.add_argument("--bundled", help="the bundled plugin root")
    plan.add_argument(
        "--clean-env",
        action="store_true",
        help="start from a minimal parent env, not this process's",
    )
    return parser


def main(argv: Sequence[str] | None = None) -> int:
    """Run the command line; returns the exit code (0 ok, 2 usage or I/O error)."""
    args = _parser().parse_args(argv)
    environ = dict(_CLEAN_ENV) if args.clean_env else None
    try:
        host = Host(
            args.launch_home,
            managed_env_file=args.managed,
            bundled_plugins=args.bundled,
            environ=environ,
            on_unreadable_platform="deny",
        )
        host.load_launch_env()
        trace = Trace()
        surface = Surface(args.surface)
        home = args.home or args.launch_home
        with host.routed(home):
            child = host.build_subprocess_env(surface=surface, trace=trace)
            policy = host.policy()
        title = f"envscope plan: {surface.value} child for {host.bound_home() or home}"
        print(format_plan(trace, child, policy, title))
    except EnvscopeError as exc:
        print(f"envscope: error: {exc}", file=sys.stderr)
        return 2
    return 0
