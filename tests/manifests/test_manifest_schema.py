"""The manifest schema and YAML reader: ``envscope.manifests._schema.parse_manifest``."""

from __future__ import annotations

import re
import subprocess
import sys
from pathlib import Path

import pytest
import yaml
from hypothesis import HealthCheck, given, settings
from hypothesis import strategies as st

import envscope.files._yaml as yaml_reader
from envscope.errors import FileError, ManifestError
from envscope.manifests._counting import counting
from envscope.manifests._probe import RootKind
from envscope.manifests._schema import (
    MAX_MANIFEST_BYTES,
    Manifest,
    ManifestEntry,
    parse_manifest,
)

GOOD = Path(__file__).resolve().parents[2] / "fixtures" / "manifests" / "good"

LOADERS = [
    pytest.param(getattr(yaml, "CSafeLoader", yaml.SafeLoader), id="libyaml"),
    pytest.param(yaml.SafeLoader, id="pure-python"),
]


@pytest.fixture(params=LOADERS)
def loader(request: pytest.FixtureRequest, monkeypatch: pytest.MonkeyPatch) -> type:
    """Run the test once with libyaml's loader (when built) and once with the pure-Python one."""
    cls: type = request.param
    monkeypatch.setattr(yaml_reader, "_loader_class", lambda: cls)
    return cls


def parse(text: str | bytes, path: str = "plugin.yaml") -> Manifest:
    data = text.encode() if isinstance(text, str) else text
    return parse_manifest(data, path)


def fails(text: str | bytes, path: str = "plugin.yaml") -> ManifestError:
    data = text.encode() if isinstance(text, str) else text
    with pytest.raises(ManifestError) as info:
        parse_manifest(data, path)
    return info.value


def attempt(data: bytes, path: str) -> Manifest | ManifestError:
    try:
        return parse_manifest(data, path)
    except ManifestError as err:
        return err


def secrets(manifest: Manifest) -> list[tuple[str, bool]]:
    return [(entry.name, entry.is_secret) for entry in manifest.entries]


# --- good manifests -------------------------------------------------------------------------

GOOD_TABLE = [
    (
        "chatx_platform.yaml",
        "chatx",
        True,
        [
            ("CHATX_BOT_TOKEN", True),
            ("CHATX_WORKSPACE_ID", False),
            ("CHATX_SIGNING_SECRET", True),
            ("CHATX_PROXY_URL", False),
            ("CHATX_SERVICE_ACCOUNT_JSON", True),
        ],
    ),
    (
        "explicit_flags.yaml",
        "ledger",
        False,
        [
            ("LEDGER_DSN", True),  # secret: true on a name with no suffix
            ("LEDGER_PAGE_TOKEN", False),  # secret: false on a _TOKEN name
            ("LEDGER_ADMIN_PASS", True),  # password: true
            ("LEDGER_API_KEY", True),  # secret and password agree
            ("LEDGER_REGION", False),  # password: false
        ],
    ),
    (
        "categories.yaml",
        "relay",
        False,
        [
            ("RELAY_WEBHOOK_SECRET", True),  # category messaging counts
            ("RELAY_BUILD_TOKEN", False),  # category tooling does not
            ("RELAY_ROOM", True),
            ("RELAY_DEPLOY_KEY", False),  # not even with secret: true
            ("RELAY_CACHE_KEY", True),  # category: null is "no category"
        ],
    ),
    (
        "lowercase.yaml",
        "lower",
        False,
        [
            ("lower_bot_token", True),
            ("Lower_Api_Key", True),
            ("lower_db_password", True),
            ("lower_channel", False),
            ("lower_credentials_json", True),
        ],
    ),
    (
        "plugin.yml",
        "standup-bot",
        True,
        [("STANDUP_BOT_TOKEN", True), ("STANDUP_CHANNEL", False), ("STANDUP_TIMEZONE", False)],
    ),
    ("flow_json.yaml", "jsonish", False, [("JSONISH_KEY", True), ("JSONISH_HOST", False)]),
    ("no_env.yaml", "quiet", False, []),
    (
        "standard_tags.yaml",
        "tagged",
        False,
        [("TAGGED_SESSION", True), ("TAGGED_ID", False), ("TAGGED_OTHER_TOKEN", True)],
    ),
    ("bom_utf8.yaml", "bommed", False, [("BOMMED_TOKEN", True)]),
]


