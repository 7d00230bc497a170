"""Property: no envscope error holds an input value anywhere in its chain.

For every kind of error the suites provoke (bad dotenv bytes, config and
catalog YAML and schema errors, manifest errors, a bad fingerprint key, an
unusable ``extra``), a generated secret is planted in the input; the error, its
message, ``repr`` of its args, its attributes and every exception reachable
through ``__cause__`` and ``__context__`` (and their args) must not contain it.
"""

from __future__ import annotations

import os
import tempfile
from collections.abc import Callable, Iterator
from pathlib import Path

import pytest
from hypothesis import given
from hypothesis import strategies as st

from envscope import Host, Surface
from envscope.audit._fingerprint import FINGERPRINT_FILE, load_or_create_key
from envscope.cli.config import load_config
from envscope.errors import EnvscopeError
from envscope.files._dotenv import read_dotenv
from envscope.manifests._schema import parse_manifest
from envscope.policy.catalog import Catalog

pytestmark = pytest.mark.property

SECRETS = st.builds(
    "vQ7{}".format,  # a marker no message word holds, then any letters and digits
    st.text(
        alphabet="abcdefghijkmnopqrstuvwxyzABCDEFGHJKLMNPQRSTUVWXYZ23456789",
        min_size=9,
        max_size=37,
    ),
)


def chain(exc: BaseException) -> Iterator[BaseException]:
    """The error and every exception reachable from it (cause, context, exceptions in args)."""
    seen: set[int] = set()
    todo = [exc]
    while todo:
        current = todo.pop()
        if id(current) in seen:
            continue
        seen.add(id(current))
        yield current
        for linked in (current.__cause__, current.__context__):
            if linked is not None:
                todo.append(linked)
        todo.extend(a for a in current.args if isinstance(a, BaseException))


def texts_of(exc: BaseException) -> Iterator[str]:
    """Every text an exception shows: str, repr, repr of args, attributes, notes."""
    yield str(exc)
    yield repr(exc)
    yield repr(exc.args)
    yield repr(getattr(exc, "__notes__", None))
    for name, value in vars(exc).items():
        if not name.startswith("__"):
            yield f"{name}={value!r}"
    for attr in ("object", "doc", "input", "problem_mark", "context_mark"):  # parser internals
        if hasattr(exc, attr):
            yield repr(getattr(exc, attr))
            buffer = getattr(getattr(exc, attr), "buffer", None)
            if buffer is not None:
                yield repr(buffer)


def assert_clean(exc: BaseException, secret: str) -> None:
    """No text of the error or of anything chained to it holds the secret."""
    for linked in chain(exc):
        for text in texts_of(linked):
            assert secret not in text, f"{type(linked).__name__} holds the value: {text[:200]}"


def write(directory: Path, name: str, data: bytes) -> str:
    """Write a file and return its path."""
    path = directory / name
    path.write_bytes(data)
    return str(path)


def _dotenv(d: Path, s: str) -> None:
    read_dotenv(write(d, ".env", b"KEY=" + s.encode() + b"\xff\xfe\n"))


def _dotenv_nul(d: Path, s: str) -> None:
    read_dotenv(write(d, ".env", b"KEY=" + s.encode() + b"\x00x\n"))


def _config_schema(d: Path, s: str) -> None:
    load_config(write(d, "c.yaml", f"launch_home: a\nmultiplex: {s}\n".encode()))


def _config_nested_schema(d: Path, s: str) -> None:
    load_config(
        write(
            d, "c.yaml", f"launch_home: a\nsurfaces: {{script: {{set: {{A: [{s}]}}}}}}\n".encode()
        )
    )


def _config_yaml(d: Path, s: str) -> None:
    load_config(write(d, "c.yaml", f"launch_home: [{s}\n  bad: ]\n".encode()))


def _config_tag(d: Path, s: str) -> None:
    load_config(write(d, "c.yaml", f"launch_home: !!int {s}\n".encode()))


def _config_utf8(d: Path, s: str) -> None:
    load_config(write(d, "c.yaml", f"launch_home: {s}".encode() + b"\xff\n"))


