"""Config trust: a discovered config and what it names must be ours; every file is read safely."""

from __future__ import annotations

import os
import stat
from dataclasses import dataclass
from pathlib import Path

import pytest

from envscope.cli import main
from envscope.cli.config import CONFIG_ENV, MAX_CONFIG_BYTES, load_config
from envscope.errors import CatalogError, ConfigFileError
from envscope.files import _trusted_file
from envscope.policy.catalog import Catalog
from tests._privdrop import NOBODY, nobody_tree, run_as_nobody
from tests._watchdog import run_with_watchdog

RULE = "must be owned by you or root and not writable by group or others"


@pytest.fixture(autouse=True)
def clean_process_env(monkeypatch: pytest.MonkeyPatch) -> None:
    """The CLI reads os.environ: a small fixed one with a fingerprint key."""
    for key in list(os.environ):
        monkeypatch.delenv(key)
    monkeypatch.setenv("PATH", "/usr/bin:/bin")
    monkeypatch.setenv("ENVSCOPE_FINGERPRINT_KEY", "a-test-key-of-enough-length")


def make_setup(top: Path) -> Path:
    """A config dir with a launch home, a catalog and a managed file; returns the config path."""
    top.mkdir(parents=True, exist_ok=True)
    (top / "launch").mkdir()
    (top / "cat.yaml").write_text("tier1: [MY_HOST_SECRET]\n")
    (top / "managed.env").write_text("MANAGED_SETTING=1\n")
    (top / "bin").mkdir()
    (top / "bin" / "bws").write_text("#!/bin/sh\nexit 1\n")
    (top / "key.txt").write_text("AGE-SECRET-KEY-1 not used: no entries\n")
    config = top / "envscope.yaml"
    config.write_text(
        "launch_home: launch\ncatalog: cat.yaml\nmanaged_env_file: managed.env\n"
        "sources:\n  - {type: bitwarden, executable: bin/bws, entries: {}}\n"
        "  - {type: age, identities: key.txt, entries: {}}\n"
    )
    for path in (top, top / "launch", top / "bin", top / "bin" / "bws"):
        path.chmod(0o755)
    for path in (config, top / "cat.yaml", top / "managed.env", top / "key.txt"):
        path.chmod(0o644)
    return config


@dataclass(frozen=True)
class FakeStat:
    """The two fields the trust rule reads."""

    st_mode: int
    st_uid: int


FILE, DIR = stat.S_IFREG | 0o644, stat.S_IFDIR | 0o755


@pytest.mark.parametrize(
    ("file_stat", "dir_stat", "expected"),
    [
        (FakeStat(FILE, 1000), FakeStat(DIR, 1000), None),
        (FakeStat(FILE, 0), FakeStat(DIR, 0), None),
        (FakeStat(FILE, 4242), FakeStat(DIR, 1000), "owned by uid 4242"),
        (FakeStat(FILE | 0o020, 1000), FakeStat(DIR, 1000), "writable by group or others"),
        (FakeStat(FILE | 0o002, 1000), FakeStat(DIR, 1000), "writable by group or others"),
        (FakeStat(FILE, 1000), FakeStat(DIR, 4242), "directory"),
        (FakeStat(FILE, 1000), FakeStat(DIR | 0o020, 1000), "directory"),
        (FakeStat(FILE, 1000), FakeStat(DIR | 0o1777, 0), "directory"),
    ],
)
def test_trust_rule_table_through_the_seam(
    tmp_path: Path, file_stat: FakeStat, dir_stat: FakeStat, expected: str | None
) -> None:
    """Owner is the caller or root, no group/other write bit: for the file and its directory."""
    path = str(tmp_path / "envscope.yaml")

    def fake(where: str) -> FakeStat:
        return file_stat if where == path else dir_stat

    reason = _trusted_file.untrusted_reason(path, euid=1000, stat_fn=fake)
    if expected is None:
        assert reason is None
    else:
        assert reason is not None
        assert expected in reason


def test_discovered_config_refused_through_the_seam(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch, capsys: pytest.CaptureFixture[str]
) -> None:
    """A discovered config another uid owns (the stat seam) exits 2 naming file and rule."""
    config = make_setup(tmp_path / "cfg")
    monkeypatch.chdir(config.parent)

    def other_owner(where: str) -> FakeStat:
        info = os.stat(where)
        return FakeStat(info.st_mode, 4242 if where == str(config) else info.st_uid)

    monkeypatch.setattr(_trusted_file, "_stat", other_owner)
    assert main(["explain"]) == 2
    err = capsys.readouterr().err
    assert "envscope.yaml" in err
    assert RULE in err
    assert "uid 4242" in err


