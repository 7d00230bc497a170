"""Property tests: the dotenv and manifest parsers never crash, hang or yield an invalid name.

Every test here is marked ``property`` and runs under the profile chosen in
``conftest.py`` (``ci`` by default: derandomized, 100 examples, 1 s deadline).
"""

from __future__ import annotations

import os
import re
from pathlib import Path

import pytest
import yaml
from dotenv.variables import parse_variables
from hypothesis import assume, event, example, given
from hypothesis import strategies as st

from envscope.errors import DotenvError, ManifestError, _escaped
from envscope.files._dotenv import _interpolate, parse_dotenv, read_dotenv
from envscope.manifests._schema import ENV_SECTIONS, Manifest, parse_manifest

pytestmark = pytest.mark.property

ENVIRON = {"HOME": "/home/op", "OPENAI_API_KEY": "fake-OPENAI_API_KEY", "": "empty-name"}
PLANTED = "xoxb-9913-planted-secret"
_LINE_END = re.compile(r"\r\n|\r|\n")


def lines_in(text: str) -> int:
    """Lines python-dotenv counts (a lone CR ends a line too), at least 1."""
    return len(_LINE_END.findall(text)) + 1


def assert_valid_env(result: dict[str, str]) -> None:
    """Every key is a usable environment name and no value holds NUL."""
    for key, value in result.items():
        assert isinstance(key, str)
        assert isinstance(value, str)
        assert key, "empty name"
        assert "=" not in key
        assert "\x00" not in key
        assert "\x00" not in value


def assert_clean_error(err: DotenvError | ManifestError, path: str, max_line: int | None) -> None:
    """The error names ``path`` and a plausible line, and echoes no value.

    Names may be shown (docs/security.md, promise 7: keys, paths, lines and
    fields), so the key a dotenv NUL error names and a manifest error's field
    path are cut out before looking for the planted value: the generators can
    put it in a name too (a field holding a tab is shown escaped, ``\\t``: that
    rendering is cut out too).
    """
    assert err.path == path
    assert err.line is None or err.line >= 1
    if max_line is not None and err.line is not None:
        assert err.line <= max_line
    shown = str(err).replace(err.path, "")
    if err.field:  # as given, and as the message shows it (a control character escaped)
        shown = shown.replace(_escaped(err.field), "").replace(err.field, "")
    shown = re.sub(r"value of .* holds a NUL byte", "", shown, flags=re.DOTALL)
    assert PLANTED not in shown


def check_dotenv_text(text: str, *, override: bool = False, interpolate: bool = True) -> None:
    """parse_dotenv either returns valid names/values or raises a DotenvError naming the file."""
    try:
        result = parse_dotenv(
            text, path="fuzz.env", environ=ENVIRON, override=override, interpolate=interpolate
        )
    except DotenvError as exc:
        event("dotenv: DotenvError")
        assert_clean_error(exc, "fuzz.env", max_line=lines_in(text))
        return
    event("dotenv: parsed" if result else "dotenv: parsed, empty")
    assert_valid_env(result)


# -- dotenv strategies ----------------------------------------------------------------------

NAME_PIECES = st.sampled_from(
    ["A", "Z", "a", "_", "9", ".", "-", "É", "KEY", "export", "=", "\x00", " ", "#", "'", '"', "$"]
)
VALID_NAMES = st.from_regex(r"[A-Za-z_][A-Za-z0-9_]{0,8}", fullmatch=True)
NAMES = st.one_of(VALID_NAMES, VALID_NAMES, st.lists(NAME_PIECES, max_size=5).map("".join))
VALUE_PIECES = st.sampled_from(
    ["a", "Z", " ", "\t", "$", "${", "}", ":", ":-", "-", "#", " #", "'", '"', "\\", "\\n", "=",
     "\n", "\r", "\r\n", "\x00", "é", "🔑", "\u2028", "\x85", "\x0b", "\ufeff", PLANTED,
     "${HOME}", "${OPENAI_API_KEY}", "${UNSET:-d}", "${A"]
)  # fmt: skip
VALUES = st.lists(VALUE_PIECES, max_size=8).map("".join)
BLANKS = st.sampled_from(["", " ", "\t", "  ", " \t "])
EXPORTS = st.sampled_from(["", "export ", "export\t", "export"])