@pytest.mark.parametrize(("filename", "name", "platform", "expected"), GOOD_TABLE)
def test_good_manifest_entries(
    loader: type, filename: str, name: str, platform: bool, expected: list[tuple[str, bool]]
) -> None:
    """Each good fixture parses to its plugin name, kind and (entry name, is_secret) list."""
    path = GOOD / filename
    manifest = parse_manifest(path.read_bytes(), str(path))
    assert manifest.path == str(path)
    assert manifest.name == name
    assert counting(RootKind.FLAT, manifest).declares is platform
    assert secrets(manifest) == expected


def test_good_table_covers_every_good_fixture() -> None:
    """Every file in fixtures/manifests/good has a row in the good table."""
    assert sorted(p.name for p in GOOD.iterdir()) == sorted(row[0] for row in GOOD_TABLE)


def test_entries_record_section_index_and_line() -> None:
    """Entries keep their field path (section[index]) and the 1-based line they start on."""
    manifest = parse(
        "name: p\n"
        "requires_env:\n"
        "  - P_TOKEN\n"
        "  - name: P_HOST\n"
        "    secret: true\n"
        "optional_env:\n"
        "\n"
        "  - name: P_DEBUG\n"
        "    category: tooling\n"
    )
    assert [(e.name, e.field, e.line, e.secret, e.category) for e in manifest.entries] == [
        ("P_TOKEN", "requires_env[0]", 3, None, None),
        ("P_HOST", "requires_env[1]", 4, True, None),
        ("P_DEBUG", "optional_env[0]", 8, None, "tooling"),
    ]


@pytest.mark.parametrize(
    ("text", "expected"),
    [
        ("name: p\n", []),
        ("requires_env: null\noptional_env: ~\n", []),
        ("requires_env: []\n", []),
        ("optional_env: [P_KEY]\n", [("P_KEY", True)]),
    ],
)
def test_absent_or_null_sections_are_empty(text: str, expected: list[tuple[str, bool]]) -> None:
    """Absent, null and empty requires_env/optional_env mean no entries."""
    assert secrets(parse(text)) == expected


@pytest.mark.parametrize(
    ("text", "flag"),
    [
        ("requires_env: [{name: A, secret: true}]", True),
        ("requires_env: [{name: A, password: true}]", True),
        ("requires_env: [{name: A, secret: false, password: false}]", False),
        ("requires_env: [{name: A, password: false}]", False),
        ("requires_env: [{name: A, secret: null}]", None),
        ("requires_env: [A]", None),
    ],
)
def test_password_is_an_alias_of_secret(text: str, flag: bool | None) -> None:
    """``password`` sets the same explicit flag as ``secret``; absent/null leaves it None."""
    assert parse(text).entries[0].secret is flag


@pytest.mark.parametrize(
    ("kind", "platform"),
    [("kind: platform", True), ("kind: tool", False), ("", False), ("kind: Platform", True)],
)
def test_a_flat_manifest_declares_for_a_platform_kind(kind: str, platform: bool) -> None:
    """A flat manifest declares for ``kind: platform`` and its near misses (test_counting.py)."""
    assert counting(RootKind.FLAT, parse(f"name: p\n{kind}\n")).declares is platform


@pytest.mark.parametrize(
    ("entry", "secret"),
    [
        (ManifestEntry("X_TOKEN", "f"), True),
        (ManifestEntry("X_SECRET", "f"), True),
        (ManifestEntry("X_KEY", "f"), True),
        (ManifestEntry("X_PASSWORD", "f"), True),
        (ManifestEntry("X_JSON", "f"), True),
        (ManifestEntry("x_token", "f"), True),
        (ManifestEntry("X_TOKENS", "f"), False),
        (ManifestEntry("X_KEYRING", "f"), False),
        (ManifestEntry("TOKEN", "f"), False),
        (ManifestEntry("X_HOST", "f", secret=True), True),
        (ManifestEntry("X_TOKEN", "f", secret=False), False),
        (ManifestEntry("X_TOKEN", "f", category="messaging"), True),
        (ManifestEntry("X_TOKEN", "f", category="tooling"), False),
        (ManifestEntry("X_HOST", "f", secret=True, category="tooling"), False),
    ],
)
def test_entry_is_secret_rule(entry: ManifestEntry, secret: bool) -> None:
    """Secret = explicit flag, else secret suffix; entries outside none/messaging never count."""
    assert entry.is_secret is secret


