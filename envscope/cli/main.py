"""The ``envscope`` command line: a thin layer over pure formatters (``_report``).

Commands: ``explain``, ``snapshot``, ``diff``, ``scan``, ``run``,
``check-spawns``, ``sources check``. Exit codes: 0 ok, 1 findings (differences, problems,
spawn sites; ``explain --strict`` warnings), 2 usage or I/O error. Only
``main`` prints. No value is printed unless ``--show-values``, and a value
the build's secret rule calls a secret is masked even then.
"""

from __future__ import annotations

import argparse
import os
import shutil
import sys
from collections.abc import Callable, Mapping, Sequence
from dataclasses import dataclass
from typing import Any

from envscope import __version__
from envscope.audit.trace import Trace
from envscope.cli._exec import check_command, exec_command
from envscope.cli._parser import SURFACES, UsageError, missing_operand, output_format, parser
from envscope.cli._plugin_scan import scan_plugin
from envscope.cli._source import HostSource
from envscope.cli.config import HostConfig, find_config, load_config
from envscope.errors import EnvscopeError, SnapshotError
from envscope.files._fs import RealFileSystem
from envscope.host import Host, home_identity
from envscope.pipeline.decision import held_as_secret
from envscope.pipeline.secret_rule import SecretRule
from envscope.policy.surfaces import Surface
from envscope.tools import _report
from envscope.tools._snapshot import MAX_SNAPSHOT_BYTES, parse_snapshot

__all__ = ["main"]


@dataclass(frozen=True, slots=True)
class Audited:
    """The host a command audits, with its config file when it came from one."""

    host: Host
    config: HostConfig | None

    def resolve_home(self, home_arg: str | None) -> str:
        """A configured home name, ``launch``, or an existing directory (``--host``: no names)."""
        if self.config is not None:
            return self.config.resolve_home(home_arg)
        if home_arg is None or home_arg == "launch":
            return self.host.launch_home
        path = os.path.abspath(home_arg)
        if not os.path.isdir(path):
            raise UsageError(
                f"home {home_arg!r} is not an existing directory ({path}); with --host, "
                "--home takes 'launch' or a path"
            )
        return path

    def home_name(self, path: str) -> str:
        """The config's name for a home, ``launch``, else the path."""
        if self.config is not None:
            return self.config.home_name(path)
        if home_identity(path) == self.host.launch_home:
            return "launch"
        return _report.display_path(path, os.getcwd())


@dataclass(slots=True)
class Built:
    """One live build: the host, the trace, the child env and every value involved."""

    audited: Audited
    home: str
    trace: Trace
    child: dict[str, str]
    values: dict[str, str]
    rule: SecretRule  # the build's one secret rule: what --show-values masks

    @property
    def host(self) -> Host:
        """The audited host."""
        return self.audited.host

    def snapshot(self) -> dict[str, Any]:
        """The JSON snapshot of this build (keys, decisions, fingerprints)."""
        return _report.snapshot_of(
            self.trace,
            home=self.audited.home_name(self.home),
            relative_to=os.getcwd(),
            key_id=self.host.fingerprint_key_id(),
        )


def _config(args: argparse.Namespace) -> HostConfig:
    choice = find_config(args.config, os.environ)
    if choice is None:
        raise UsageError(
            "no host config: pass --config, set ENVSCOPE_CONFIG or create ./envscope.yaml"
        )
    return load_config(choice.path, trusted=choice.explicit)


def _audited(args: argparse.Namespace, *, load: bool = True) -> Audited:
    """The host to audit (``--host`` or the config) over its parent env (``--pid`` or ours)."""
    source = HostSource(getattr(args, "host", None), getattr(args, "pid", None))
    if source.host_spec is not None and getattr(args, "config", None) is not None:
        raise UsageError("--host and --config each name the host: pass one of them")
    pinned = source.parent_env()
    if source.host_spec is not None:
        host = source.factory_host(os.environ if pinned is None else pinned)
        config = None
    else:
        config = _config(args)
        host = config.build_host(dict(os.environ) if pinned is None else pinned)
    if load:
        host.load_launch_env()
    return Audited(host, config)


def _build(audited: Audited, home_arg: str | None, surface: str) -> Built:
    host = audited.host
    home = audited.resolve_home(home_arg)
    trace = Trace(fingerprint=host.fingerprint)
    with host.routed(home) as binding:
        child = host.build_subprocess_env(surface=Surface(surface), trace=trace)
        rule = host.secret_rule(surface=Surface(surface))
    values = {**host.environ_snapshot(), **binding.scope, **child}
    return Built(audited, home, trace, child, values, rule)