@st.composite
def dotenv_lines(draw: st.DrawFn) -> str:
    """One dotenv-looking line: a binding (any quoting), a comment, a bare name, or noise."""
    kind = draw(st.sampled_from(["binding", "quoted_key", "comment", "bare", "blank", "noise"]))
    if kind == "binding":
        quote = draw(st.sampled_from(["", "'", '"', "'", '"']))
        close = quote if draw(st.sampled_from([True, True, True, False])) else ""
        return (
            f"{draw(EXPORTS)}{draw(NAMES)}{draw(BLANKS)}={draw(BLANKS)}"
            f"{quote}{draw(VALUES)}{close}{draw(st.sampled_from(['', ' # c', '#x']))}"
        )
    if kind == "quoted_key":
        return f"'{draw(NAMES)}'={draw(VALUES)}"
    if kind == "comment":
        return f"{draw(BLANKS)}# {draw(VALUES)}"
    if kind == "bare":
        return draw(NAMES)
    if kind == "blank":
        return draw(BLANKS)
    return draw(VALUES)


DOTENV_FILES = st.lists(
    st.tuples(dotenv_lines(), st.sampled_from(["\n", "\r\n", "\r", ""])), max_size=12
).map(lambda parts: "".join(line + end for line, end in parts))


@given(st.text(max_size=300), st.booleans(), st.booleans())
@example("=x\n", False, True)
@example("'A=B'=1\n", False, True)
@example("A\x00=1\n", False, True)
@example("A=${" * 50, False, True)
def test_any_text_parses_or_fails_cleanly(text: str, override: bool, interpolate: bool) -> None:
    """Any text: a mapping of valid names (no '=', NUL, empty) or a DotenvError, nothing else."""
    check_dotenv_text(text, override=override, interpolate=interpolate)


@given(DOTENV_FILES, st.booleans(), st.booleans())
def test_dotenv_like_text_parses_or_fails_cleanly(
    text: str, override: bool, interpolate: bool
) -> None:
    """Dotenv-shaped text (quotes, exports, comments, ${...}, odd line ends): clean outcome."""
    check_dotenv_text(text, override=override, interpolate=interpolate)


BYTE_PIECES = st.sampled_from(
    [b"A=", b"B=1", b"\xff", b"\xfe", b"\xef\xbb\xbf", b"\xed\xa0\x80", b"\xc3\xa9", b"\xc3",
     b"\x00", b"\r", b"\n", b"'", b'"', b"${", b"}", b"#", b" ", b"export ", b"=",
     b"\xf0\x9f\x94\x91"]
)  # fmt: skip


@pytest.fixture(scope="module")
def scratch(tmp_path_factory: pytest.TempPathFactory) -> Path:
    """One file path reused by every example of a test (examples run one at a time)."""
    return tmp_path_factory.mktemp("fuzz") / "fuzz.env"


@given(st.one_of(st.binary(max_size=300), st.lists(BYTE_PIECES, max_size=30).map(b"".join)))
def test_any_bytes_read_or_fail_cleanly(scratch: Path, data: bytes) -> None:
    """Raw bytes on disk (bad UTF-8, BOMs, NUL): valid mapping or a DotenvError naming the file."""
    scratch.write_bytes(data)
    try:
        result = read_dotenv(str(scratch), environ=ENVIRON)
    except DotenvError as exc:
        assert_clean_error(exc, str(scratch), max_line=None)
        return
    assert_valid_env(result)


@given(st.text(alphabet="${}:-aB_", max_size=30), st.sampled_from([{}, ENVIRON, {"a": "1"}]))
def test_interpolation_agrees_with_python_dotenv(value: str, env: dict[str, str]) -> None:
    """envscope's linear ${VAR} resolver equals python-dotenv's regex resolver (differential)."""
    expected = "".join(atom.resolve(env) for atom in parse_variables(value))
    assert _interpolate(value, env) == expected


@given(st.text(max_size=60), st.dictionaries(st.text(max_size=4), st.text(max_size=4)))
def test_interpolation_agrees_with_python_dotenv_on_any_text(
    value: str, env: dict[str, str]
) -> None:
    """The differential check also holds for arbitrary text and environments."""
    expected = "".join(atom.resolve(env) for atom in parse_variables(value))
    assert _interpolate(value, env) == expected


KEYS = st.from_regex(r"[A-Za-z_][A-Za-z0-9_.\-]{0,10}", fullmatch=True)
PLAIN_VALUES = st.text(
    st.characters(blacklist_categories=["Cs"], blacklist_characters="\x00"), max_size=30
)


def double_quoted(value: str) -> str:
    return '"' + value.replace("\\", "\\\\").replace('"', '\\"') + '"'


@given(st.dictionaries(KEYS, PLAIN_VALUES, max_size=8), st.sampled_from(["\n", "\r\n", "\r"]))
def test_well_formed_files_round_trip(values: dict[str, str], end: str) -> None:
    """KEY="escaped value" lines (interpolation off) parse back to exactly the mapping written."""
    assume(all(not re.search(r"[^\S\r\n]{17,}", v) for v in values.values()))
    text = "".join(f"{key}={double_quoted(value)}{end}" for key, value in values.items())
    assert parse_dotenv(text, path="rt.env", interpolate=False) == values