def test_extra_fields_are_ignored_at_every_level() -> None:
    """Unknown top-level and entry fields are accepted and ignored, whatever their type."""
    manifest = parse(
        "name: p\nversion: 3\nhooks: {a: [1, 2]}\nrequires_env:\n"
        "  - name: P_TOKEN\n    example: 42\n    scopes: [a, b]\n"
    )
    assert secrets(manifest) == [("P_TOKEN", True)]


# --- validation errors ----------------------------------------------------------------------

VALIDATION_ERRORS = [
    ("requires_env: P_TOKEN\n", 1, "requires_env", "must be a list, got string"),
    ("requires_env: {P_TOKEN: x}\n", 1, "requires_env", "must be a list, got mapping"),
    ("optional_env: 3\n", 1, "optional_env", "must be a list, got integer"),
    ("requires_env:\n  - A\n  - B\n  - name: C\n    secret: 'yes'\n", 5, "requires_env[2].secret",
     "must be true or false, got string"),
    ("requires_env:\n  - name: C\n    secret: 1\n", 3, "requires_env[0].secret",
     "must be true or false, got integer"),
    ("requires_env:\n  - name: C\n    password: 'on'\n", 3, "requires_env[0].password",
     "must be true or false, got string"),
    ("requires_env:\n  - name: 7\n", 2, "requires_env[0].name", "must be a string, got integer"),
    ("requires_env:\n  - secret: true\n", 2, "requires_env[0].name", "is required"),
    ("requires_env:\n  - 7\n", 2, "requires_env[0]",
     "must be a name or a mapping with a name, got integer"),
    ("requires_env:\n  - [A]\n", 2, "requires_env[0]",
     "must be a name or a mapping with a name, got sequence"),
    ("requires_env:\n  - name: A\n    category: 1\n", 3, "requires_env[0].category",
     "must be a string, got integer"),
    ("requires_env:\n  - name: A\n    url: [x]\n", 3, "requires_env[0].url",
     "must be a string, got sequence"),
    ("requires_env:\n  - name: A\n    prompt: 1.5\n", 3, "requires_env[0].prompt",
     "must be a string, got float"),
    ("requires_env:\n  - name: A\n    description: 2024-01-01\n", 3,
     "requires_env[0].description", "must be a string, got date"),
    ("name: 12\n", 1, "name", "must be a string, got integer"),
    ("kind: [platform]\n", 1, "kind", "must be a string, got sequence"),
    ("requires_env:\n  - name: A\n    secret: true\n    password: false\n", 4,
     "requires_env[0].password", "secret and password disagree"),
]  # fmt: skip


@pytest.mark.parametrize(("text", "line", "field", "message"), VALIDATION_ERRORS)
def test_schema_errors_name_file_line_and_field(
    loader: type, text: str, line: int, field: str, message: str
) -> None:
    """A schema violation is a ManifestError naming the file, the line and the field path."""
    err = fails(text, "/plugins/p/plugin.yaml")
    assert (err.path, err.line, err.field) == ("/plugins/p/plugin.yaml", line, field)
    assert err.message.startswith(message)
    assert str(err).startswith(f"/plugins/p/plugin.yaml:{line}: {field}: {message}")


@pytest.mark.parametrize(
    ("name", "problem"),
    [
        ('""', "it is empty"),
        ("A=B", "it contains '='"),
        ('"A\\0B"', "it contains a NUL character"),
        ('"A B"', "it contains whitespace"),
        ('"A\\tB"', "it contains whitespace"),
        ('"A_B\\n"', "it contains whitespace"),
        ('"\\u00a0A"', "it contains whitespace"),
    ],
)
@pytest.mark.parametrize("style", ["bare", "mapping"])
def test_invalid_env_names_are_rejected(name: str, problem: str, style: str) -> None:
    """Empty names and names with '=', NUL or whitespace are errors naming the entry/field."""
    entry = f"  - {name}\n" if style == "bare" else f"  - name: {name}\n"
    err = fails(f"requires_env:\n{entry}")
    assert err.field == ("requires_env[0]" if style == "bare" else "requires_env[0].name")
    assert err.line == 2
    assert err.message == f"is not a valid environment variable name: {problem}"


