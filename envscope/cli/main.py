"""The ``envscope`` command line: a thin layer over pure formatters (``_report``).

Commands: ``explain``, ``snapshot``, ``diff``, ``scan``, ``run``,
``check-spawns``. Exit codes: 0 ok, 1 findings (differences, problems,
spawn sites; ``explain --strict`` warnings), 2 usage or I/O error. Only
``main`` prints. No value is printed unless ``--show-values``, and Tier 1
values are masked even then.
"""

from __future__ import annotations

import argparse
import os
import signal
import subprocess
import sys
from collections.abc import Callable, Mapping, Sequence
from dataclasses import asdict, dataclass
from typing import Any

from envscope.audit import _report
from envscope.audit._snapshot import MAX_SNAPSHOT_BYTES, parse_snapshot
from envscope.audit.trace import Trace
from envscope.cli.config import HostConfig, find_config, load_config
from envscope.errors import EnvscopeError, SnapshotError
from envscope.files._fs import RealFileSystem
from envscope.host import Host
from envscope.pipeline.secret_rule import SecretRule
from envscope.policy._declarations import Problem
from envscope.policy.surfaces import Surface

__all__ = ["main"]

SURFACES = [s.value for s in Surface]


class UsageError(Exception):
    """A command-line mistake (exit code 2)."""


def _usage_error(path: str, message: str) -> UsageError:
    return UsageError(f"{path}: {message}")


@dataclass(slots=True)
class Built:
    """One live build: the host, its config, the trace and every value involved."""

    config: HostConfig
    host: Host
    home: str
    trace: Trace
    values: dict[str, str]
    rule: SecretRule  # the build's one secret rule: what --show-values masks

    def snapshot(self) -> dict[str, Any]:
        """The JSON snapshot of this build (keys, decisions, fingerprints)."""
        return _report.snapshot_of(
            self.trace,
            home=self.config.home_name(self.home),
            relative_to=os.getcwd(),
            key_id=self.host.fingerprint_key_id(),
        )


def _parser() -> argparse.ArgumentParser:
    parser = argparse.ArgumentParser(
        prog="envscope", description="Explain, compare and reproduce child environments."
    )
    config_help = "host config file (default: $ENVSCOPE_CONFIG, ./envscope.yaml)"
    parser.add_argument("--config", help=config_help)
    sub = parser.add_subparsers(dest="command", required=True)
    # --config also after the subcommand; given there, it wins (SUPPRESS: absent, no default)
    with_config = argparse.ArgumentParser(add_help=False)
    with_config.add_argument("--config", default=argparse.SUPPRESS, help=config_help)

    def build_options(p: argparse.ArgumentParser) -> None:
        p.add_argument("--home", help="a home name from the config's homes, or a path")
        p.add_argument("--surface", choices=SURFACES, default="terminal")

    explain = sub.add_parser(
        "explain", parents=[with_config], help="every key a child gets or not, and why"
    )
    build_options(explain)
    explain.add_argument("--json", action="store_true", help="stable JSON (see docs/cli.md)")
    explain.add_argument("--show-values", action="store_true", help="print values (Tier 1 masked)")
    explain.add_argument("--strict", action="store_true", help="exit 1 on problems or warnings")
    snapshot = sub.add_parser(
        "snapshot", parents=[with_config], help="save the JSON an auditor diffs later"
    )
    build_options(snapshot)
    snapshot.add_argument("-o", "--output", required=True, help="file to write ('-' for stdout)")
    diff = sub.add_parser(
        "diff", parents=[with_config], help="compare two snapshots or live builds"
    )
    diff.add_argument("a", help="a snapshot file, '-' for stdin, or home:NAME[/surface]")
    diff.add_argument("b", help="a snapshot file, '-' for stdin, or home:NAME[/surface]")
    diff.add_argument("--json", action="store_true")
    scan = sub.add_parser("scan", parents=[with_config], help="lint every plugin manifest")
    scan.add_argument(
        "homes", nargs="*", help="home names or paths (default: every configured home)"
    )
    scan.add_argument("--plugin", help="lint one plugin directory alone (needs no config)")
    scan.add_argument("--json", action="store_true")
    run = sub.add_parser(
        "run", parents=[with_config], help="run a command with exactly the env a child would get"
    )
    build_options(run)
    run.add_argument("cmd", nargs=argparse.REMAINDER, help="-- CMD ARGS...")
    check = sub.add_parser("check-spawns", help="find spawn sites that bypass the factory")
    check.add_argument("paths", nargs="+")
    check.add_argument("--show-allowed", action="store_true", help="also list allowed sites")
    return parser


