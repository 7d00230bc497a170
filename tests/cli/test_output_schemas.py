"""``diff --json`` and ``check-spawns --json`` validate against the schemas envscope ships.

Every demo diff (between homes and surfaces, live and from snapshots, with
and without differences) and check-spawns over the spawn fixtures (findings,
allowed sites, a file that cannot be parsed) validate; a document that breaks
the contract (a change that is no change, an error as a bare string) does not.
"""

from __future__ import annotations

import json
from pathlib import Path

import jsonschema
import pytest

from envscope.cli import main
from envscope.schemas import load_schema
from tests.cli.test_cli import CONFIG, clean_process_env  # noqa: F401 - autouse

SPAWNS = Path(CONFIG).parents[1] / "spawns"
DIFFS = [
    ["home:work", "home:personal"],
    ["home:work/terminal", "home:work/credentialed"],
    ["home:launch", "home:launch"],
    ["home:work/mcp", "home:personal/script"],
]


@pytest.mark.parametrize("operands", DIFFS, ids=["homes", "surfaces", "same", "mixed"])
def test_diff_json_validates(capsys: pytest.CaptureFixture[str], operands: list[str]) -> None:
    main(["--config", CONFIG, "diff", *operands, "--json"])
    jsonschema.validate(json.loads(capsys.readouterr().out), load_schema("diff"))


def test_check_spawns_json_validates(tmp_path: Path, capsys: pytest.CaptureFixture[str]) -> None:
    broken = tmp_path / "broken.py"
    broken.write_text("def (:\n")
    code = main(["check-spawns", str(SPAWNS), str(broken), "--json", "--show-allowed"])
    assert code == 2
    data = json.loads(capsys.readouterr().out)
    jsonschema.validate(data, load_schema("check-spawns"))
    assert data["errors"] == [
        {"path": str(broken), "line": 1, "message": "cannot parse: invalid syntax"}
    ]
    assert data["sites"]
    assert any(site["allowed"] for site in data["sites"])


@pytest.mark.parametrize(
    ("schema", "document"),
    [("diff", {"a": "x", "b": "y", "fingerprints_comparable": True,
               "differences": [{"key": "K", "change": "moved", "a": None, "b": None}]}),
     ("check-spawns", {"sites": [], "errors": ["x.py: cannot read"], "bypassing": 0,
                       "allowed": 0}),
     ("check-spawns", {"sites": [], "errors": [], "bypassing": 0})],
    ids=["unknown-change", "bare-string-error", "missing-count"],
)  # fmt: skip
def test_a_broken_contract_fails_the_schema(schema: str, document: dict[str, object]) -> None:
    with pytest.raises(jsonschema.ValidationError):
        jsonschema.validate(document, load_schema(schema))