def _layout(choice: str, stream: Any) -> _report.Layout:
    """Colour and width for text output, decided from this command's own env and stream.

    ``--color always|never`` wins; else ``NO_COLOR`` (set and not empty) turns
    colour off, ``FORCE_COLOR`` (set and not empty) on, and a terminal decides.
    The width is ``$COLUMNS``, else the terminal's, else no limit (a pipe).
    """
    tty = bool(getattr(stream, "isatty", lambda: False)())
    if choice != "auto":
        color = choice == "always"
    elif os.environ.get("NO_COLOR"):
        color = False
    elif os.environ.get("FORCE_COLOR"):
        color = True
    else:
        color = tty
    columns = os.environ.get("COLUMNS", "")
    width: int | None = None
    if columns.isascii() and columns.isdigit() and int(columns) > 0:
        width = int(columns)
    elif tty:
        width = shutil.get_terminal_size().columns
    return _report.Layout(color=color, width=width)


def _masker(built: Built, snap: dict[str, Any]) -> Callable[[str], bool]:
    """Whether ``--show-values`` must mask a key's value: the build's secret rule says so.

    Masked: what the one decision (``pipeline.decision.decide``, on the rule the
    factory applied) finds a secret in, withheld or kept by an exemption: a
    denied name, a value that is or holds a secret value or a credential format.
    Each row is decided as the host's (``Layer.BASE``): the auditor's view, so a
    routed profile's own copy of a launch secret, or its value under a name the
    launch policy declares Tier 1, is masked like the launch row itself.
    """
    del snap
    rule = built.rule

    def must_mask(key: str) -> bool:
        value = built.values.get(key, "")  # a key of the trace only: its name decides
        return held_as_secret(rule, key, value)

    return must_mask


def _selector(args: argparse.Namespace) -> Callable[[str, Mapping[str, Any]], bool] | None:
    """The rows ``--key`` and ``--only`` pick (None: every row)."""
    keys = None if not args.key else {k.upper() for k in args.key}
    only = args.only
    if keys is None and only is None:
        return None

    def shown(key: str, info: Mapping[str, Any]) -> bool:
        if keys is not None and key.upper() not in keys:
            return False
        return only is None or (only == "kept") == bool(info["in_child"])

    return shown


def _cmd_explain(args: argparse.Namespace) -> int:
    built = _build(_audited(args), args.home, args.surface)
    snap = built.snapshot()
    must_mask = _masker(built, snap)
    shown = _selector(args)
    fmt = output_format(args)
    if fmt == "markdown":
        from envscope.tools._markdown import explain_markdown

        values = built.values if args.show_values else None
        print(explain_markdown(snap, values=values, is_tier1=must_mask, shown=shown), end="")
    elif fmt == "json":
        out = dict(snap)
        if shown is not None:
            out["keys"] = {k: v for k, v in snap["keys"].items() if shown(k, v)}
            # a part of the build: diff refuses it (its missing keys are no finding)
            out["filtered"] = {"key": sorted(args.key or []), "only": args.only}
        if args.show_values:
            # the child's own spellings (case twins each), so `run -- env` shows the same
            picked = {k.upper() for k in out["keys"]}
            out["values"] = {
                k: _report.MASK if must_mask(k) else v
                for k, v in built.child.items()
                if k.upper() in picked
            }
        print(_report.format_json(out), end="")
    else:
        values = built.values if args.show_values else None
        text = _report.format_explain(
            snap, values=values, is_tier1=must_mask, layout=args.layout, shown=shown
        )
        print(text, end="")
        print(built.trace.summary())
    findings = bool(snap["policy"]["problems"] or snap["warnings"])
    return 1 if args.strict and findings else 0


def _cmd_snapshot(args: argparse.Namespace) -> int:
    snap = _build(_audited(args), args.home, args.surface).snapshot()
    text = _report.format_json(snap)
    if args.output == "-":
        print(text, end="")
        return 0
    try:
        with open(args.output, "w", encoding="utf-8") as fh:
            fh.write(text)
    except OSError as exc:
        raise UsageError(f"{args.output}: cannot write snapshot: {exc.strerror}") from None
    print(f"envscope: snapshot of {len(snap['child'])} kept keys written to {args.output}")
    return 0


