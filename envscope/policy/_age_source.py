"""Age-encrypted dotenv files as a secret source (exported by ``envscope.policy.sources``).

``AgeFileSource`` decrypts each file once per fetch with the ``age`` CLI (run by
``run_source_cli``: no environment but ``PATH`` and ``LANG``, no terminal, a
timeout) and reads the plaintext with envscope's one dotenv parser. Only the
names an entry lists are taken from a file: a file's other names stay in it.

age's own errors may quote its input (a plaintext file's first line, when the
file is not encrypted), so a failure never quotes its stderr: a table of the
documented error shapes (``_AGE_FAILURES``) says what failed, and anything
else is "age could not decrypt the file".
"""

from __future__ import annotations

import os
from collections.abc import Mapping, Sequence

from envscope.errors import ConfigurationError, DotenvError, SourceError
from envscope.policy._cli_source import run_source_cli
from envscope.policy._source_entries import _EntrySource, _missing, _timeout

__all__ = ["AgeFileSource"]

_AGE_FAILURES = (
    ("no identity matched", "no identity matches the file's recipients"),
    ("failed to open input file", "the file cannot be opened"),
    ("failed to read header", "the file is not age-encrypted"),
    (
        "passphrase-encrypted but identities",
        "the file is encrypted to a passphrase, not an identity",
    ),
    ("could not read passphrase", "an identity needs a passphrase (no terminal to ask on)"),
    ("failed to open identity file", "an identity file cannot be opened"),
    ("failed to read identity", "an identity file holds no identity"),
)
"""(what age's stderr holds, what the ``SourceError`` says): age 1.x's messages."""


def _age_failure(stderr: str) -> str:
    """What an age failure was, from its (never quoted) stderr."""
    for marker, said in _AGE_FAILURES:
        if marker in stderr:
            return said
    return "age could not decrypt the file"


class AgeFileSource(_EntrySource):
    """A secret source over age-encrypted dotenv files: ``age --decrypt -i IDENTITY FILE``.

    ``entries`` maps a home (``"*"``: every home) to ``{NAME: file}``: ``NAME``
    is read from the decrypted ``file``, a dotenv text (a relative path is the
    home's own file, so ``{"*": {"GH_TOKEN": "secrets.env.age"}}`` reads each
    home's ``secrets.env.age``). Each file is decrypted once per fetch with the
    ``identities`` (age identity files; a path, or several). ``${VAR}`` in the
    file resolves against the file alone, never the host's env. ``missing``:
    a listed name the file does not hold raises a ``SourceError``
    (``"raise"``, the default) or stays unset (``"unset"``).
    """

    _needs = "a file path"

    def __init__(
        self,
        entries: Mapping[str, Mapping[str, str]],
        *,
        identities: str | Sequence[str],
        name: str = "age",
        executable: str = "age",
        timeout: float = 10.0,
        missing: str = "raise",
    ) -> None:
        found = (identities,) if isinstance(identities, str) else tuple(identities)
        if not found or not all(isinstance(i, str) and i for i in found):
            raise ConfigurationError("AgeFileSource: identities must name one or more files")
        _missing("AgeFileSource", missing)
        super().__init__(name, entries)
        self.identities = tuple(os.path.abspath(os.path.expanduser(i)) for i in found)
        self.executable = executable
        self.timeout = _timeout("AgeFileSource", timeout)
        self.missing = missing

    def _argv(self, exe: str, path: str) -> tuple[str, ...]:
        flags = [arg for identity in self.identities for arg in ("--identity", identity)]
        return (exe, "--decrypt", *flags, path)

    def fetch(self, home: str) -> Mapping[str, str]:
        """Each listed name from its file, each file decrypted once (a ``SourceError`` else)."""
        import shutil

        from envscope.files._dotenv import parse_dotenv

        by_file: dict[str, list[str]] = {}
        for key, ref in sorted(self._for(home).items()):
            by_file.setdefault(os.path.join(home, os.path.expanduser(ref)), []).append(key)
        exe = shutil.which(self.executable) or self.executable
        values: dict[str, str] = {}
        for path, keys in by_file.items():
            text = run_source_cli(
                self._name, path, self._argv(exe, path), {}, timeout=self.timeout,
                failure_of=_age_failure,
            )  # fmt: skip
            failure: SourceError | None = None
            try:
                found = parse_dotenv(text, path=path, environ={}, universal_newlines=True)
            except DotenvError as err:  # names the line, never a value
                where = "" if err.line is None else f" (line {err.line})"
                failure = SourceError(self._name, path, f"no dotenv text{where}: {err.message}")
            if failure is not None:  # raised outside the handler: no context kept
                raise failure
            for key in keys:
                if key in found:
                    values[key] = found[key]
                elif self.missing == "raise":
                    raise SourceError(self._name, path, f"the file holds no {key}")
        return values
