"""The fast manifest paths read exactly what the careful reference paths read.

``parse_manifest`` has a fast path at each step: ``decode_manifest`` checks an
ASCII file with one ``bytes.translate``, ``_read_block`` reads a plain block
manifest line by line (kept only when libyaml parses the text into as many
events), and ``_fast_check`` validates the common shape without pydantic. The
reference is the same call with all three switched off: the event composer
``_Composer`` and the pydantic models, as before the fast paths existed. Every
case here must give the same ``Manifest`` (compared by ``repr``, so ``True`` and
``1`` differ) or the same ``ManifestError`` (path, message, line and field).
"""

from __future__ import annotations

import contextlib
import re
import sys
from collections.abc import Iterator
from pathlib import Path

import pytest
import yaml
from pydantic import ValidationError
from yaml.resolver import Resolver

import envscope._manifest_schema as manifest_schema
import envscope._manifest_yaml as manifest_yaml
from benchmarks.workloads import _manifest as benchmark_manifest
from envscope._manifest_schema import ENV_SECTIONS, parse_manifest
from envscope.errors import ManifestError
from tests._watchdog import run_with_watchdog

pytestmark = pytest.mark.skipif(
    not yaml.__with_libyaml__, reason="the block reader is checked against libyaml"
)

PATH = "plugins/fast/plugin.yaml"
FIXTURES = Path(__file__).resolve().parent.parent / "fixtures" / "manifests"
PLANTED = "xoxb-5521-planted-secret"

Outcome = tuple[object, ...]


def outcome(data: bytes) -> Outcome:
    """What ``parse_manifest`` makes of ``data``: the manifest's repr, or the error's parts."""
    try:
        manifest = parse_manifest(data, PATH)
    except ManifestError as err:
        return ("error", err.path, err.message, err.line, err.field)
    return ("manifest", repr(manifest))


@contextlib.contextmanager
def reference_paths() -> Iterator[None]:
    """Switch the three fast paths off: the composer and the pydantic models decide alone."""
    with pytest.MonkeyPatch.context() as patch:
        patch.setattr(manifest_yaml, "_PRINTABLE_ASCII", b"")
        patch.setattr(manifest_yaml, "_read_block", lambda text: None)
        patch.setattr(manifest_schema, "_fast_check", lambda root: None)
        yield


def reference_outcome(data: bytes) -> Outcome:
    """``outcome`` through the reference paths only."""
    with reference_paths():
        return outcome(data)


def assert_same_outcome(data: bytes) -> Outcome:
    """The fast and the reference paths agree on ``data``; returns the outcome."""
    fast = outcome(data)
    assert fast == reference_outcome(data)
    return fast


def reference_document(text: str) -> manifest_yaml.Document:
    """The careful composer's document for ``text``, read from libyaml's events."""
    loader = yaml.CSafeLoader(text)
    try:
        return manifest_yaml._Composer(PATH).run(loader)
    finally:
        loader.dispose()


def check_block_reader(text: str) -> bool:
    """When the block reader takes ``text``: libyaml's event count and the composer agree."""
    block = manifest_yaml._read_block(text)
    if block is None:
        return False
    doc, events = block
    assert manifest_yaml._libyaml_events(text) == events
    reference = reference_document(text)
    assert repr(doc.root) == repr(reference.root)
    assert doc.lines == reference.lines
    assert list(doc.lines) == list(reference.lines)
    return True


def workload_manifest(name: str) -> str:
    """The manifest the cold-build benchmark writes for each plugin (``benchmarks.workloads``)."""
    return benchmark_manifest(name, "platform")


# -- whole manifests -----------------------------------------------------------------------------

