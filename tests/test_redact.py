"""``envscope.redact``: every value masked, whole or inside text, in one piece or streamed.

A table over the owning class, then two properties: the automaton's answer
equals a naive leftmost-longest scan (the reference), and a stream cut at any
points answers exactly what the whole text does, holding back less than the
longest value. Together: no value of 8 characters or more survives, and
nothing else changes.
"""

from __future__ import annotations

import itertools
import json
import os
import subprocess
from pathlib import Path

import pytest
from hypothesis import given, settings
from hypothesis import strategies as st

from envscope import Catalog, ConfigurationError, Host, StaticSource
from envscope.redact import FLOOR, RedactingFilter, Redactor, for_host, spellings

GH = "ghp_" + "A1b2C3d4E5f6G7h8I9j0" * 2


@pytest.mark.parametrize(
    ("secrets", "text", "expected"),
    [
        ({"GH_TOKEN": GH}, f"token: {GH}\n", "token: [REDACTED:GH_TOKEN]\n"),
        ({"GH_TOKEN": GH}, f"{GH}{GH}", "[REDACTED:GH_TOKEN][REDACTED:GH_TOKEN]"),
        ({"A": "short7!"}, "short7! stays: under the floor", "short7! stays: under the floor"),
        ({"A": "abcdefgh", "B": "abcdefghij"}, "xabcdefghijx", "x[REDACTED:B]x"),  # longest
        ({"A": "abcdefgh", "B": "defghijk"}, "abcdefghijk", "[REDACTED:A]ijk"),  # leftmost
        ({"Z": "same-value-1", "A": "same-value-1"}, "same-value-1", "[REDACTED:A]"),
        ({"P": "pässwörd-ünïcode"}, "x pässwörd-ünïcode y", "x [REDACTED:P] y"),
        ({}, "nothing to mask", "nothing to mask"),
        ({"P": 'pa"ss\nword/1'}, '{"p": "pa\\"ss\\nword/1"}', '{"p": "[REDACTED:P]"}'),
        ({"P": "p@ss w/rd&1"}, "GET /?pw=p%40ss%20w%2Frd%261 and pw=p%40ss+w%2Frd%261",
         "GET /?pw=[REDACTED:P] and pw=[REDACTED:P]"),
        ({"P": "pässwörd-1"}, '"p\\u00e4ssw\\u00f6rd-1"', '"[REDACTED:P]"'),
        ({"K": "key-line-one\nkey-line-two"}, "a\r\nkey-line-one\r\nkey-line-two\r\nb",
         "a\r\n[REDACTED:K]\r\nb"),
        ({"K": "key-line-one\r\nkey-line-two"}, "x key-line-one\nkey-line-two y",
         "x [REDACTED:K] y"),
        ({"K": "key-line-one\nkey-line-two"}, '{"k": "key-line-one\\r\\nkey-line-two"}',
         '{"k": "[REDACTED:K]"}'),
    ],
    ids=["inside-text", "back-to-back", "floor", "longest-wins", "leftmost-wins",
         "first-name", "unicode", "no-values", "json-escaped", "url-encoded", "json-ascii",
         "lf-value-crlf-text", "crlf-value-lf-text", "crlf-json-escaped"],
)  # fmt: skip
def test_redact_table(secrets: dict[str, str], text: str, expected: str) -> None:
    redactor = Redactor(secrets)
    assert redactor.redact(text) == expected
    assert redactor.redact_bytes(text.encode()) == expected.encode()
    stream = redactor.stream()
    assert "".join([*(stream.feed(c) for c in text), stream.close()]) == expected


def test_a_utf8_value_split_inside_a_character_is_masked() -> None:
    redactor = Redactor({"P": "pässwörd-ünïcode"})
    data = "-> pässwörd-ünïcode <-".encode()
    stream = redactor.byte_stream()
    out = b"".join([*(stream.feed(data[i : i + 1]) for i in range(len(data))), stream.close()])
    assert out == b"-> [REDACTED:P] <-"


def test_no_value_in_its_repr_and_wrong_input_is_refused() -> None:
    assert GH not in repr(Redactor({"GH_TOKEN": GH}))
    with pytest.raises(ConfigurationError, match="string values"):
        Redactor({"A": 12345678})  # type: ignore[arg-type]
    stream = Redactor({"A": GH}).stream()
    stream.close()
    with pytest.raises(ConfigurationError, match="closed"):
        stream.feed("more")


def _reference(secrets: dict[str, str], text: str) -> str:
    """The naive scan: at each position the longest value starting there, else one character."""
    first: dict[str, str] = {}
    for name in sorted(secrets):
        if len(secrets[name]) >= FLOOR:
            for spelling in spellings(secrets[name]):
                first.setdefault(spelling, name)
    out, i = [], 0
    while i < len(text):
        found = [v for v in first if text.startswith(v, i)]
        if found:
            value = max(found, key=len)
            out.append(f"[REDACTED:{first[value]}]")
            i += len(value)
        else:
            out.append(text[i])
            i += 1
    return "".join(out)


