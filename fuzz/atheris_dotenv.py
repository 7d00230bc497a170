"""Coverage-guided fuzzing of envscope's dotenv reader with atheris (optional, not a test).

The property suite (``tests/property``) is the gate; this harness digs deeper
when someone has time to burn. ``atheris`` is not a dependency of envscope:

    .venv/bin/pip install atheris
    mkdir -p /tmp/dotenv-corpus
    .venv/bin/python fuzz/atheris_dotenv.py -timeout=1 -max_total_time=300 \\
        /tmp/dotenv-corpus fixtures/dotenv

libFuzzer writes new inputs into the first directory; ``fixtures/dotenv`` only
seeds it. ``-timeout=1`` turns any input that takes more than a second (a
quadratic regex, a hang) into a reported crash.

Invariants, per input: decoding and parsing raise nothing but ``DotenvError``
(naming the file); every key is non-empty with no ``=`` or NUL; no value holds
NUL; ``${VAR}`` resolution equals python-dotenv's own.
"""

from __future__ import annotations

import sys

import atheris  # type: ignore[import-untyped, import-not-found, unused-ignore]

with atheris.instrument_imports():
    from dotenv.variables import parse_variables

    from envscope.errors import DotenvError
    from envscope.files._dotenv import _interpolate, parse_dotenv

ENVIRON = {"HOME": "/home/op", "OPENAI_API_KEY": "fake-OPENAI_API_KEY"}
PATH = "fuzz.env"


def check_parse(text: str, override: bool) -> None:
    """parse_dotenv yields valid names and values or a DotenvError naming the file."""
    try:
        result = parse_dotenv(text, path=PATH, environ=ENVIRON, override=override)
    except DotenvError as exc:
        if exc.path != PATH:
            raise AssertionError(f"error names {exc.path!r}, not the file") from exc
        return
    for key, value in result.items():
        if not key or "=" in key or "\x00" in key or "\x00" in value:
            raise AssertionError(f"invalid entry for key {key!r}")


def check_interpolation(value: str) -> None:
    """envscope's linear resolver equals python-dotenv's (short values: its regex is quadratic)."""
    if len(value) > 512:
        return
    expected = "".join(atom.resolve(ENVIRON) for atom in parse_variables(value))
    if _interpolate(value, ENVIRON) != expected:
        raise AssertionError("interpolation differs from python-dotenv")


def test_one_input(data: bytes) -> None:
    """One libFuzzer input: as raw file bytes, and as structured text."""
    if data[:1] == b"\x00":
        fdp = atheris.FuzzedDataProvider(data[1:])
        override = fdp.ConsumeBool()
        text = fdp.ConsumeUnicodeNoSurrogates(len(data))
        check_parse(text, override)
        check_interpolation(text)
        return
    try:
        text = data.decode("utf-8-sig")  # what read_dotenv does with the file's bytes
    except UnicodeDecodeError:
        return
    check_parse(text, False)


def main() -> None:
    """Run libFuzzer over ``test_one_input`` (arguments are libFuzzer's)."""
    atheris.Setup(sys.argv, test_one_input)
    atheris.Fuzz()


if __name__ == "__main__":
    main()