def _config(args: argparse.Namespace) -> HostConfig:
    choice = find_config(args.config, os.environ)
    if choice is None:
        raise UsageError(
            "no host config: pass --config, set ENVSCOPE_CONFIG or create ./envscope.yaml"
        )
    return load_config(choice.path, trusted=choice.explicit)


def _build(config: HostConfig, home_arg: str | None, surface: str) -> Built:
    environ = dict(os.environ)
    host = config.build_host(environ)
    host.load_launch_env()
    home = config.resolve_home(home_arg)
    trace = Trace(fingerprint=host.fingerprint)
    with host.routed(home) as binding:
        child = host.build_subprocess_env(surface=Surface(surface), trace=trace)
        rule = host.secret_rule(surface=Surface(surface))
    values = {**environ, **binding.scope, **child}
    return Built(config, host, home, trace, values, rule)


def _use_color(stream: Any) -> bool:
    return bool(getattr(stream, "isatty", lambda: False)()) and "NO_COLOR" not in os.environ


def _masker(built: Built, snap: dict[str, Any]) -> Callable[[str], bool]:
    """Whether ``--show-values`` must mask a key's value: the build's secret rule says so.

    Masked: a name the rule denies this child, and any key whose value is, or
    holds, a secret value of the build (``Host.secret_rule``: the rule the
    factory applied).
    """
    del snap
    rule = built.rule

    def must_mask(key: str) -> bool:
        value = built.values.get(key)
        if rule.denies(key, value) is not None:
            return True
        return value is not None and rule.find(value, own=rule.is_own(key, value)) is not None

    return must_mask


def _cmd_explain(args: argparse.Namespace) -> int:
    built = _build(_config(args), args.home, args.surface)
    snap = built.snapshot()
    must_mask = _masker(built, snap)
    if args.json:
        if args.show_values:
            snap["values"] = {
                k: _report.MASK if must_mask(k) else built.values.get(k) for k in snap["keys"]
            }
        print(_report.format_json(snap), end="")
    else:
        values = built.values if args.show_values else None
        text = _report.format_explain(
            snap, values=values, is_tier1=must_mask, color=_use_color(sys.stdout)
        )
        print(text, end="")
        print(built.trace.summary())
    findings = bool(snap["policy"]["problems"] or snap["warnings"])
    return 1 if args.strict and findings else 0


def _cmd_snapshot(args: argparse.Namespace) -> int:
    snap = _build(_config(args), args.home, args.surface).snapshot()
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
        return _build(_config(args), name or None, surface or "terminal").snapshot()
    return parse_snapshot(_read_operand(operand), operand, _report.SNAPSHOT_VERSION)


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
    entries = _report.diff_snapshots(snap_a, snap_b, labels=labels)
    comparable = _report.fingerprints_comparable(snap_a, snap_b)
    if args.json:
        payload = {
            "a": args.a,
            "b": args.b,
            "fingerprints_comparable": comparable,
            "differences": [asdict(e) for e in entries],
        }
        print(_report.format_json(payload), end="")
    else:
        print(_report.format_diff(entries, labels, comparable=comparable), end="")
    return 1 if entries else 0


def _read_plugin_manifest(directory: str) -> tuple[str, bytes]:
    """``plugin.yaml``, else ``plugin.yml``, through the one non-blocking reader."""
    from envscope.files._fs import read_regular_file
    from envscope.manifests._schema import MAX_MANIFEST_BYTES

    for name in ("plugin.yaml", "plugin.yml"):
        path = os.path.join(directory, name)
        try:
            data = read_regular_file(path, MAX_MANIFEST_BYTES)
        except FileNotFoundError:
            continue
        except OSError as exc:
            raise UsageError(f"{path}: cannot read manifest: {exc.strerror}") from None
        if data is None:
            raise UsageError(
                f"{path}: not a regular file (a FIFO, directory, socket or device): not read"
            )
        return path, data
    raise UsageError(f"{directory}: no plugin.yaml or plugin.yml")


