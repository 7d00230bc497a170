"""check-spawns leaves out third-party and ignored trees: virtualenvs, .gitignore, --exclude."""

from __future__ import annotations

import itertools
import json
import shutil
import subprocess
from pathlib import Path

import pytest
from hypothesis import HealthCheck, given, settings
from hypothesis import strategies as st

from envscope.cli import main
from envscope.tools._ignore import IgnoreRules
from envscope.tools._spawn_check import check_paths

BAD = "import os\nos.system('x')\n"

# (gitignore lines, path relative to the base, is a directory, ignored)
GITIGNORE: list[tuple[str, str, bool, bool]] = [
    ("venv", "venv", True, True),
    ("venv", "a/b/venv", True, True),
    ("venv/", "venv", False, False),  # a trailing slash matches directories only
    ("venv/", "venv", True, True),
    ("/venv", "a/venv", True, False),  # a leading slash anchors to the base
    ("/venv", "venv", True, True),
    ("a/venv", "a/venv", True, True),  # a middle slash anchors too
    ("a/venv", "x/a/venv", True, False),
    ("*.py", "deep/x.py", False, True),
    ("gen_*.py", "pkg/gen_api.py", False, True),
    ("gen_*.py", "pkg/api.py", False, False),
    ("*", "anything", False, True),
    ("x?.py", "xa.py", False, True),
    ("x?.py", "x/a.py", False, False),  # ? never matches a slash
    ("[ab].py", "a.py", False, True),
    ("[!ab].py", "a.py", False, False),
    ("[!ab].py", "c.py", False, True),
    ("**/gen", "a/b/gen", True, True),
    ("**/gen", "gen", True, True),
    ("docs/**", "docs/a/b.py", False, True),
    ("a/**/z", "a/z", True, True),
    ("a/**/z", "a/b/c/z", True, True),
    ("# venv", "# venv", True, False),  # a comment
    ("\\#x.py", "#x.py", False, True),  # an escaped leading #
    ("", "x", True, False),
    ("*.py\n!keep.py", "keep.py", False, False),  # a later negation re-includes
    ("!keep.py\n*.py", "keep.py", False, True),  # the last match wins
    ("venv   ", "venv", True, True),  # trailing spaces are not part of the pattern
    ("out\r", "out", True, True),  # a CRLF file
]


@pytest.mark.parametrize(
    ("lines", "path", "is_dir", "ignored"),
    [pytest.param(*row, id=f"{row[0]!r}-{row[1]}") for row in GITIGNORE],
)
def test_gitignore_rules(lines: str, path: str, is_dir: bool, ignored: bool) -> None:
    """Each gitignore form matches as git documents (gitignore(5)), relative to its base."""
    rules = IgnoreRules().extend(lines.split("\n"), "/base")
    assert rules.ignored(f"/base/{path}", is_dir=is_dir) is ignored


def _tree(root: Path, files: dict[str, str]) -> None:
    for rel, text in files.items():
        path = root / rel
        path.parent.mkdir(parents=True, exist_ok=True)
        path.write_text(text)


# (files in the tree, --exclude patterns, the .py files checked)
TREES: list[tuple[str, dict[str, str], list[str], list[str]]] = [
    ("venv-any-name", {"env2/pyvenv.cfg": "home = /usr\n", "env2/lib/x.py": BAD, "app.py": BAD},
     [], ["app.py"]),
    ("site-packages", {"lib/site-packages/dep/x.py": BAD, "app.py": BAD}, [], ["app.py"]),
    ("node-modules", {"web/node_modules/x/y.py": BAD, "app.py": BAD}, [], ["app.py"]),
    ("build", {"build/lib/app.py": BAD, "app.py": BAD}, [], ["app.py"]),
    ("gitignore-root", {".gitignore": "generated/\n", "generated/x.py": BAD, "app.py": BAD},
     [], ["app.py"]),
    ("gitignore-nested", {"pkg/.gitignore": "*_pb2.py\n", "pkg/a_pb2.py": BAD, "pkg/a.py": BAD,
                          "b_pb2.py": BAD}, [], ["b_pb2.py", "pkg/a.py"]),
    ("gitignore-negation", {".gitignore": "*.py\n!app.py\n", "x.py": BAD, "app.py": BAD},
     [], ["app.py"]),
    ("exclude-dir", {"vendor/x.py": BAD, "app.py": BAD}, ["vendor/"], ["app.py"]),
    ("exclude-glob", {"a/test_x.py": BAD, "a/x.py": BAD}, ["test_*.py"], ["a/x.py"]),
    ("exclude-anchored", {"a/gen/x.py": BAD, "gen/x.py": BAD}, ["/gen"], ["a/gen/x.py"]),
    ("nothing-skipped", {"a/x.py": BAD, "b.py": BAD}, [], ["a/x.py", "b.py"]),
]  # fmt: skip