BLOCK_MANIFESTS = {
    "workload": workload_manifest("chat-0042"),
    "indentless sequence": "name: p\nrequires_env:\n- A_TOKEN\n- name: B_KEY\n  secret: false\n",
    "comments everywhere": (
        "# head\nname: p   # trailing\n  # odd column\nrequires_env:  # c\n\n"
        "    - A_TOKEN # c\n#c\n    - name: B\n      secret: yes\n"
    ),
    "document start": "---\nname: p\nrequires_env: [] # none\nextra: {}\n",
    "quoted": (
        "name: 'p: q # r'\nkind: \"plat form\"\nrequires_env:\n  - 'A_TOKEN'\n  - \"B_SECRET\"\n"
    ),
    "urls and punctuation": (
        "name: p\nurl: https://x.example/a?b=c&d=e\nauthor: Ex Corp <a@b.example>\n"
        "entry: pkg.mod:Class\nrequires_env:\n  - name: P_TOKEN\n"
        "    description: It's (very) 100% fine!\n"
    ),
    "nested blocks": (
        "name: p\nhooks:\n  on_start:\n    run: x\n    with:\n    - a\n    - b\n  after: y\n"
        "requires_env:\n  - name: A_TOKEN\n    extra:\n      deep:\n        - 1\n        - 2.5\n"
    ),
    "keys with no value": "name:\nkind:\nrequires_env:\noptional_env:\n",
    "null category counts": "requires_env:\n  - name: A_KEY\n    category:\n  - name: B_KEY\n",
    "yaml words as keys": "yes: 1\nNo: 2\nnull: 3\nnames: x\nname: p\n",
    "numbers and dates": "name: p\nv: 1.2.0\nn: 0x1F\nf: 1e3\nd: 2001-12-14\nt: 12:30\nkind: ~\n",
    "three-space indent": (
        "name: p\nrequires_env:\n   -   A_TOKEN\n   -   name: B_TOKEN\n       secret: on\n"
    ),
    "pending value at the end": "name: p\nrequires_env:\n  - name: A\n    description:",
}


@pytest.mark.parametrize("text", BLOCK_MANIFESTS.values(), ids=BLOCK_MANIFESTS.keys())
def test_block_manifests_take_the_fast_path_and_agree(text: str) -> None:
    """Plain block manifests are read by the block reader, with the reference's result."""
    assert check_block_reader(text)
    assert assert_same_outcome(text.encode())[0] == "manifest"


def fixture_files() -> list[Path]:
    """Every good and bad fixture manifest."""
    files = sorted((FIXTURES / "good").iterdir()) + sorted((FIXTURES / "bad").iterdir())
    return [path for path in files if path.name != "README.md"]


@pytest.mark.parametrize("path", fixture_files(), ids=lambda p: f"{p.parent.name}/{p.name}")
def test_fixture_manifests_agree(path: Path) -> None:
    """Every fixture (good and bad) gives the same manifest or error on both paths."""
    data = path.read_bytes()
    assert_same_outcome(data)
    text = data.decode("utf-8", "replace").removeprefix("\ufeff")
    check_block_reader(text)


def test_benchmark_manifests_are_all_read_by_the_block_reader() -> None:
    """The cold-build benchmark's manifests all take the fast path (or it measures nothing)."""
    for name in ("chat-0042", "relay7781", "sms-0001", "vault9999"):
        for kind in ("platform", "memory"):
            assert check_block_reader(benchmark_manifest(name, kind))


# -- scalars, as values and as keys ----------------------------------------------------------------

