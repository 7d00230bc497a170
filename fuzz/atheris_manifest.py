"""Coverage-guided fuzzing of envscope's plugin-manifest parser with atheris (optional).

    .venv/bin/pip install atheris
    mkdir -p /tmp/manifest-corpus
    .venv/bin/python fuzz/atheris_manifest.py -timeout=1 -max_total_time=300 \\
        /tmp/manifest-corpus fixtures/manifests/good fixtures/manifests/bad

Invariants, per input: ``parse_manifest`` raises nothing but ``ManifestError``
(naming the file); every entry of a parsed manifest has a non-empty name
without ``=``, NUL or whitespace, and a bool secret decision. Both PyYAML
loaders are exercised (libyaml's, when present, and the pure-Python one).
"""

from __future__ import annotations

import sys

import atheris  # type: ignore[import-untyped, import-not-found, unused-ignore]

with atheris.instrument_imports():
    import yaml

    import envscope.files._yaml as yaml_reader
    from envscope.errors import ManifestError
    from envscope.manifests._schema import parse_manifest

PATH = "fuzz/plugin.yaml"
LOADERS = (getattr(yaml, "CSafeLoader", yaml.SafeLoader), yaml.SafeLoader)


def check(data: bytes) -> None:
    """A valid manifest or a ManifestError naming the file."""
    try:
        manifest = parse_manifest(data, PATH)
    except ManifestError as exc:
        if exc.path != PATH:
            raise AssertionError(f"error names {exc.path!r}, not the file") from exc
        return
    for entry in manifest.entries:
        name = entry.name
        if not name or "=" in name or "\x00" in name or any(c.isspace() for c in name):
            raise AssertionError(f"invalid name in {entry.field}")
        if not isinstance(entry.is_secret, bool):
            raise AssertionError(f"non-bool secret decision in {entry.field}")


def test_one_input(data: bytes) -> None:
    """One libFuzzer input, parsed with each loader in turn."""
    original = yaml_reader._loader_class
    try:
        for loader in LOADERS:
            yaml_reader._loader_class = lambda loader=loader: loader  # type: ignore[misc]
            check(data)
    finally:
        yaml_reader._loader_class = original


def main() -> None:
    """Run libFuzzer over ``test_one_input`` (arguments are libFuzzer's)."""
    atheris.Setup(sys.argv, test_one_input)
    atheris.Fuzz()


if __name__ == "__main__":
    main()