def test_name_check_matches_str_isspace_for_every_code_point() -> None:
    """The regex ``\\s`` the name check uses is exactly ``str.isspace``, character by character."""
    every = "".join(map(chr, range(sys.maxunicode + 1)))
    assert set(re.findall(r"\s", every)) == {char for char in every if char.isspace()}


def test_first_error_in_file_order_is_reported_with_a_count() -> None:
    """With several schema errors, the earliest line is the error, the rest are in ``more``."""
    err = fails("requires_env:\n  - name: A\n    secret: 1\nname: 3\noptional_env: x\n")
    assert (err.line, err.field) == (3, "requires_env[0].secret")
    assert str(err).endswith("(and 2 more problems)")
    assert "more problem" not in err.message
    assert [(p.line, p.field) for p in err.more] == [(4, "name"), (5, "optional_env")]


@pytest.mark.parametrize(
    ("text", "message"),
    [
        ("", "a manifest must be a mapping; the file has no YAML content"),
        ("# only a comment\n", "a manifest must be a mapping; the file has no YAML content"),
        ("---\n", "a manifest must be a mapping, got null"),
        ("plugin\n", "a manifest must be a mapping, got string"),
        ("42\n", "a manifest must be a mapping, got integer"),
        ("- A_TOKEN\n", "a manifest must be a mapping, got sequence"),
    ],
)
def test_top_level_must_be_a_mapping(loader: type, text: str, message: str) -> None:
    """An empty file, a comment-only file, a top-level scalar or list is a clear error."""
    err = fails(text)
    assert err.message == message
    assert err.field is None


# --- YAML reading ---------------------------------------------------------------------------


def test_size_limit_is_checked_before_parsing(monkeypatch: pytest.MonkeyPatch) -> None:
    """Data over 256 KiB is refused without ever being handed to the YAML parser."""

    def no_parse() -> None:
        raise AssertionError("parser called")

    monkeypatch.setattr(yaml_reader, "_loader_class", no_parse)
    err = fails(b"#" * (MAX_MANIFEST_BYTES + 1))
    assert MAX_MANIFEST_BYTES == 256 * 1024
    assert err.line is None
    assert f"larger than {MAX_MANIFEST_BYTES} bytes" in err.message


def test_size_limit_is_inclusive(tmp_path: Path) -> None:
    """A manifest of exactly 256 KiB is read; one byte more is refused."""
    head = b"name: big\nrequires_env: [BIG_TOKEN]\n"
    exact = head + b"#" * (MAX_MANIFEST_BYTES - len(head) - 1) + b"\n"
    assert len(exact) == MAX_MANIFEST_BYTES
    big = tmp_path / "plugin.yaml"
    big.write_bytes(exact)
    assert secrets(parse_manifest(big.read_bytes(), str(big))) == [("BIG_TOKEN", True)]
    big.write_bytes(exact + b"\n")
    assert fails(big.read_bytes(), str(big)).path == str(big)


def nested(depth: int, flow: bool) -> str:
    """A manifest whose ``extra`` field makes ``depth`` nested collections (root included)."""
    inner = depth - 1  # the root mapping is level 1
    if flow:
        return "extra: " + "[" * inner + "]" * inner + "\nrequires_env: [D_TOKEN]\n"
    return "extra:\n  " + "- " * inner + "x\nrequires_env: [D_TOKEN]\n"


@pytest.mark.parametrize("flow", [True, False], ids=["flow", "block"])
def test_depth_64_is_accepted(loader: type, flow: bool) -> None:
    """Nesting of exactly 64 levels is read."""
    assert secrets(parse(nested(64, flow))) == [("D_TOKEN", True)]


@pytest.mark.parametrize("depth", [65, 1000, 50000])
@pytest.mark.parametrize("flow", [True, False], ids=["flow", "block"])
def test_deeper_nesting_is_refused(loader: type, tmp_path: Path, depth: int, flow: bool) -> None:
    """Nesting past 64 levels (up to 1000-deep and beyond) is a ManifestError, not a crash."""
    text = nested(depth, flow).encode()
    path = tmp_path / "plugin.yaml"
    path.write_bytes(text)
    err = fails(path.read_bytes(), str(path))
    assert err.path == str(path)
    assert err.line == (1 if flow else 2)
    if depth > 10000:  # libyaml's scanner may stop first, at its own nesting cap
        assert "nesting" in err.message
    else:
        assert err.message == "nesting is deeper than 64 levels"


