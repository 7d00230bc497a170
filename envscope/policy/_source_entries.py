"""What every source over per-home ``{NAME: reference}`` entries shares, and the keyring.

``_per_home`` is the one rule a home's entries follow (laid over ``"*"``'s);
``_EntrySource`` checks entries, keeps a home key as its identity, and answers
``supplied_names`` and ``reference_of``. ``KeyringSource`` reads the OS keyring.
The public names are exported by ``envscope.policy.sources``.
"""

from __future__ import annotations

import math
from collections.abc import Mapping

from envscope._inputs import portable_name
from envscope.errors import ConfigurationError, SourceError

__all__ = ["KeyringSource"]


def _per_home(entries: Mapping[str, Mapping[str, str]], home: str) -> dict[str, str]:
    """A home's entries laid over every home's (``"*"``): the one rule every source uses."""
    found = dict(entries.get("*", {}))
    found.update(entries.get(home, {}))
    return found


def _missing(owner: str, missing: object) -> None:
    """``missing`` is ``"raise"`` or ``"unset"`` (what an entry the backend lacks does)."""
    if missing not in ("raise", "unset"):
        raise ConfigurationError(f"{owner}: missing must be 'raise' or 'unset', not {missing!r}")


MAX_TIMEOUT_S = 86_400.0
"""A source's longest ``timeout``: a day (longer is no bound; the OS takes no infinity)."""


def seconds_problem(value: object, *, most: float = math.inf) -> str | None:
    """What is wrong with a number of seconds (a ``ttl``, a ``timeout``); None: nothing.

    The one rule for both seams, a keyword in Python and a key of the config
    file (``cli/_sources_config``): an ``int`` or a ``float`` (never a
    ``bool``) greater than 0 and at most ``most`` (``not value > 0``: NaN fails).
    """
    if isinstance(value, bool) or not isinstance(value, (int, float)) or not value > 0:
        return "must be a number of seconds greater than 0"
    if not value <= most:
        return f"must be a number of seconds greater than 0 and at most {most:g}"
    return None


def _timeout(owner: str, timeout: object) -> float:
    """A source's ``timeout``: a finite number of seconds up to a day, else an error naming it.

    A NaN, an infinity or a number the OS cannot take would raise ``ValueError``
    or ``OverflowError`` at the first fetch, not a ``SourceError``.
    """
    problem = seconds_problem(timeout, most=MAX_TIMEOUT_S)
    if problem is not None:
        raise ConfigurationError(f"{owner}: timeout {problem}")
    return float(timeout)  # type: ignore[arg-type]  # checked above


class _EntrySource:
    """What every source over per-home ``{NAME: reference}`` entries shares.

    ``entries`` maps a home (``"*"``: every home; any other key is a path, kept
    as its home identity, so a relative or symlinked path still names the home
    the host passes) to ``{NAME: reference}``; each reference passes ``valid``
    or the constructor raises a ``ConfigurationError`` naming the entry.
    ``supplied_names`` and ``reference_of`` read them; ``_describe`` says how a
    reference appears in errors and traces (never a value).
    """

    credential_names: tuple[str, ...] = ()
    _needs = "a reference"

    def __init__(self, name: str, entries: Mapping[str, Mapping[str, str]]) -> None:
        from envscope._inputs import home_identity

        kind = type(self).__name__
        if not isinstance(name, str) or not name:
            raise ConfigurationError(f"{kind}: name must be a non-empty string")
        checked: dict[str, dict[str, str]] = {}
        for home, names in entries.items():
            for key, ref in names.items():
                if not portable_name(key) or not isinstance(ref, str) or not self._valid(ref):
                    raise ConfigurationError(
                        f"{kind} {name!r}: entry {key!r} of {home!r} needs a variable name "
                        f"and {self._needs}"
                    )
            identity = home if home == "*" else home_identity(home)
            if identity in checked:  # two spellings of one home: one would vanish in silence
                raise ConfigurationError(
                    f"{kind} {name!r}: {home!r} names a home another key already names "
                    f"({identity}): give its entries once"
                )
            checked[identity] = dict(names)
        self._name = name
        self._entries = checked

    def _valid(self, reference: str) -> bool:
        return bool(reference)

    def _describe(self, reference: str) -> str:
        return reference

    @property
    def name(self) -> str:
        """The source's name (in traces and errors)."""
        return self._name

    def _for(self, home: str) -> dict[str, str]:
        return _per_home(self._entries, home)

    def supplied_names(self, home: str) -> frozenset[str]:
        """The names this source supplies for ``home``, whether or not a fetch answers."""
        return frozenset(self._for(home))

    def reference_of(self, home: str, name: str) -> str | None:
        """Where ``name`` comes from for ``home`` (traces show it; never a value), or None."""
        ref = self._for(home).get(name)
        return None if ref is None else self._describe(ref)


class KeyringSource(_EntrySource):
    """A secret source over the OS keyring (``pip install envscope[keyring]``).

    ``entries`` maps a home (``"*"``: every home) to ``{NAME: user}``: the value
    of ``NAME`` is ``keyring.get_password(service, user)`` (Secret Service on
    Linux, Keychain on macOS, Windows Credential Locker). ``missing`` says what
    an entry the keyring does not hold does: ``"raise"`` (the default) raises
    a ``SourceError``, ``"unset"`` leaves the name unset. A keyring that cannot
    answer (no backend, a locked collection, a D-Bus error) always raises a
    ``SourceError`` naming the service and user, never the backend's message
    (it may quote a value). ``keyring`` is imported on the first fetch, never
    at import. The OS session unlocks the keyring: no credential variable.
    """

    _needs = "a non-empty user"

    def __init__(
        self,
        service: str,
        entries: Mapping[str, Mapping[str, str]],
        *,
        name: str = "keyring",
        missing: str = "raise",
    ) -> None:
        if not isinstance(service, str) or not service:
            raise ConfigurationError("KeyringSource: service must be a non-empty string")
        _missing("KeyringSource", missing)
        self.service = service
        self.missing = missing
        super().__init__(name, entries)

    def _describe(self, reference: str) -> str:
        return f"service {self.service!r}, user {reference!r}"

    def fetch(self, home: str) -> Mapping[str, str]:
        """Each entry's password from the keyring (see the class docstring for failures)."""
        import importlib.util

        if importlib.util.find_spec("keyring") is None:
            raise SourceError(
                self._name, f"service {self.service!r}",
                "the keyring package is not installed (pip install envscope[keyring])",
            )  # fmt: skip
        import keyring  # optional dependency: on first use
        from keyring.errors import KeyringError

        values: dict[str, str] = {}
        for key, user in sorted(self._for(home).items()):
            failure: SourceError | None = None
            try:
                value = keyring.get_password(self.service, user)
            except KeyringError as exc:  # the backend's message may quote a value: not kept
                failure = SourceError(
                    self._name,
                    self._describe(user),
                    f"the keyring cannot answer ({type(exc).__name__})",
                )
                value = None
            if failure is not None:
                raise failure
            if value is None:
                if self.missing == "raise":
                    raise SourceError(self._name, self._describe(user), f"no entry for {key}")
                continue
            values[key] = value
        return values