def _load_operand(args: argparse.Namespace, operand: str) -> dict[str, Any]:
    if operand.startswith("home:"):
        name, _, surface = operand[len("home:") :].partition("/")
        if surface and surface not in SURFACES:
            raise UsageError(f"{operand}: unknown surface {surface!r}")
        return _build(_audited(args), name or None, surface or "terminal").snapshot()
    return parse_snapshot(_read_operand(operand), operand, _report.SNAPSHOT_VERSIONS)


def _read_operand(operand: str) -> bytes:
    """A snapshot's bytes: stdin for ``-``, else a regular file read without blocking."""
    if operand == "-":
        stream = getattr(sys.stdin, "buffer", None)
        try:
            if stream is not None:
                return bytes(stream.read(MAX_SNAPSHOT_BYTES + 1))
            return str(sys.stdin.read(MAX_SNAPSHOT_BYTES + 1)).encode("utf-8", "surrogatepass")
        except UnicodeDecodeError:  # a text stdin that is not UTF-8
            raise SnapshotError(operand, "not JSON text (not UTF-8)") from None
        except OSError as exc:
            raise SnapshotError(operand, f"cannot read snapshot: {exc.strerror}") from None
    try:
        data = RealFileSystem().read_regular(operand, MAX_SNAPSHOT_BYTES)
    except OSError as exc:
        raise UsageError(f"{operand}: cannot read snapshot: {exc.strerror}") from None
    except ValueError:  # a NUL in the path
        raise UsageError("diff: a snapshot path holds a NUL character") from None
    if data is None:
        raise SnapshotError(operand, "cannot read snapshot: not a regular file")
    return data


def _cmd_diff(args: argparse.Namespace) -> int:
    labels = (args.a, args.b)
    snap_a, snap_b = _load_operand(args, args.a), _load_operand(args, args.b)
    for label, snap in zip(labels, (snap_a, snap_b), strict=True):
        why = _report.partial_snapshot(snap)
        if why is not None:
            raise UsageError(
                f"diff: {label} {why}: it cannot be compared (a key it leaves out would "
                "read as no difference); save the whole build with `envscope snapshot -o FILE`"
            )
    entries = _report.diff_snapshots(snap_a, snap_b)
    comparable = _report.fingerprints_comparable(snap_a, snap_b)
    fmt = output_format(args)
    if fmt == "markdown":
        from envscope.tools._markdown import diff_markdown

        print(diff_markdown(entries, labels, comparable=comparable), end="")
    elif fmt == "json":
        payload = {
            "a": args.a,
            "b": args.b,
            "fingerprints_comparable": comparable,
            "differences": [e.as_json() for e in entries],
        }
        print(_report.format_json(payload), end="")
    else:
        text = _report.format_diff(entries, labels, comparable=comparable, layout=args.layout)
        print(text, end="")
    return 1 if entries else 0


def _cmd_scan(args: argparse.Namespace) -> int:
    if args.plugin:
        reports = [scan_plugin(args.plugin)]
    else:
        audited = _audited(args, load=False)
        host = audited.host
        config = audited.config
        configured = [] if config is None else list(config.homes.values())
        homes = args.homes or [host.launch_home, *configured]
        reports = []
        for home_arg in homes:
            home = audited.resolve_home(home_arg)
            decl = host.manifest_declarations(home)
            cwd = os.getcwd()
            secrets: dict[str, list[str]] = {}
            for name, d in decl.secrets.items():
                secrets.setdefault(_report.display_path(d.origin.path or "?", cwd), []).append(name)
            problems = [_report.relative_problem(p, cwd) for p in decl.problems]
            notes = {_report.display_path(p, cwd): why for p, why in decl.ignored.items()}
            warnings = [_report.relative_problem(p, cwd) for p in decl.warnings]
            label = audited.home_name(home)
            reports.append(_report.ScanReport(label, secrets, problems, notes, warnings))
    if args.json:
        print(_report.format_json(_report.scan_json(reports)), end="")
    else:
        print(_report.format_scan(reports), end="")
        if os.environ.get("GITHUB_ACTIONS") == "true":
            from envscope.tools._ci_formats import scan_annotations

            print(scan_annotations(reports), end="")
    return 1 if any(r.problems for r in reports) else 0


def _redactor(host: Host, env: Mapping[str, str], surface: str) -> Any:
    """``for_host`` over the child's env: every secret value the host holds, masked."""
    from envscope.redact import for_host

    return for_host(host, env, surface=surface)


