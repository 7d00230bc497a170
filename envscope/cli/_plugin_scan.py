"""``envscope scan --plugin``: what a host declares from one plugin, by the host's own rule.

The plugin is a directory (its ``plugin.yaml``, else ``plugin.yml``) or that
manifest file itself; the report lists every problem the manifest has, and
where the directory sits (a home's ``plugins/platforms/`` or ``plugins/``)
decides how it is judged, as the host judges it.
"""

from __future__ import annotations

import os

from envscope.cli._parser import UsageError
from envscope.manifests._probe import RootKind
from envscope.policy._declarations import Problem
from envscope.tools import _report

__all__ = ["plugin_target", "read_plugin_manifest", "root_of", "scan_plugin"]

_MANIFEST_NAMES = ("plugin.yaml", "plugin.yml")


def plugin_target(given: str) -> tuple[str, tuple[str, ...]]:
    """``scan --plugin``'s directory and the manifest names to try there.

    A plugin directory (``plugin.yaml``, else ``plugin.yml``), or the manifest file
    itself (``DIR/plugin.yaml``: that very file); anything else is a usage error.
    """
    name = os.path.basename(given)
    if name in _MANIFEST_NAMES and not os.path.isdir(given):
        return os.path.dirname(given) or os.curdir, (name,)
    if not os.path.isdir(given) and os.path.lexists(given):
        raise UsageError(
            f"{given}: --plugin takes a plugin directory or its plugin.yaml (plugin.yml), "
            "the names a host reads"
        )
    return given, _MANIFEST_NAMES


def read_plugin_manifest(
    directory: str, names: tuple[str, ...] = _MANIFEST_NAMES
) -> tuple[str, bytes]:
    """``plugin.yaml``, else ``plugin.yml`` (or ``names``), through the one non-blocking reader."""
    from envscope.files._fs import read_regular_file
    from envscope.manifests._schema import MAX_MANIFEST_BYTES

    for name in names:
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
    raise UsageError(f"{directory}: no {' or '.join(names)}")


def root_of(directory: str) -> RootKind | None:
    """The plugin root a directory sits in by its place: ``plugins/platforms/``, ``plugins/``."""
    parent = os.path.dirname(os.path.abspath(directory))
    if os.path.basename(parent) == "platforms" and os.path.basename(os.path.dirname(parent)) == (
        "plugins"
    ):
        return RootKind.PLATFORMS
    return RootKind.FLAT if os.path.basename(parent) == "plugins" else None


def scan_plugin(given: str) -> _report.ScanReport:
    """What a host declares from one plugin directory: the host's own rule (``counting``).

    In a home's ``plugins/platforms/`` or ``plugins/`` the directory is judged
    as the host judges it there; anywhere else (a plugin's source tree) the
    report says what each place would make of it.
    """
    from envscope.errors import ManifestError
    from envscope.manifests._counting import counting
    from envscope.manifests._schema import parse_manifest

    directory, manifest_names = plugin_target(given)
    path, data = read_plugin_manifest(directory, manifest_names)
    try:
        manifest = parse_manifest(data, path)
    except ManifestError as exc:
        problems = [Problem(p.path, p.message, p.line, p.field) for p in exc.problems]
        return _report.ScanReport(directory, {}, problems)
    names = [e.name for e in manifest.entries if e.is_secret]
    root = root_of(directory)
    flat = counting(RootKind.FLAT, manifest)
    if root is None:
        note = (
            "in a home's plugins/platforms/: its secrets are declared; "
            f"as a flat plugins/{os.path.basename(os.path.abspath(directory))}/: {flat.reason}"
        )
        verdict = flat
    else:
        verdict = counting(root, manifest)
        note = verdict.reason
    problems = []
    if verdict.problem is not None:
        problems.append(Problem(path, verdict.problem, manifest.kind_line, "kind"))
    secrets = {path: names} if verdict.declares or root is None else {}
    warnings = [Problem(path, u.message, u.line, u.field) for u in manifest.unknown]
    return _report.ScanReport(directory, secrets, problems, {path: note}, warnings)