TRICKY_SCALARS = [
    *("yes", "no", "on", "off", "Yes", "NO", "On", "OFF", "y", "n", "Y", "true", "False", "TRUE"),
    *("~", "null", "Null", "NULL", "", "1e3", "1.0e+3", "0x1F", "0o17", "017", "0b101", "1_000"),
    *("12:30", "190:20:30", "-1", "+1", ".5", ".inf", "-.inf", ".NaN", "1.2.0", "2001-12-14"),
    *("2001-12-14t21:59:43.10-05:00", "2001-12-14 21:59:43.10 -5", "2001-13-45", "2001-02-30"),
    *("=", "<<", "'quoted'", '"quoted"', "''", '""', "'it''s'", '"esc\\n"', "'a: b # c'"),
    *("[]", "{}", "[a, b]", "{a: 1}", "a: b", "a:b", "a:", "a #c", "a#c", "#c", "- x", "x -"),
    *("https://x.example/p?q=1&r=2", "é", "a\tb", "a  b", "a ", "&a x", "*a", "!!str x", "! x"),
    *("!!bool yes", "!!int 1", "@x", "`x`", "%x", "?x", "? x", ",x", "x,y", "(x)", "|", ">"),
    *("a|b", "A=B", "A B", "A_TOKEN", "X_SECRET", "'multi\n  line'", "plain\n  continued"),
    *("|\n  block", ">-\n  folded", PLANTED, "x" * 200),
]
CONTEXTS = [
    "name: {}\n",
    "kind: {}\nname: p\n",
    "requires_env:\n  - {}\n",
    "requires_env:\n- {}\n- B_TOKEN\n",
    "requires_env:\n  - name: A_TOKEN\n    secret: {}\n",
    "requires_env:\n  - name: A_TOKEN\n    password: {}\n    secret: true\n",
    "requires_env:\n  - name: A_TOKEN\n    category: {}\n",
    "requires_env:\n  - name: {}\n    description: {}\n",
    "optional_env: {}\n",
    "{}: 1\nname: p\n",
    "name: p\nrequires_env:\n  - name: A_TOKEN\n    {}: x\n",
    "name: p\nrequires_env:\n  - {}: x\n",
]


@pytest.mark.parametrize("scalar", TRICKY_SCALARS, ids=repr)
def test_tricky_scalars_agree_in_every_position(scalar: str) -> None:
    """Each tricky scalar, as a value or a key anywhere in a manifest: same result both ways."""
    for context in CONTEXTS:
        text = context.replace("{}", scalar)
        assert_same_outcome(text.encode())
        check_block_reader(text)


@pytest.mark.parametrize(
    ("scalar", "expected"),
    [
        ("yes", True),
        ("Off", False),
        ("~", None),
        ("", None),
        ("NULL", None),
        ("0x1F", 31),
        ("1e3", "1e3"),  # YAML 1.1 floats need a dot
        ("1.0e+3", 1000.0),
        ("12:30", 750),  # sexagesimal
        ("'yes'", "yes"),
        ('"~"', "~"),
        ("1.2.0", "1.2.0"),
        ("+1", 1),
        ("/etc/x y", "/etc/x y"),
    ],
)
def test_block_reader_reads_scalars_as_yaml_1_1(scalar: str, expected: object) -> None:
    """The block reader gives a plain scalar the type the safe loader gives it."""
    block = manifest_yaml._read_block(f"v: {scalar}\n")
    assert block is not None
    assert repr(block[0].root) == repr({"v": expected})


def test_invalid_timestamp_is_left_to_the_composer() -> None:
    """A scalar that fails to construct gives the document up; the composer words the error."""
    assert manifest_yaml._read_block("d: 2001-13-45\n") is None
    fast = assert_same_outcome(b"d: 2001-13-45\n")
    assert fast[0] == "error"
    assert fast[2] == "scalar is not a valid !!timestamp"


# -- shapes the block reader must give up --------------------------------------------------------

GIVE_UP = {
    "duplicate key": "name: a\nname: b\n",
    "duplicate entry key": "requires_env:\n  - name: A\n    name: B\n",
    "yes and true are one key": "yes: 1\ntrue: 2\n",
    "anchor": "name: &a p\n",
    "alias": "a: 1\nb: *a\n",
    "tag": "name: !!str p\n",
    "flow sequence with items": "requires_env: [A_TOKEN]\n",
    "flow mapping": "{name: p}\n",
    "multi-line plain": "name: a\n  b\n",
    "block scalar": "name: |\n  a\n",
    "tab": "name:\tp\n",
    "carriage return": "name: p\r\n",
    "non-ascii": "name: é\n",
    "second document": "name: p\n---\nname: q\n",
    "document end": "name: p\n...\n",
    "directive": "%YAML 1.1\n---\nname: p\n",
    "top-level sequence": "- a\n- b\n",
    "top-level scalar": "just text\n",
    "indented root": "  name: p\n",
    "empty": "",
    "only comments": "# nothing\n",
    "bare dash": "requires_env:\n  -\n  - A\n",
    "dash at a mapping's column": "name: p\n- A\n",
    "over-indented key": "name: p\n  kind: q\n",
    "between two columns": "requires_env:\n    - name: A\n  secret: true\n",
    "sequence in sequence": "requires_env:\n  - - A\n",
    "value on the next line": "name:\n  p\n",
    "long key": "k" * 129 + ": 1\n",
    "key with a space": "my key: 1\n",
    "comment without a space": "name: p#c\n",
    "colon at the end": "name: p:\n",
    "too deep for the block reader": "".join(f"{'  ' * i}k{i}:\n" for i in range(34))
    + "  " * 34
    + "x: 1\n",
}