ALPHABET = "abcé€ -\n"
values = st.text(alphabet=ALPHABET, min_size=1, max_size=14)
names = st.from_regex(r"[A-Z][A-Z_]{0,5}", fullmatch=True)


@settings(max_examples=300, deadline=None)
@given(
    secrets=st.dictionaries(names, values, max_size=6),
    pieces=st.lists(st.one_of(values, st.text(alphabet=ALPHABET, max_size=10)), max_size=12),
    cuts=st.lists(st.integers(min_value=0, max_value=200), max_size=8),
)
def test_a_stream_cut_anywhere_answers_as_the_reference(
    secrets: dict[str, str], pieces: list[str], cuts: list[int]
) -> None:
    """Texts built from the values and filler, cut at random points, str and bytes."""
    text = "".join(pieces)
    redactor = Redactor(secrets)
    expected = _reference(secrets, text)
    assert redactor.redact(text) == expected
    points = sorted({min(c, len(text)) for c in cuts} | {0, len(text)})
    stream = redactor.stream()
    longest = max(
        (len(f) for v in secrets.values() if len(v) >= FLOOR for f in spellings(v)), default=0
    )
    out = []
    for a, b in itertools.pairwise(points):
        out.append(stream.feed(text[a:b]))
        assert stream.held <= max(longest - 1, 0)  # nothing held longer than needed
    assert "".join([*out, stream.close()]) == expected
    data = text.encode()
    byte_stream = redactor.byte_stream()
    step = max(1, len(data) // 7)
    chunks = [data[i : i + step] for i in range(0, len(data), step)]
    streamed = b"".join([*(byte_stream.feed(c) for c in chunks), byte_stream.close()])
    assert streamed == redactor.redact_bytes(data) == expected.encode()
    for value in secrets.values():  # masks hold "[", which no value here does
        assert len(value) < FLOOR or value not in expected


# -- a redactor from a host ------------------------------------------------------------

FIXTURES = Path(__file__).resolve().parents[1] / "fixtures"
OPENAI = "sk-proj-" + "Q1w2E3r4T5y6U7i8O9p0" * 2
SOURCE_VALUE = "source-fetched-value-0123456789"
GRANTED = "granted-to-this-child-0123456789"
SHAPED = "sk_live_" + "4eC39HqLyjWDarjtT1zdp7dc"  # a Stripe live key's format


def _host(tmp_path: Path, environ: dict[str, str]) -> Host:
    (tmp_path / "launch").mkdir(parents=True, exist_ok=True)
    host = Host(tmp_path / "launch", environ=environ, catalog=Catalog.default())
    host.add_secret_source(StaticSource("vault", {"*": {"ACME_DSN": SOURCE_VALUE}}))
    host.load_launch_env()
    return host


def test_for_host_masks_every_secret_the_host_holds_and_nothing_else(tmp_path: Path) -> None:
    environ = {
        "PATH": "/usr/local/bin:/usr/bin:/bin",
        "HOME": "/home/operator",
        "OPENAI_API_KEY": OPENAI,  # declared by the catalog
        "BUILD_LABEL": SHAPED,  # an undeclared name holding a credential format
        "BUILD_ID": "88808f71-16f2-4171-a874-cf4690045443",
    }
    host = _host(tmp_path, environ)
    child = host.build_subprocess_env(extra={"DEPLOY_TOKEN": GRANTED}, grant=["DEPLOY_TOKEN"])
    assert child["DEPLOY_TOKEN"] == GRANTED
    redactor = for_host(host, child)
    text = " | ".join([OPENAI, SOURCE_VALUE, GRANTED, SHAPED, *environ.values()])
    out = redactor.redact(text)
    for secret in (OPENAI, SOURCE_VALUE, GRANTED, SHAPED):
        assert secret not in out
    assert "[REDACTED:OPENAI_API_KEY]" in out
    assert "[REDACTED:DEPLOY_TOKEN]" in out
    for plain in ("/usr/local/bin:/usr/bin:/bin", "/home/operator", environ["BUILD_ID"]):
        assert plain in out


def test_a_real_child_printing_its_granted_token_is_masked(tmp_path: Path) -> None:
    """bash prints the token it was granted: the output through the host's redactor is masked;
    the unredacted output is the token itself (the test can fail)."""
    host = _host(tmp_path, {"PATH": os.defpath})
    child = host.build_subprocess_env(extra={"TOKEN": GRANTED}, grant=["TOKEN"])
    done = subprocess.run(["bash", "-c", 'echo "token=$TOKEN"'], env=child,
                          capture_output=True, check=True)  # fmt: skip
    assert done.stdout == f"token={GRANTED}\n".encode()
    redactor = for_host(host, child)
    stream = redactor.byte_stream()
    out = b"".join(
        [*(stream.feed(done.stdout[i : i + 3]) for i in range(0, 99, 3)), stream.close()]
    )
    assert out == b"token=[REDACTED:TOKEN]\n"


REAL_ENVS = sorted((FIXTURES / "real-envs").glob("*.json"))


@pytest.mark.parametrize("path", REAL_ENVS, ids=[p.stem for p in REAL_ENVS])
def test_a_real_env_s_own_values_pass_unchanged(tmp_path: Path, path: Path) -> None:
    """The corpus holds no credential: a host over it masks none of its values (0 changes)."""
    data = json.loads(path.read_text(encoding="utf-8"))
    env: dict[str, str] = data.get("env", data)
    host = _host(tmp_path, {**env, "OPENAI_API_KEY": OPENAI})
    redactor = for_host(host)
    changed = [key for key, value in env.items() if redactor.redact(value) != value]
    assert changed == []
    assert redactor.redact(OPENAI) == "[REDACTED:OPENAI_API_KEY]"  # the redactor is not empty


def test_under_a_routed_home_its_own_source_values_are_masked(tmp_path: Path) -> None:
    launch, routed = tmp_path / "launch", tmp_path / "routed"
    launch.mkdir()
    routed.mkdir()
    host = Host(launch, environ={"PATH": os.defpath}, catalog=Catalog.default())
    host.add_secret_source(StaticSource("vault", {str(routed): {"B_SETTING": SOURCE_VALUE}}))
    host.load_launch_env()
    assert for_host(host).redact(SOURCE_VALUE) == SOURCE_VALUE  # not the launch home's
    with host.routed(routed):
        assert "B_SETTING" in host.source_names_here()
        assert for_host(host).redact(SOURCE_VALUE) == "[REDACTED:B_SETTING]"


def test_a_logging_filter_masks_message_arguments_and_tracebacks() -> None:
    import io
    import logging

    stream = io.StringIO()
    handler = logging.StreamHandler(stream)
    handler.addFilter(RedactingFilter(Redactor({"GH_TOKEN": GH})))
    logger = logging.getLogger("envscope.test.redact")
    logger.addHandler(handler)
    logger.propagate = False
    try:
        logger.warning("calling with %s", GH)
        logger.warning(f"inline {GH}", stack_info=True)
        try:
            raise ValueError(f"bad token {GH}")
        except ValueError:
            logger.exception("failed")
    finally:
        logger.removeHandler(handler)
    text = stream.getvalue()
    assert GH not in text
    assert text.count("[REDACTED:GH_TOKEN]") == 3
    assert "ValueError: bad token [REDACTED:GH_TOKEN]" in text


@settings(max_examples=200, deadline=None)
@given(
    secrets=st.dictionaries(names, st.text(alphabet="ab-é ", min_size=8, max_size=12), max_size=5),
    text=st.text(alphabet="ab- ", max_size=80),
)
def test_ascii_text_searched_as_bytes_answers_as_the_str_automaton(
    secrets: dict[str, str], text: str
) -> None:
    """The ASCII fast path (bytes) is pinned to the str automaton: same indexes, same spans."""
    masks = Redactor(secrets)._text
    if masks.automaton is None:
        return
    assert text.isascii()
    assert masks.matches(text) == masks.automaton.find_matches_as_indexes(text)


@pytest.mark.parametrize("how", ["grant", "force-prefix"])
def test_a_value_handed_over_as_given_is_masked_whatever_its_name(tmp_path: Path, how: str) -> None:
    """The build carries what it handed over as given (host.admitted): a granted or forced value
    under a name no rule calls a secret is masked too; the same value not handed over is not."""
    host = _host(tmp_path, {"PATH": os.defpath})
    value = "handed-over-value-0123456789"
    if how == "grant":
        child = host.build_subprocess_env(extra={"HANDOFF": value}, grant=["HANDOFF"])
    else:
        child = host.build_subprocess_env(extra={"_ENVSCOPE_FORCE_HANDOFF": value})
    assert child["HANDOFF"] == value
    assert for_host(host, child).redact(value) == "[REDACTED:HANDOFF]"
    fresh = _host(tmp_path / "fresh", {"PATH": os.defpath})  # admissions are per host
    plain = fresh.build_subprocess_env(extra={"HANDOFF": value})
    assert for_host(fresh, plain).redact(value) == value  # an ordinary extra value


def test_a_name_holding_two_values_has_each_masked(tmp_path: Path) -> None:
    """The launch OPENAI_API_KEY and a routed home's own: both are the host's secrets."""
    launch, routed = tmp_path / "launch", tmp_path / "routed"
    launch.mkdir()
    routed.mkdir()
    own = "sk-proj-" + "R1o2u3t4e5d6H7o8m9e0" * 2
    (routed / ".env").write_text(f"OPENAI_API_KEY={own}\n")
    host = Host(launch, environ={"PATH": os.defpath, "OPENAI_API_KEY": OPENAI},
                catalog=Catalog.default())  # fmt: skip
    host.load_launch_env()
    with host.routed(routed):
        out = for_host(host).redact(f"{OPENAI} {own}")
    assert out == "[REDACTED:OPENAI_API_KEY] [REDACTED:OPENAI_API_KEY]"
    assert (
        Redactor([("A", "first-value-123"), ("A", "second-value-45")]).redact(
            "first-value-123 second-value-45"
        )
        == "[REDACTED:A] [REDACTED:A]"
    )