GOOD_LINES = st.sampled_from(["A=1", "B='two'", 'C="x\\ny"', "# comment", "", "  ", "export D=4"])


@given(
    st.lists(st.tuples(GOOD_LINES, st.sampled_from(["\n", "\r\n", "\r"])), max_size=15),
    st.sampled_from(["BAD='open", 'BAD="open', "BAD VALUE=1", "=empty", "BAD=a\x00b", "B: 1"]),
)
def test_error_line_is_the_offending_line(good: list[tuple[str, str]], bad: str) -> None:
    """After any mix of good lines, blanks and comments, the error names the bad line itself."""
    prefix = "".join(line + end for line, end in good)
    with pytest.raises(DotenvError) as info:
        parse_dotenv(prefix + bad + "\nAFTER=1\n", path="l.env")
    assert info.value.line == lines_in(prefix)


# -- manifests ------------------------------------------------------------------------------------


def assert_valid_manifest(manifest: Manifest) -> None:
    """Every entry of a parsed manifest has a valid env name and a bool secret decision."""
    for entry in manifest.entries:
        assert isinstance(entry.name, str)
        assert entry.name
        assert "=" not in entry.name
        assert "\x00" not in entry.name
        assert not any(ch.isspace() for ch in entry.name)
        assert isinstance(entry.is_secret, bool)
        assert re.fullmatch(r"(requires_env|optional_env)\[\d+\]", entry.field)


def check_manifest(data: bytes) -> Manifest | None:
    """parse_manifest returns a valid manifest or raises a ManifestError naming the file."""
    try:
        manifest = parse_manifest(data, "fuzz/plugin.yaml")
    except ManifestError as exc:
        event("manifest: ManifestError")
        assert_clean_error(exc, "fuzz/plugin.yaml", max_line=None)
        return None
    event("manifest: parsed with entries" if manifest.entries else "manifest: parsed, no entries")
    assert_valid_manifest(manifest)
    return manifest


@given(st.binary(max_size=500))
def test_any_manifest_bytes_parse_or_fail_cleanly(data: bytes) -> None:
    """Arbitrary bytes: a valid Manifest or a ManifestError naming the file, nothing else."""
    check_manifest(data)


@given(st.text(max_size=300))
def test_any_manifest_text_parses_or_fails_cleanly(text: str) -> None:
    """Arbitrary text encoded as UTF-8: a valid Manifest or a ManifestError."""
    check_manifest(text.encode("utf-8", "surrogatepass"))


YAML_PIECES = st.sampled_from(
    ["name: ", "kind: platform", "kind: ", "requires_env:", "optional_env:", "\n", "  ", "    ",
     "- ", "-", "name: X_TOKEN", "secret: ", "password: ", "category: ", "true", "false", "yes",
     "~", "null", "&a ", "*a", "!!str ", "!!int ", "!!binary ", "!!python/object:os.system ",
     "!local ", "[", "]", "{", "}", ", ", "'", '"', "X_TOKEN", "A B", "=", "\x00", "\\0", "\t",
     ": ", ":", "#", "---", "...", "? ", "|", ">", "1", "0x1f", "2024-02-30", "<<: ", "\ufeff",
     "é", "%YAML 1.1", "\r\n", PLANTED]
)  # fmt: skip


@given(st.lists(YAML_PIECES, max_size=40).map("".join))
@example("xoxb-9913-planted-secret\tname: !!int ")  # make fuzz: a field shown escaped
def test_yaml_like_text_parses_or_fails_cleanly(text: str) -> None:
    """YAML fragments (anchors, tags, flow, merge keys, BOMs): a valid Manifest or ManifestError."""
    check_manifest(text.encode("utf-8"))


SCALARS = st.one_of(
    st.none(),
    st.booleans(),
    st.integers(-(2**70), 2**70),
    st.floats(allow_nan=True),
    st.text(max_size=12),
    st.sampled_from(["X_TOKEN", "X_SECRET", "", "A=B", "A B", "a\x00b", "yes", "~", PLANTED]),
)
ANY = st.recursive(
    SCALARS,
    lambda inner: st.one_of(
        st.lists(inner, min_size=1, max_size=4),
        st.dictionaries(st.text(max_size=6), inner, min_size=1, max_size=4),
    ),
    max_leaves=12,
)