@pytest.mark.parametrize("text", GIVE_UP.values(), ids=GIVE_UP.keys())
def test_other_shapes_are_left_to_the_composer(text: str) -> None:
    """What the block reader does not read exactly, it gives up; both paths still agree."""
    assert manifest_yaml._read_block(text) is None
    assert_same_outcome(text.encode())


def test_a_count_mismatch_keeps_the_composer_in_charge(monkeypatch: pytest.MonkeyPatch) -> None:
    """When libyaml counts other events than the block reader, the composer's reading is used."""
    monkeypatch.setattr(manifest_yaml, "_libyaml_events", lambda text: -1)
    calls: list[str] = []

    class Counting(manifest_yaml._Composer):
        def run(self, loader: object) -> manifest_yaml.Document:
            calls.append("composer")
            return super().run(loader)

    monkeypatch.setattr(manifest_yaml, "_Composer", Counting)
    manifest = parse_manifest(workload_manifest("chat-0042").encode(), PATH)
    assert calls == ["composer"]
    assert manifest.entries[0].name == "CHAT_0042_BOT_TOKEN"


def test_pure_python_loader_never_takes_the_block_reader(monkeypatch: pytest.MonkeyPatch) -> None:
    """With the pure-Python loader (no libyaml to check against), the composer reads everything."""
    monkeypatch.setattr(manifest_yaml, "_loader_class", lambda: yaml.SafeLoader)
    monkeypatch.setattr(manifest_yaml, "_read_block", lambda text: pytest.fail("block reader used"))
    text = workload_manifest("chat-0042").encode()
    assert outcome(text) == reference_outcome(text)


def test_a_resolver_changed_at_run_time_turns_the_block_reader_off(
    monkeypatch: pytest.MonkeyPatch,
) -> None:
    """A wildcard implicit resolver added to PyYAML's Resolver: the block reader declines."""
    table = {key: list(value) for key, value in Resolver.yaml_implicit_resolvers.items()}
    table[None] = [("tag:yaml.org,2002:int", re.compile(r"^x$"))]
    monkeypatch.setattr(Resolver, "yaml_implicit_resolvers", table)
    assert manifest_yaml._read_block("name: p\n") is None


# -- linear time ---------------------------------------------------------------------------------


@pytest.mark.parametrize(
    "text",
    [
        "name: " + "a " * 60_000 + "&\n",
        "name: " + "a:" * 60_000 + "\n",
        " " * 120_000 + "&\n",
        "k: '" + "a" * 120_000 + "\n",
        "requires_env:\n" + "  - A_TOKEN\n" * 20_000,
        "- " * 60_000 + "x\n",
    ],
    ids=["words", "colons", "spaces", "open quote", "many lines", "many dashes"],
)
def test_block_reader_is_linear_on_large_inputs(text: str) -> None:
    """Near the size limit, adversarial lines are read (or given up) well within the watchdog."""
    assert len(text.encode()) <= manifest_schema.MAX_MANIFEST_BYTES
    run_with_watchdog(lambda: manifest_yaml._read_block(text))
    run_with_watchdog(lambda: outcome(text.encode()))


# -- decoding ------------------------------------------------------------------------------------