TARGETS = ["config", "directory", "catalog", "managed", "source-executable", "age-identity"]
FAULTS = ["owned-by-nobody", "group-writable", "other-writable"]


def _apply(path: Path, fault: str) -> None:
    if fault == "owned-by-nobody":
        os.chown(path, NOBODY, NOBODY)
    else:
        bit = stat.S_IWGRP if fault == "group-writable" else stat.S_IWOTH
        path.chmod(stat.S_IMODE(path.stat().st_mode) | bit)


def _target(config: Path, target: str) -> Path:
    return {
        "config": config,
        "directory": config.parent,
        "catalog": config.parent / "cat.yaml",
        "managed": config.parent / "managed.env",
        "source-executable": config.parent / "bin" / "bws",
        "age-identity": config.parent / "key.txt",
    }[target]


@pytest.mark.skipif(
    os.name != "posix" or os.geteuid() != 0, reason="chown to another uid needs root"
)
@pytest.mark.parametrize("target", TARGETS)
@pytest.mark.parametrize("fault", FAULTS)
def test_discovered_config_trust_matrix(
    tmp_path: Path,
    monkeypatch: pytest.MonkeyPatch,
    capsys: pytest.CaptureFixture[str],
    target: str,
    fault: str,
) -> None:
    """Discovered: config/dir/catalog/managed untrusted → exit 2 naming it; explicit runs."""
    config = make_setup(tmp_path / "cfg")
    monkeypatch.chdir(config.parent)
    assert main(["explain"]) == 0, capsys.readouterr().err  # the healthy setup is trusted
    capsys.readouterr()
    _apply(_target(config, target), fault)
    assert main(["explain"]) == 2
    err = capsys.readouterr().err
    assert RULE in err
    assert str(_target(config, target).name) in err
    assert "Traceback" not in err
    # the same file named explicitly is the user's choice
    assert main(["--config", str(config), "explain"]) == 0, capsys.readouterr().err


@pytest.mark.parametrize(
    ("argv", "env", "needle"),
    [
        (["--config", "", "explain"], {}, "--config: is empty"),
        (["explain"], {CONFIG_ENV: ""}, f"${CONFIG_ENV}: is set but empty"),
    ],
)
def test_empty_config_choice_is_an_error_not_discovery(
    tmp_path: Path,
    monkeypatch: pytest.MonkeyPatch,
    capsys: pytest.CaptureFixture[str],
    argv: list[str],
    env: dict[str, str],
    needle: str,
) -> None:
    """An empty --config or $ENVSCOPE_CONFIG exits 2, even with a valid ./envscope.yaml present."""
    config = make_setup(tmp_path / "cfg")
    monkeypatch.chdir(config.parent)
    for key, value in env.items():
        monkeypatch.setenv(key, value)
    assert main(argv) == 2
    assert needle in capsys.readouterr().err


@pytest.mark.skipif(not hasattr(os, "mkfifo"), reason="FIFOs need POSIX")
@pytest.mark.parametrize("which", ["explicit", "env", "discovered", "catalog"])
def test_fifo_config_or_catalog_never_hangs(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch, capsys: pytest.CaptureFixture[str], which: str
) -> None:
    """A FIFO as --config, $ENVSCOPE_CONFIG, ./envscope.yaml or catalog: exit 2, no hang."""
    config = make_setup(tmp_path / "cfg")
    monkeypatch.chdir(config.parent)
    fifo = config.parent / ("cat.yaml" if which == "catalog" else "envscope.yaml")
    fifo.unlink()
    os.mkfifo(fifo, 0o644)
    if which == "catalog":
        (config.parent / "envscope.yaml").write_text("launch_home: launch\ncatalog: cat.yaml\n")
        (config.parent / "envscope.yaml").chmod(0o644)
    argv = {"explicit": ["--config", str(fifo), "explain"]}.get(which, ["explain"])
    if which == "env":
        monkeypatch.setenv(CONFIG_ENV, str(fifo))
    code = run_with_watchdog(lambda: main(argv))
    assert code == 2
    assert "is not a regular file" in capsys.readouterr().err


# -- one reader and one set of limits for every YAML file ---------------------------------


def _load(kind: str, path: Path) -> object:
    return load_config(str(path)) if kind == "config" else Catalog.from_file(path)


def _body(kind: str) -> str:
    return "launch_home: a\n" if kind == "config" else "tier1: [A_TOKEN]\n"


