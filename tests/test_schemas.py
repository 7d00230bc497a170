"""The shipped JSON Schemas: generated from the pydantic models (drift test) and true to the
readers: every document envscope accepts validates, and what the schema refuses envscope refuses.

Run with ``ENVSCOPE_UPDATE_DOCS=1`` to regenerate the generated schemas after a model change.
"""

from __future__ import annotations

import copy
import json
import os
from pathlib import Path
from typing import Any, Union

import jsonschema
import pytest
import yaml

from envscope.cli import main
from envscope.cli.config import _model
from envscope.manifests._schema import ENV_NAME_PATTERN, _validator
from envscope.schemas import SCHEMAS, load_schema
from envscope.tools._report import SNAPSHOT_VERSION
from envscope.tools._snapshot import snapshot_models

ROOT = Path(__file__).resolve().parent.parent
SCHEMA_DIR = ROOT / "envscope" / "schemas"
BASE_URL = "https://raw.githubusercontent.com/envscope/envscope/main/envscope/schemas/"


def _manifest_model() -> Any:
    """The manifest reader's pydantic model (built inside the reader; read, never modified)."""
    validate = _validator()
    for cell in validate.__closure__ or ():
        model = cell.cell_contents
        if isinstance(model, type) and model.__name__ == "ManifestModel":
            return model
    raise AssertionError("the manifest reader no longer holds ManifestModel: update this test")


def _finish(schema: dict[str, Any], name: str, title: str) -> dict[str, Any]:
    return {
        "$schema": "https://json-schema.org/draft/2020-12/schema",
        "$id": BASE_URL + name,
        **schema,
        "title": title,
    }


SNAPSHOT_DESCRIPTION = (
    "What `envscope snapshot` writes and `envscope explain --json` prints (format version 2), "
    "and format version 1, which `envscope diff` still reads: keys, decisions and "
    "fingerprints, never a value (except `values`, only with --show-values)."
)


def _snapshot_schema() -> dict[str, Any]:
    """One schema for every format version diff reads, from the reader's own models."""
    from pydantic import TypeAdapter

    models = snapshot_models()
    versions = [models[v] for v in sorted(models, reverse=True)]
    union: Any = Union[tuple(versions)]  # noqa: UP007 (a union of a runtime tuple)
    schema = TypeAdapter(union).json_schema()
    return {**schema, "description": SNAPSHOT_DESCRIPTION}


def generated() -> dict[str, dict[str, Any]]:
    """The three generated schemas, from the models as they are now."""
    manifest = _manifest_model().model_json_schema()
    # The reader also takes a bare name for an entry (a model_validator before the fields),
    # which pydantic's schema cannot see: say it here.
    for section in ("requires_env", "optional_env"):
        prop = manifest["properties"][section]
        listed = next(option for option in prop["anyOf"] if option.get("type") == "array")
        bare = {"type": "string", "pattern": ENV_NAME_PATTERN}
        listed["items"] = {"anyOf": [bare, listed["items"]]}
    config = _model().model_json_schema()
    return {
        "plugin.schema.json": _finish(manifest, "plugin.schema.json", "envscope plugin.yaml"),
        "envscope.schema.json": _finish(config, "envscope.schema.json", "envscope.yaml"),
        "snapshot.schema.json": _finish(
            _snapshot_schema(), "snapshot.schema.json", "envscope snapshot"
        ),
    }


def _text(schema: dict[str, Any]) -> str:
    return json.dumps(schema, indent=2, sort_keys=True) + "\n"


@pytest.mark.parametrize("name", sorted(generated()))
def test_generated_schema_is_current(name: str) -> None:
    """The shipped schema is exactly what the pydantic model generates today (no drift)."""
    text = _text(generated()[name])
    path = SCHEMA_DIR / name
    if os.environ.get("ENVSCOPE_UPDATE_DOCS"):
        path.write_text(text)
    assert path.read_text() == text


@pytest.mark.parametrize("name", SCHEMAS)
def test_schemas_are_valid_and_shipped(name: str) -> None:
    """Each schema is a valid Draft 2020-12 schema, loadable from the installed package."""
    schema = load_schema(name)
    jsonschema.Draft202012Validator.check_schema(schema)
    assert schema["$id"] == BASE_URL + name


def test_unknown_schema_name_is_refused() -> None:
    """load_schema names the shipped schemas when asked for another."""
    with pytest.raises(ValueError, match=r"one of plugin, .*envscope\.schema\.json"):
        load_schema("nope.json")


@pytest.mark.parametrize(
    ("short", "file"),
    [("plugin", "plugin.schema.json"), ("plugin.yaml", "plugin.schema.json"),
     ("envscope", "envscope.schema.json"), ("config", "envscope.schema.json"),
     ("envscope.yaml", "envscope.schema.json"), ("snapshot", "snapshot.schema.json")],
)  # fmt: skip
def test_the_short_names_the_docs_use_load_the_same_schema(short: str, file: str) -> None:
    assert load_schema(short) == load_schema(file)


def _yaml_documents(pattern: str) -> list[Path]:
    return sorted(p for p in (ROOT / "fixtures").rglob(pattern) if "bad" not in p.parts)