def test_recursion_error_from_the_parser_becomes_manifest_error(
    monkeypatch: pytest.MonkeyPatch,
) -> None:
    """A RecursionError raised while reading events is turned into a ManifestError."""

    class Exploding:
        def __init__(self, text: str) -> None:
            self.disposed = False

        def get_event(self) -> None:
            raise RecursionError

        def dispose(self) -> None:
            self.disposed = True

    monkeypatch.setattr(yaml_reader, "_loader_class", lambda: Exploding)
    err = fails("a: b\n")
    assert err.message == "nesting is deeper than 64 levels"


@pytest.mark.parametrize(
    ("text", "line", "field"),
    [
        ("a: &x 1\nb: c\n", 1, "a"),
        ("a: 1\nb: *x\n", 2, None),
        ("requires_env:\n  - &n A_TOKEN\n", 2, "requires_env[0]"),
        ("requires_env: &list\n  - A_TOKEN\n", 1, "requires_env"),
    ],
)
def test_anchors_and_aliases_are_refused(
    loader: type, text: str, line: int, field: str | None
) -> None:
    """Any anchor or alias is refused at its line, before anything is expanded."""
    err = fails(text)
    assert err.message == "YAML anchors and aliases (&name, *name) are not allowed in a manifest"
    assert (err.line, err.field) == (line, field)


@pytest.mark.parametrize(
    ("text", "second", "first", "field"),
    [
        ("name: a\nname: b\n", 2, 1, "name"),
        ("requires_env:\n  - name: A\n    secret: true\n\n    secret: false\n", 5, 3,
         "requires_env[0].secret"),
        ("x: {1: a, 1: b}\n", 1, 1, "x[1]"),
        ("x:\n  true: a\n  yes: b\n", 3, 2, "x[<boolean key>]"),
        ("x: {~: a, null: b}\n", 1, 1, "x[<null key>]"),
    ],
)  # fmt: skip
def test_duplicate_keys_name_both_lines(
    loader: type, text: str, second: int, first: int, field: str
) -> None:
    """A duplicate mapping key is an error at the second line that names the first."""
    err = fails(text)
    assert (err.line, err.field) == (second, field)
    assert err.message == f"duplicate key (first defined on line {first})"


@pytest.mark.parametrize(
    ("error", "message"),
    [
        (
            yaml.reader.ReaderError("p", 3, 7, "utf-8", "special characters are not allowed"),
            "invalid YAML: special characters are not allowed",
        ),
        (yaml.YAMLError(), "invalid YAML: YAMLError"),
    ],
)
def test_unmarked_yaml_errors_become_manifest_errors(
    monkeypatch: pytest.MonkeyPatch, error: yaml.YAMLError, message: str
) -> None:
    """A YAML error without a position (a reader error) is still a ManifestError, lineless."""

    class Failing:
        def __init__(self, text: str) -> None:
            pass

        def get_event(self) -> None:
            raise error

        def dispose(self) -> None:
            pass

    monkeypatch.setattr(yaml_reader, "_loader_class", lambda: Failing)
    err = fails("a: b\n")
    assert (err.line, err.field, err.message) == (None, None, message)


@pytest.mark.parametrize(
    ("text", "field"),
    [
        ("icon: !!binary aGVsbG8=\n", "icon"),
        ("x: !!python/object/apply:os.system ['true']\n", "x"),
        ("x: !!python/name:os.system\n", "x"),
        ("x: !custom thing\n", "x"),
        ("x: !!set {a: null}\n", "x"),
        ("x: !!omap [a: 1]\n", "x"),
        ("x: !!timestamp 2001-12-14\n", "x"),
        ("requires_env:\n  - !env A_TOKEN\n", "requires_env[0]"),
        ("? !!binary aGVsbG8=\n: x\n", None),
    ],
)
def test_non_standard_tags_are_refused(loader: type, text: str, field: str | None) -> None:
    """Tags other than !!str/int/float/bool/null/seq/map are refused, naming the field."""
    err = fails(text)
    assert err.message.startswith("YAML tags other than !!str")
    assert err.field == field