@pytest.mark.parametrize("kind", ["config", "catalog"])
@pytest.mark.parametrize(
    ("text", "needle", "line"),
    [
        ("{body}multiplex: true\nmultiplex: false\n", "duplicate key (first defined on line 2)", 3),
        ("{body}" + "x: " + "[" * 20000 + "\n", "nesting", None),
        ("{body}" + "k: " + "{a: " * 5000 + "\n", "nesting", None),
        ("{body}homes: &h {a: b}\n", "anchors and aliases", 2),
        ("{body}" + "# " + "x" * MAX_CONFIG_BYTES + "\n", "is larger than 262144 bytes", None),
        ("{body}v: !!python/object:os.system x\n", "YAML tags other than", 2),
    ],
    ids=["duplicate", "deep-list", "deep-map", "alias", "oversize", "tag"],
)
def test_yaml_files_share_the_manifest_reader_limits(
    tmp_path: Path, kind: str, text: str, needle: str, line: int | None
) -> None:
    """Config and catalog: duplicates (both lines), depth, aliases, tags, size → typed error."""
    path = tmp_path / f"{kind}.yaml"
    body = _body(kind)
    if "multiplex" in text and kind == "catalog":
        text = text.replace("multiplex: true", "tier2: []").replace("multiplex: false", "tier2: []")
    path.write_text(text.replace("{body}", body, 1))
    error = ConfigFileError if kind == "config" else CatalogError
    with pytest.raises(error) as info:
        _load(kind, path)
    assert needle in str(info.value)
    assert info.value.__context__ is None
    assert info.value.__cause__ is None
    if line is not None:
        assert info.value.line == line


def test_oversized_config_is_refused_not_truncated(tmp_path: Path) -> None:
    """A config over the limit is refused even when its first bytes parse (no cut launch_home)."""
    path = tmp_path / "envscope.yaml"
    path.write_text("homes: {}\n" + "#" * MAX_CONFIG_BYTES + "\nlaunch_home: /srv/long/name\n")
    with pytest.raises(ConfigFileError, match="larger than"):
        load_config(str(path))


def test_pydantic_error_names_the_line(tmp_path: Path) -> None:
    """A schema error names the line of the offending field, never its value."""
    path = tmp_path / "envscope.yaml"
    path.write_text("launch_home: a\n\nmultiplex: 'sekrit-value-xyz'\n")
    with pytest.raises(ConfigFileError) as info:
        load_config(str(path))
    assert info.value.line == 3
    assert info.value.field == "multiplex"
    assert "sekrit-value-xyz" not in repr(info.value.args)


# -- for real, as uid 65534 ---------------------------------------------------------------------

PLANT = """
import os, sys
top = sys.argv[1]
shared = os.path.join(top, "shared")
os.makedirs(os.path.join(shared, "evil"), exist_ok=True)
mine = os.path.join(top, "mine")
os.makedirs(os.path.join(mine, "launch"), exist_ok=True)
os.chmod(mine, 0o755)
for d in (shared, mine):
    with open(os.path.join(d, "envscope.yaml"), "w") as fh:
        fh.write("launch_home: .\\ncatalog: cat.yaml\\nmanaged_env_file: evil.env\\n")
    with open(os.path.join(d, "cat.yaml"), "w") as fh:
        fh.write("tier1: []\\n")
    with open(os.path.join(d, "evil.env"), "w") as fh:
        fh.write("PATH=" + os.path.join(shared, "evil") + "\\n")
print("planted")
"""


@pytest.mark.privdrop
@pytest.mark.parametrize("where", ["shared", "mine"])
def test_config_planted_by_another_user_is_refused(
    monkeypatch: pytest.MonkeyPatch, capsys: pytest.CaptureFixture[str], where: str
) -> None:
    """uid 65534 plants envscope.yaml (a 1777 dir, or its own dir): root's envscope exits 2."""
    with nobody_tree() as top:
        shared = top / "shared"
        shared.mkdir()
        shared.chmod(0o1777)  # a world-writable sticky directory, like /tmp
        proc = run_as_nobody(PLANT, str(top))
        assert proc.returncode == 0, proc.stderr
        assert "planted" in proc.stdout
        monkeypatch.chdir(top / where)
        assert (top / where / "envscope.yaml").stat().st_uid == NOBODY
        assert main(["run", "--", "true"]) == 2
        err = capsys.readouterr().err
        assert "envscope.yaml" in err
        assert RULE in err
        assert str(top / where / "envscope.yaml") in err
        assert f"owned by uid {NOBODY}" in err