def _scan_plugin(directory: str) -> _report.ScanReport:
    from envscope.errors import ManifestError
    from envscope.manifests._schema import parse_manifest

    path, data = _read_plugin_manifest(directory)
    try:
        manifest = parse_manifest(data, path)
    except ManifestError as exc:
        problem = Problem(exc.path, exc.message, exc.line, exc.field)
        return _report.ScanReport(directory, {}, [problem])
    names = [e.name for e in manifest.entries if e.is_secret]
    return _report.ScanReport(directory, {path: names}, [])


def _cmd_scan(args: argparse.Namespace) -> int:
    if args.plugin:
        reports = [_scan_plugin(args.plugin)]
    else:
        config = _config(args)
        host = config.build_host({})
        homes = args.homes or [config.launch_home, *config.homes.values()]
        reports = []
        for home_arg in homes:
            home = config.resolve_home(home_arg)
            decl = host.manifest_declarations(home)
            cwd = os.getcwd()
            secrets: dict[str, list[str]] = {}
            for name, d in decl.secrets.items():
                secrets.setdefault(_report.display_path(d.origin.path or "?", cwd), []).append(name)
            problems = [_report.relative_problem(p, cwd) for p in decl.problems]
            reports.append(_report.ScanReport(config.home_name(home), secrets, problems))
    if args.json:
        print(_report.format_json(_report.scan_json(reports)), end="")
    else:
        print(_report.format_scan(reports), end="")
    return 1 if any(r.problems for r in reports) else 0


# The dispositions Python sets at start-up that survive exec (a handler does not, an
# ignored signal does): the ones subprocess.Popen(restore_signals=True) restores.
_RESTORED_SIGNALS = ("SIGPIPE", "SIGXFZ", "SIGXFSZ")


def restore_signals() -> None:
    """Put back the default disposition of every signal Python ignores at start-up."""
    for name in _RESTORED_SIGNALS:
        number = getattr(signal, name, None)
        if number is not None:
            signal.signal(number, signal.SIG_DFL)


def _exec(cmd: Sequence[str], env: Mapping[str, str]) -> int:
    if os.name != "posix":  # pragma: no cover - exercised on Windows only
        return subprocess.run(list(cmd), env=dict(env), check=False).returncode
    restore_signals()  # the child starts as a spawn would, not with Python's SIG_IGNs
    os.execvpe(cmd[0], list(cmd), dict(env))  # replaces this process
    return 0  # reached only when a test stubs execvpe


def _check_command(cmd: Sequence[str]) -> None:
    """Refuse what no exec accepts: no command, an empty name, NUL, unencodable text."""
    if not cmd:
        raise UsageError("run: no command given (envscope run [--home H] -- CMD ARGS...)")
    if not cmd[0]:
        raise UsageError("run: the command name is empty")
    for position, arg in enumerate(cmd):
        what = "the command name" if position == 0 else f"argument {position}"
        if "\0" in arg:
            raise UsageError(f"run: {what} holds a NUL character")
        try:
            os.fsencode(arg)
        except UnicodeError:
            raise UsageError(f"run: {what} cannot be encoded for the file system") from None


def _cmd_run(args: argparse.Namespace) -> int:
    cmd = list(args.cmd)
    if cmd and cmd[0] == "--":
        cmd = cmd[1:]
    _check_command(cmd)
    config = _config(args)
    host = config.build_host(dict(os.environ))
    host.load_launch_env()
    with host.routed(config.resolve_home(args.home)):
        env = host.build_subprocess_env(surface=Surface(args.surface))
    try:
        return _exec(cmd, env)
    except OSError as exc:
        raise UsageError(f"run: cannot execute {cmd[0]!r}: {exc.strerror}") from None


def _cmd_check_spawns(args: argparse.Namespace) -> int:
    from envscope.audit._spawn_check import check_paths, exit_status, format_spawn_sites

    sites, errors = check_paths(args.paths)
    print(format_spawn_sites(sites, errors, show_allowed=args.show_allowed), end="")
    return exit_status(sites, errors)


_COMMANDS = {
    "explain": _cmd_explain,
    "snapshot": _cmd_snapshot,
    "diff": _cmd_diff,
    "scan": _cmd_scan,
    "run": _cmd_run,
    "check-spawns": _cmd_check_spawns,
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
        args = _parser().parse_args(argv)
    except SystemExit as exc:  # argparse: --help (0) or a usage error (2)
        code = exc.code if isinstance(exc.code, int) else 2
    else:
        try:
            code = _COMMANDS[args.command](args)
        except (UsageError, EnvscopeError) as exc:
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