@pytest.mark.parametrize(
    "data",
    [
        b"",
        b"name: p\n",
        b"name: p\x7f\n",
        b"name: p\x1b[0m\n",
        b"name: p\x0c\n",
        b"name: p\x85\n",
        b"name: p\x00\n",
        b"name: \xc3\xa9\n",
        b"name: \xc2\x85\n",
        b"name: \xc2\x9f\n",
        b"\xef\xbb\xbfname: p\n",
        b"name: \xed\xa0\x80\n",
        b"a\tb\r\nc\rd\n",
    ],
)
def test_decoding_agrees(data: bytes) -> None:
    """The one-pass ASCII check accepts and refuses exactly what the character regex does."""

    def decoded() -> Outcome:
        try:
            return ("text", manifest_yaml.decode_manifest(data, PATH))
        except ManifestError as err:
            return ("error", err.message, err.line)

    fast = decoded()
    with reference_paths():
        assert decoded() == fast


# -- validation ----------------------------------------------------------------------------------


def test_name_check_matches_str_isspace_for_every_code_point() -> None:
    """The regex ``\\s`` the name check uses is exactly ``str.isspace``, character by character."""
    every = "".join(map(chr, range(sys.maxunicode + 1)))
    assert set(re.findall(r"\s", every)) == {char for char in every if char.isspace()}


def checked_repr(checked: manifest_schema._Checked) -> str:
    """A ``_Checked`` as text, entries as plain tuples (the fast path builds plain tuples)."""
    sections = {s: [tuple(e) for e in checked.sections[s]] for s in ENV_SECTIONS}
    return repr((checked.name, checked.kind, sections))


ROOTS = [
    {},
    {"name": "p", "kind": "platform"},
    {"name": 1},
    {"name": True},
    {"kind": ["platform"]},
    {2: 2, None: "x", True: [], 1.5: {}},
    {"requires_env": None, "optional_env": []},
    {"requires_env": "A_TOKEN"},
    {"requires_env": ("A_TOKEN",)},
    {"requires_env": {"name": "A"}},
    {"requires_env": ["A_TOKEN", "b_key", "_X", "X1", "1X", "É_KEY"]},
    {"requires_env": [""]},
    {"requires_env": ["A B"]},
    {"requires_env": ["A=B"]},
    {"requires_env": ["A\x00"]},
    {"requires_env": ["\u00a0X"]},
    {"requires_env": ["X\u2028"]},
    {"requires_env": ["X\u200b"]},
    {"requires_env": [None]},
    {"requires_env": [1]},
    {"requires_env": [True]},
    {"requires_env": [["A"]]},
    {"requires_env": [{}]},
    {"requires_env": [{"name": None}]},
    {"requires_env": [{"name": 1}]},
    {"requires_env": [{"name": "A", "secret": 1}]},
    {"requires_env": [{"name": "A", "secret": "yes"}]},
    {"requires_env": [{"name": "A", "secret": None, "password": True}]},
    {"requires_env": [{"name": "A", "secret": False, "password": False}]},
    {"requires_env": [{"name": "A", "secret": True, "password": False}]},
    {"requires_env": [{"name": "A", "password": 0}]},
    {"requires_env": [{"name": "A", "category": 5}]},
    {"requires_env": [{"name": "A", "category": None, "description": None}]},
    {"requires_env": [{"name": "A", "description": ["x"], "url": "u"}]},
    {"requires_env": [{"name": "A", "prompt": 1.5}]},
    {"requires_env": [{"name": "A", "extra": object(), 7: 8, None: None}]},
    {"optional_env": [{"name": "A", "secret": True, "password": True, "category": "messaging"}]},
]


@pytest.mark.parametrize("root", ROOTS, ids=repr)
def test_fast_check_accepts_only_what_the_models_accept(root: dict[object, object]) -> None:
    """Where the fast check answers, the pydantic models accept the root with the same result."""
    fast = manifest_schema._fast_check(root)
    try:
        slow = manifest_schema._validator()(root)
    except ValidationError:
        assert fast is None
        return
    if fast is not None:
        assert checked_repr(fast) == checked_repr(slow)