@pytest.mark.parametrize(
    ("files", "exclude", "checked"), [pytest.param(*row[1:], id=row[0]) for row in TREES]
)
def test_walk_skips_third_party_and_ignored_trees(
    tmp_path: Path, files: dict[str, str], exclude: list[str], checked: list[str]
) -> None:
    """Virtualenvs, site-packages, node_modules, build/, .gitignore'd and --exclude'd paths."""
    _tree(tmp_path, files)
    sites, errors = check_paths([str(tmp_path)], exclude=exclude)
    assert errors == []
    assert sorted({str(Path(s.path).relative_to(tmp_path)) for s in sites}) == checked


def test_gitignore_above_the_named_directory_applies(tmp_path: Path) -> None:
    """The repository's .gitignore (from the root with .git down) applies to a named subtree."""
    _tree(tmp_path, {".gitignore": "gen/\n", "src/gen/x.py": BAD, "src/a.py": BAD})
    (tmp_path / ".git").mkdir()
    sites, _ = check_paths([str(tmp_path / "src")])
    assert [Path(s.path).name for s in sites] == ["a.py"]
    (tmp_path / ".git").rmdir()  # outside a repository only the walked tree's files count
    sites, _ = check_paths([str(tmp_path / "src")])
    assert sorted(Path(s.path).name for s in sites) == ["a.py", "x.py"]


def test_a_named_file_is_checked_even_when_ignored(tmp_path: Path) -> None:
    """A file named on the command line is checked whatever .gitignore or --exclude say."""
    _tree(tmp_path, {".gitignore": "*.py\n", "a.py": BAD})
    sites, _ = check_paths([str(tmp_path / "a.py")], exclude=["a.py"])
    assert [s.call for s in sites] == ["os.system"]


def test_check_spawns_json_and_stderr(
    capsys: pytest.CaptureFixture[str], tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    """--json lists sites and errors; every error also goes to stderr as `envscope: error: …`."""
    _tree(tmp_path, {"a.py": BAD, "broken.py": "def f(:\n", "vendor/v.py": BAD})
    monkeypatch.chdir(tmp_path)
    code = main(["check-spawns", ".", "--json", "--exclude", "vendor"])
    out, err = capsys.readouterr()
    data = json.loads(out)
    assert code == 2
    assert [(s["path"], s["line"], s["call"]) for s in data["sites"]] == [
        ("./a.py", 2, "os.system")
    ]
    assert data["bypassing"] == 1
    assert data["errors"] == [
        {"path": "./broken.py", "line": 1, "message": "cannot parse: invalid syntax"}
    ]
    assert err == "envscope: error: ./broken.py:1: cannot parse: invalid syntax\n"


SEGMENTS = ["a", "b", "ab", "*", "a*", "*b", "?", "[ab]", "[!a]b", "**"]
NAMES = ["a", "b", "ab"]
PATHS = ["/".join(parts) for depth in (1, 2, 3) for parts in itertools.product(NAMES, repeat=depth)]
GIT = shutil.which("git")


@st.composite
def gitignore_lines(draw: st.DrawFn) -> list[str]:
    """A few gitignore lines: negation, anchoring and directory-only forms over small globs."""
    lines = []
    for _ in range(draw(st.integers(1, 4))):
        body = "/".join(draw(st.lists(st.sampled_from(SEGMENTS), min_size=1, max_size=3)))
        lead = draw(st.sampled_from(["", "/", "!", "!/"]))
        tail = draw(st.sampled_from(["", "/"]))
        lines.append(f"{lead}{body}{tail}")
    return lines


def _walk_ignores(rules: IgnoreRules, base: str, path: str, is_dir: bool) -> bool:
    """What the walk does with ``path``: pruned with an ignored parent, or ignored itself."""
    parts = path.split("/")
    parents = ("/".join(parts[:n]) for n in range(1, len(parts)))
    if any(rules.ignored(f"{base}/{p}", is_dir=True) for p in parents):
        return True
    return rules.ignored(f"{base}/{path}", is_dir=is_dir)


@pytest.mark.property
@pytest.mark.skipif(GIT is None, reason="needs git")
@settings(
    deadline=None,
    max_examples=60,
    derandomize=True,
    suppress_health_check=[HealthCheck.function_scoped_fixture],
)
@given(lines=gitignore_lines())
def test_gitignore_agrees_with_git(
    tmp_path_factory: pytest.TempPathFactory, lines: list[str]
) -> None:
    """For any small .gitignore, the walk leaves out exactly the files `git check-ignore` ignores
    (a file under an ignored directory included: git cannot re-include it either)."""
    repo = tmp_path_factory.mktemp("repo")
    subprocess.run([str(GIT), "init", "-q", str(repo)], check=True)
    (repo / ".gitignore").write_text("\n".join(lines) + "\n")
    queries = PATHS  # files: what the walk checks (a directory matters by what it prunes)
    done = subprocess.run(
        [str(GIT), "-C", str(repo), "check-ignore", "--no-index", "--stdin"],
        input="\n".join(queries) + "\n", capture_output=True, text=True, check=False,
    )  # fmt: skip
    assert done.returncode in (0, 1), done.stderr
    by_git = set(done.stdout.splitlines())
    rules = IgnoreRules().extend(lines, str(repo))
    ours = {q for q in queries if _walk_ignores(rules, str(repo), q, False)}
    assert ours == by_git