@pytest.mark.parametrize(
    "path", _yaml_documents("plugin.y*ml") + sorted((ROOT / "fixtures/manifests/good").iterdir()),
    ids=lambda p: str(p.relative_to(ROOT)),
)  # fmt: skip
def test_accepted_manifests_validate(path: Path) -> None:
    """Every manifest the reader accepts validates against plugin.schema.json."""
    from envscope.errors import ManifestError
    from envscope.manifests._schema import parse_manifest

    try:
        parse_manifest(path.read_bytes(), str(path))
    except ManifestError:
        pytest.skip("the reader refuses this fixture (a broken-on-purpose demo plugin)")
    from envscope.files._yaml import read_document
    from envscope.manifests._schema import MAX_MANIFEST_BYTES

    doc = read_document(
        path.read_bytes(), str(path), error=ManifestError, kind="manifest",
        max_bytes=MAX_MANIFEST_BYTES,
    )  # fmt: skip
    jsonschema.validate(doc.root, load_schema("plugin.schema.json"))


@pytest.mark.parametrize(
    "document",
    [{"requires_env": "X_TOKEN"}, {"requires_env": [{"name": "X", "secret": "yes"}]},
     {"requires_env": [{"secret": True}]}, {"name": 3}, {"optional_env": [7]}],
    ids=["string-list", "secret-text", "no-name", "name-int", "entry-int"],
)  # fmt: skip
def test_refused_manifests_fail_the_schema_too(document: dict[str, Any]) -> None:
    """A manifest shape the reader refuses fails the schema as well."""
    with pytest.raises(jsonschema.ValidationError):
        jsonschema.validate(document, load_schema("plugin.schema.json"))


def test_demo_config_validates_and_typos_do_not() -> None:
    """The demo envscope.yaml validates; an unknown key or a bad enum does not (extra=forbid)."""
    schema = load_schema("envscope.schema.json")
    doc = yaml.safe_load((ROOT / "fixtures/demo/envscope.yaml").read_text())
    jsonschema.validate(doc, schema)
    for bad in ({**doc, "multiplexx": True}, {**doc, "on_unreadable_platform": "ignore"},
                {**doc, "surfaces": {"shell": {}}}):  # fmt: skip
        with pytest.raises(jsonschema.ValidationError):
            jsonschema.validate(bad, schema)


@pytest.fixture
def demo_snapshots(
    capsys: pytest.CaptureFixture[str], monkeypatch: pytest.MonkeyPatch
) -> list[Any]:
    """explain --json of the demo for every home and surface, plus a warning-bearing build."""
    for key in list(os.environ):
        monkeypatch.delenv(key)
    monkeypatch.setenv("PATH", "/usr/bin:/bin")
    monkeypatch.setenv("ENVSCOPE_FINGERPRINT_KEY", "schema-test-key-0001")
    monkeypatch.setenv("MY_APP_KEY", "plain-operator-value")  # a warning record (name shape)
    monkeypatch.chdir(ROOT)
    out = []
    for home in ("launch", "work", "personal"):
        for surface in ("terminal", "script", "worker", "credentialed", "mcp"):
            argv = ["--config", "fixtures/demo/envscope.yaml", "explain", "--json"]
            main([*argv, "--home", home, "--surface", surface, "--show-values"])
            out.append(json.loads(capsys.readouterr().out))
    return out


def test_snapshots_validate_against_the_schema(demo_snapshots: list[Any]) -> None:
    """Every snapshot explain --json prints validates against snapshot.schema.json."""
    schema = load_schema("snapshot.schema.json")
    assert {s["envscope_snapshot"] for s in demo_snapshots} == {SNAPSHOT_VERSION}
    assert any(s["warnings"] for s in demo_snapshots)
    for snap in demo_snapshots:
        jsonschema.validate(snap, schema)


@pytest.mark.parametrize(
    ("where", "value"),
    [(("keys", "PATH", "origin"), "catalog: text"), (("warnings",), ["PATH: text"]),
     (("keys", "PATH", "action"), "vanished"), (("envscope_snapshot",), 1),
     (("child",), "PATH"), (("keys", "PATH", "fingerprint"), 7)],
    ids=["origin-text", "warning-text", "unknown-action", "version-1", "child-text",
         "fingerprint-int"],
)  # fmt: skip
def test_schema_refuses_prose_and_wrong_types(
    demo_snapshots: list[Any], where: tuple[str, ...], value: object
) -> None:
    """The schema pins the structured fields: prose origins or warnings fail it."""
    snap = copy.deepcopy(demo_snapshots[1])
    target = snap
    for part in where[:-1]:
        target = target[part]
    target[where[-1]] = value
    with pytest.raises(jsonschema.ValidationError):
        jsonschema.validate(snap, load_schema("snapshot.schema.json"))


def test_snapshot_schema_enums_match_the_vocabulary() -> None:
    """The schema's action and stage enums are exactly the trace's Action and Stage values."""
    from envscope import Action, Stage

    defs = load_schema("snapshot.schema.json")["$defs"]
    assert defs["Decision"]["properties"]["action"] == {"$ref": "#/$defs/Action"}
    assert defs["Decision"]["properties"]["stage"] == {"$ref": "#/$defs/Stage"}
    assert defs["Action"]["enum"] == [a.value for a in Action]
    assert defs["Stage"]["enum"] == [s.value for s in Stage]