ENV_NAMES = st.one_of(
    st.sampled_from(["X_TOKEN", "X_URL", "x_key", "CHATX_SIGNING_SECRET", "X_JSON", "X_PASSWORD"]),
    VALID_NAMES,
)
FIELD_VALUES: dict[str, st.SearchStrategy[object]] = {
    "name": ENV_NAMES,
    "secret": st.booleans(),
    "password": st.booleans(),
    "category": st.sampled_from([None, "messaging", "model", "tools"]),
    "description": st.one_of(st.text(max_size=10), st.just(PLANTED)),
    "prompt": st.text(max_size=10),
    "url": st.just("https://example.invalid/doc"),
}


@st.composite
def entries(draw: st.DrawFn) -> object:
    """A requires_env entry: usually a well-typed name or mapping, sometimes a wrong type."""
    shape = draw(st.sampled_from(["name", "name", "mapping", "mapping", "mistyped", "anything"]))
    if shape == "name":
        return draw(ENV_NAMES)
    fields = ["name", *draw(st.lists(st.sampled_from(sorted(FIELD_VALUES)[1:]), unique=True))]
    if shape == "mapping":
        return {f: draw(FIELD_VALUES[f]) for f in fields}
    if shape == "mistyped":
        entry = {f: draw(FIELD_VALUES[f]) for f in fields}
        entry[draw(st.sampled_from(fields))] = draw(st.one_of(SCALARS, st.just(PLANTED)))
        return entry
    return draw(ANY)


@st.composite
def manifest_documents(draw: st.DrawFn) -> dict[str, object]:
    """A manifest-shaped document: mostly well typed, with wrong types mixed in."""
    doc: dict[str, object] = {}
    for key in ("name", "kind", *ENV_SECTIONS):
        if draw(st.sampled_from([True, False, False])):
            continue
        well_typed = draw(st.sampled_from([True, True, True, False]))
        if key in ENV_SECTIONS:
            doc[key] = draw(st.lists(entries(), max_size=5) if well_typed else ANY)
        elif well_typed:
            doc[key] = draw(st.sampled_from(["platform", "memory", "chatx", None]))
        else:
            doc[key] = draw(SCALARS)
    extra = draw(st.dictionaries(st.text(max_size=8), ANY, max_size=2))
    for key, value in extra.items():
        doc.setdefault(key, value)
    return doc


def dump(doc: object, flow: bool | None, unicode: bool) -> bytes | None:
    """yaml.safe_dump, or None when PyYAML cannot represent the document."""
    try:
        text = yaml.safe_dump(doc, default_flow_style=flow, allow_unicode=unicode)
    except yaml.YAMLError:
        return None
    return text.encode("utf-8", "surrogatepass")


def expected_names(doc: dict[str, object]) -> list[str]:
    """The entry names a successful parse must report, in order."""
    names = []
    for section in ENV_SECTIONS:
        for entry in doc.get(section) or ():  # type: ignore[attr-defined]
            names.append(entry if isinstance(entry, str) else entry["name"])
    return names


@given(manifest_documents(), st.sampled_from([None, True, False]), st.booleans())
def test_structured_manifests_parse_or_fail_cleanly(
    doc: dict[str, object], flow: bool | None, unicode: bool
) -> None:
    """Manifest-shaped YAML: a ManifestError, or a Manifest with exactly the input's entries."""
    data = dump(doc, flow, unicode)
    assume(data is not None)
    assert data is not None
    manifest = check_manifest(data)
    if manifest is None:
        return
    assert [e.name for e in manifest.entries] == expected_names(doc)
    assert manifest.kind == doc.get("kind")


SPLICES = st.sampled_from(["\n", ":", "- ", "'", '"', "&a ", "*a", "\x00", "\t", "{", "!!binary "])


@given(manifest_documents(), st.integers(0, 400), SPLICES)
def test_mangled_structured_manifests_parse_or_fail_cleanly(
    doc: dict[str, object], at: int, junk: str
) -> None:
    """A manifest-shaped document with junk spliced in: a valid Manifest or ManifestError."""
    data = dump(doc, None, True)
    assume(data is not None)
    assert data is not None
    cut = min(at, len(data))
    check_manifest(data[:cut] + junk.encode("utf-8") + data[cut:])


def test_profile_is_known() -> None:
    """The property suite runs under one of the profiles conftest registers (ci by default)."""
    from hypothesis import settings

    from tests.property.conftest import PROFILES

    chosen = os.environ.get("HYPOTHESIS_PROFILE", "ci")
    assert chosen in PROFILES
    current = settings.default
    assert current is not None
    assert current.deadline is not None
    assert current.deadline.total_seconds() == 1.0
    if chosen == "ci":
        assert current.derandomize is True
        assert current.max_examples == 100