def _catalog_schema(d: Path, s: str) -> None:
    Catalog.from_file(write(d, "cat.yaml", f"tier1: [{s}-x]\n".encode()))


def _catalog_version(d: Path, s: str) -> None:
    Catalog.from_file(write(d, "cat.yaml", f"version: {s}\n".encode()))


def _catalog_yaml(d: Path, s: str) -> None:
    Catalog.from_yaml(f"tier1: {{{s}\n".encode(), source="cat.yaml")


def _manifest_schema(d: Path, s: str) -> None:
    parse_manifest(f"name: x\nrequires_env: {s}\n".encode(), str(d / "plugin.yaml"))


def _manifest_flag(d: Path, s: str) -> None:
    parse_manifest(
        f"name: x\nrequires_env:\n  - name: A_TOKEN\n    secret: {s}\n".encode(),
        str(d / "plugin.yaml"),
    )


def _manifest_int(d: Path, s: str) -> None:
    parse_manifest(f"name: !!int {s}\n".encode(), str(d / "plugin.yaml"))


def _key_file_binary(d: Path, s: str) -> None:
    path = d / FINGERPRINT_FILE
    fd = os.open(path, os.O_WRONLY | os.O_CREAT, 0o600)
    os.write(fd, s.encode() + b"\xff")
    os.close(fd)
    load_or_create_key(str(d), None)


def _key_file_short(d: Path, s: str) -> None:
    path = d / FINGERPRINT_FILE
    fd = os.open(path, os.O_WRONLY | os.O_CREAT, 0o600)
    os.write(fd, s[:10].encode())
    os.close(fd)
    load_or_create_key(str(d), None)


def _key_env_short(d: Path, s: str) -> None:
    load_or_create_key(str(d), s[:10])


def _extra_oversized(d: Path, s: str) -> None:
    Host(d, environ={}).build_subprocess_env({}, surface=Surface.MCP, extra={"BIG": s * 20000})


def _extra_oversized_traced(d: Path, s: str) -> None:
    Host(d, environ={"ENVSCOPE_FINGERPRINT_KEY": "k" * 20}).explain(
        {}, surface=Surface.TERMINAL, extra={"BIG": s * 20000}
    )


def _extra_nul(d: Path, s: str) -> None:
    Host(d, environ={}).build_subprocess_env({}, extra={"K": s + "\x00"})


def _extra_not_scalar(d: Path, s: str) -> None:
    Host(d, environ={}).build_subprocess_env({}, extra={"K": [s]})


def _extra_bad_name(d: Path, s: str) -> None:
    Host(d, environ={}).build_subprocess_env({}, extra={f"K={s}": "v"})


CASES: dict[str, Callable[[Path, str], None]] = {
    f.__name__.lstrip("_"): f
    for f in (
        _dotenv,
        _dotenv_nul,
        _config_schema,
        _config_nested_schema,
        _config_yaml,
        _config_tag,
        _config_utf8,
        _catalog_schema,
        _catalog_version,
        _catalog_yaml,
        _manifest_schema,
        _manifest_flag,
        _manifest_int,
        _key_file_binary,
        _key_file_short,
        _key_env_short,
        _extra_oversized,
        _extra_oversized_traced,
        _extra_nul,
        _extra_not_scalar,
    )
}


@pytest.mark.parametrize("case", sorted(CASES))
@given(secret=SECRETS)
def test_no_error_chain_holds_the_input_value(case: str, secret: str) -> None:
    """Each error kind, any planted value: the value is nowhere in the error or its chain."""
    with tempfile.TemporaryDirectory() as top:
        directory = Path(top)
        os.chmod(directory, 0o700)
        with pytest.raises(EnvscopeError) as info:
            CASES[case](directory, secret)
        assert_clean(info.value, secret)


def test_a_bad_name_in_extra_is_named_up_to_its_equals_sign() -> None:
    """A docker-style ``K=value`` key: the error names ``K``, never what follows the ``=``."""
    with tempfile.TemporaryDirectory() as top, pytest.raises(EnvscopeError) as info:
        _extra_bad_name(Path(top), "value-part")
    assert "value-part" not in str(info.value)
    assert "'K=…'" in str(info.value)  # cut at the "=", marked as cut
    assert info.value.__context__ is None