@pytest.mark.parametrize(
    ("text", "message"),
    [
        ("x: !!int abc\n", "scalar does not match its !!int tag"),
        ("x: !!bool maybe\n", "scalar does not match its !!bool tag"),
        ("x: !!float ''\n", "scalar does not match its !!float tag"),
        ("x: !!null x\n", "scalar does not match its !!null tag"),
        ("x: 0b_\n", "scalar is not a valid !!int"),
        ("x: 2023-02-29\n", "scalar is not a valid !!timestamp"),
        ("x: " + "1" * 5000 + "\n", "scalar is not a valid !!int"),
    ],
)
def test_unreadable_scalars_are_manifest_errors(loader: type, text: str, message: str) -> None:
    """A scalar that cannot be built (bad tagged value, impossible date) names its field."""
    err = fails(text)
    assert (err.line, err.field, err.message) == (1, "x", message)


def test_standard_tags_and_non_specific_tag_are_read() -> None:
    """!!str forces a string, !!bool/!!null work, and '!' marks a plain string."""
    manifest = parse("name: !!str 123\nrequires_env:\n  - name: ! 456\n    secret: !!bool yes\n")
    assert manifest.name == "123"
    assert [(e.name, e.secret) for e in manifest.entries] == [("456", True)]


@pytest.mark.parametrize(
    ("data", "line", "message"),
    [
        (b"\xff\xfen\x00a\x00", 1, "manifest is UTF-16-encoded; save it as UTF-8"),
        (b"\xfe\xff\x00n\x00a", 1, "manifest is UTF-16-encoded; save it as UTF-8"),
        (b"\xff\xfe\x00\x00n\x00\x00\x00", 1, "manifest is UTF-32-encoded; save it as UTF-8"),
        (b"name: a\nx: b\x00c\n", 2, "manifest contains a NUL byte"),
        (b"name: a\n\nx: \xe9t\xe9\n", 3, "manifest is not valid UTF-8"),
        (b"\xef\xbb\xbfname: a\nx: \xc3\n", 2, "manifest is not valid UTF-8"),
        (b"name: a\nx: \xed\xa0\x80\n", 2, "manifest is not valid UTF-8"),
        (b"name: a\nx: \x1b[31m\n", 2, "manifest contains a control character (U+001B)"),
        (b"name: a\nx: \xc2\x9b\n", 2, "manifest contains a control character (U+009B)"),
    ],
)
def test_encoding_errors_are_clear(data: bytes, line: int, message: str) -> None:
    """UTF-16/32, NUL bytes, invalid UTF-8 and control characters are errors with a line."""
    err = fails(data)
    assert err.line == line
    assert err.message.startswith(message)


def test_utf8_bom_is_tolerated_and_text_is_utf8() -> None:
    """A leading UTF-8 BOM is dropped and non-ASCII UTF-8 text is read."""
    manifest = parse("\ufeffname: café\nrequires_env: [CAFÉ_KEY]\n".encode())
    assert manifest.name == "café"
    assert secrets(manifest) == [("CAFÉ_KEY", True)]


@pytest.mark.parametrize(
    ("text", "line"),
    [
        ("requires_env:\n\t- A_TOKEN\n", 2),
        ("name: x\nrequires_env:\n  - name: A\n   secret: true\n", 4),
        ('name: x\nrequires_env: ["A_TOKEN\n', 3),
        ("name x\nrequires_env: [A]\n", 2),
        ("name: x\nrequires_env: [A\n", 3),
        ("a: b: c\n", 1),
    ],
)
def test_yaml_syntax_errors_carry_their_line(loader: type, text: str, line: int) -> None:
    """A YAML syntax error (tabs, bad indentation, unclosed quote…) names its line."""
    err = fails(text)
    assert err.message.startswith("invalid YAML: ")
    assert err.line == line
    assert err.field is None


def test_second_document_is_refused(loader: type) -> None:
    """A manifest holds exactly one YAML document."""
    err = fails("name: a\n---\nname: b\n")
    assert (err.line, err.message) == (2, "a manifest must be a single YAML document")


def test_complex_keys_are_refused(loader: type) -> None:
    """A collection used as a mapping key is refused."""
    err = fails("name: a\n? [b]\n: c\n")
    assert (err.line, err.message) == (2, "mapping keys must be plain scalars")