def _cmd_run(args: argparse.Namespace) -> int:
    cmd = list(args.cmd)
    if cmd and cmd[0] == "--":
        cmd = cmd[1:]
    check_command(cmd)
    audited = _audited(args)
    host = audited.host
    with host.routed(audited.resolve_home(args.home)):
        env = host.build_subprocess_env(surface=Surface(args.surface))
        redactor = _redactor(host, env, args.surface) if args.redact else None
    try:
        if redactor is not None:
            from envscope.cli._redacted_run import run_redacted

            sys.stdout.flush()
            return run_redacted(cmd, env, redactor, sys.stdout.buffer, sys.stderr.buffer)
        return exec_command(cmd, env)
    except FileNotFoundError:  # as env(1): 127 not found, 126 found but not executable
        raise UsageError(f"run: {cmd[0]!r}: command not found", code=127) from None
    except OSError as exc:
        raise UsageError(f"run: cannot execute {cmd[0]!r}: {exc.strerror}", code=126) from None


def _cmd_check_spawns(args: argparse.Namespace) -> int:
    from envscope.tools._spawn_check import (
        check_paths,
        exit_status,
        format_spawn_sites,
        spawn_sites_json,
    )

    fmt = output_format(args)
    sites, errors = check_paths(args.paths, exclude=args.exclude)
    if fmt == "json":
        data = spawn_sites_json(sites, errors, show_allowed=args.show_allowed)
        print(_report.format_json(data), end="")
    elif fmt == "markdown":
        from envscope.tools._markdown import spawn_sites_markdown

        print(spawn_sites_markdown(sites, errors, show_allowed=args.show_allowed), end="")
    elif fmt == "sarif":
        from envscope.cli._parser import DOCS_URL
        from envscope.tools._ci_formats import spawn_sites_sarif

        sarif = spawn_sites_sarif(sites, errors, version=__version__, docs=DOCS_URL)
        print(_report.format_json(sarif), end="")
    else:
        print(format_spawn_sites(sites, errors, show_allowed=args.show_allowed), end="")
        if os.environ.get("GITHUB_ACTIONS") == "true":
            from envscope.tools._ci_formats import github_annotations

            print(github_annotations(sites, errors), end="")
    for error in errors:
        print(_report.printable(f"envscope: error: {error}"), file=sys.stderr)
    return exit_status(sites, errors)


def _cmd_sources(args: argparse.Namespace) -> int:
    from envscope.cli._sources_cmd import sources_check

    if getattr(args, "host", None) is not None:
        raise UsageError(
            "sources check reads the sources of envscope.yaml: pass --config, not --host"
        )
    pinned = HostSource(None, getattr(args, "pid", None)).parent_env()
    environ = dict(os.environ) if pinned is None else pinned
    text, code = sources_check(_config(args), environ, args.home or (), as_json=args.json)
    print(text, end="")
    return code


_COMMANDS = {
    "explain": _cmd_explain,
    "snapshot": _cmd_snapshot,
    "diff": _cmd_diff,
    "scan": _cmd_scan,
    "run": _cmd_run,
    "check-spawns": _cmd_check_spawns,
    "sources": _cmd_sources,
}


def _silence_stdout() -> None:
    """Point stdout at the null device, so the interpreter's final flush cannot fail again."""
    try:
        fd = sys.stdout.fileno()
    except (OSError, ValueError):  # not a real file (a test's capture): nothing to flush
        return
    devnull = os.open(os.devnull, os.O_WRONLY)
    try:
        os.dup2(devnull, fd)
    finally:
        os.close(devnull)


def _main(argv: Sequence[str] | None) -> int:
    try:
        args = parser(__version__).parse_args(argv)
    except SystemExit as exc:  # argparse: --help/--version (0) or a usage error (2)
        code = exc.code if isinstance(exc.code, int) else 2
    else:
        args.layout = _layout(getattr(args, "color", "auto"), sys.stdout)
        try:
            missing = missing_operand(args)
            if missing is not None:
                raise UsageError(f"{args.command}: the operand {missing.upper()} is missing")
            code = _COMMANDS[args.command](args)
        except UsageError as exc:
            print(_report.printable(f"envscope: error: {exc}"), file=sys.stderr)
            code = exc.code
        except EnvscopeError as exc:
            print(_report.printable(f"envscope: error: {exc}"), file=sys.stderr)
            code = 2
    sys.stdout.flush()
    return code


def main(argv: Sequence[str] | None = None) -> int:
    """Run the command line and return its exit code (0 ok, 1 findings, 2 usage/I/O error).

    A reader that goes away early (``envscope explain | head -n1``) ends the
    command quietly with exit code 2: no message, no traceback.
    """
    try:
        return _main(argv)
    except BrokenPipeError:
        _silence_stdout()
        return 2