def test_pure_python_messages_do_not_quote_the_document(monkeypatch: pytest.MonkeyPatch) -> None:
    """PyYAML's quoted fragments of the document (tag handles, long tokens) are redacted."""
    monkeypatch.setattr(yaml_reader, "_loader_class", lambda: yaml.SafeLoader)
    err = fails("x: !sk-live-abcdef!tail value\n")
    assert "sk-live" not in str(err)
    assert err.message.startswith("invalid YAML: ")


def test_errors_are_file_errors_and_never_chain_the_document() -> None:
    """ManifestError is a FileError and hides the YAML/decoder exception it came from."""
    for data in (b"a: [\n", b"x: \xc3(\n", b"requires_env: x\n", b"a: !!int x\n"):
        with pytest.raises(ManifestError) as info:
            parse_manifest(data, "p.yaml")
        assert isinstance(info.value, FileError)
        assert info.value.__cause__ is None
        assert info.value.__context__ is None or info.value.__suppress_context__


@pytest.mark.property
@settings(max_examples=300, deadline=None, suppress_health_check=[HealthCheck.too_slow])
@given(st.binary(max_size=300))
def test_arbitrary_bytes_parse_or_raise_manifest_error(data: bytes) -> None:
    """Any bytes either parse or raise ManifestError: no YAML, Unicode or pydantic error escapes."""
    result = attempt(data, "fuzz.yaml")
    assert isinstance(result, Manifest) or result.path == "fuzz.yaml"


YAML_ALPHABET = st.sampled_from(
    ["requires_env", "optional_env", "name", "secret", "password", "category", "A_TOKEN", ":",
     " ", "  ", "\n", "- ", "[", "]", "{", "}", ",", "&a", "*a", "!!str", "!x", "'", '"', "#",
     "true", "1", "~", "?", "---", "\t", "=", "<<", "|", ">"]
)  # fmt: skip


@pytest.mark.property
@settings(max_examples=300, deadline=None, suppress_health_check=[HealthCheck.too_slow])
@given(st.lists(YAML_ALPHABET, max_size=40).map("".join))
def test_yaml_like_text_parses_or_raises_manifest_error(text: str) -> None:
    """YAML-ish token soup either parses or raises ManifestError (with libyaml and pure Python)."""
    for cls in {getattr(yaml, "CSafeLoader", yaml.SafeLoader), yaml.SafeLoader}:
        with pytest.MonkeyPatch.context() as patch:
            patch.setattr(yaml_reader, "_loader_class", lambda cls=cls: cls)
            result = attempt(text.encode(), "soup.yaml")
            assert isinstance(result, Manifest) or result.path == "soup.yaml"


# --- import cost ----------------------------------------------------------------------------


@pytest.mark.parametrize("module", ["envscope.manifests._schema", "envscope"])
def test_import_does_not_load_yaml_or_pydantic(module: str) -> None:
    """Importing the schema module (or envscope) loads neither PyYAML nor pydantic."""
    code = (
        f"import sys, {module}\n"
        "heavy = [m for m in ('yaml', 'pydantic', 'pydantic_core') if m in sys.modules]\n"
        "print(','.join(heavy))\n"
    )
    result = subprocess.run(
        [sys.executable, "-c", code], capture_output=True, text=True, check=True
    )
    assert result.stdout.strip() == ""


def _envscope_imports(module: str) -> set[str]:
    """The ``envscope`` modules a module's source imports (at any level)."""
    import ast
    import importlib.util

    spec = importlib.util.find_spec(module)
    assert spec is not None
    assert spec.origin is not None
    tree = ast.parse(Path(spec.origin).read_text(encoding="utf-8"))
    found = set()
    for node in ast.walk(tree):
        if isinstance(node, ast.ImportFrom) and node.module:
            found.add(node.module)
        elif isinstance(node, ast.Import):
            found.update(alias.name for alias in node.names)
    return {name for name in found if name.split(".")[0] == "envscope"}


@pytest.mark.parametrize(
    ("module", "allowed"),
    [
        ("envscope.files._yaml", {"envscope.errors"}),
        (
            "envscope.manifests._schema",
            {
                "envscope.files._yaml",
                "envscope.policy._declarations",
                "envscope._inputs",
                "envscope.errors",
            },
        ),
    ],
)
def test_the_reader_and_the_schema_import_one_way(module: str, allowed: set[str]) -> None:
    """The YAML reader imports nothing of the schema (the schema imports the reader): no cycle."""
    assert _envscope_imports(module) <= allowed
