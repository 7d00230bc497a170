"""Read trufflehog's detectors into ``benchmarks/peer_rules.yaml`` (its ``trufflehog`` section).

``python -m benchmarks.peer_rules_trufflehog PATH`` reads a clone of
trufflesecurity/trufflehog at PATH (its ``HEAD``) and prints the section:
every detector (a directory of ``pkg/detectors`` whose Go code has a
``FromData``) and, as ``keyword_context``, the detectors whose every pattern
sits behind ``detectors.PrefixRegex`` (a keyword next to the value: inside an
environment the variable's name is that context). Read, never copied: only
the detectors' names are kept.
"""

from __future__ import annotations

import re
import subprocess
import sys


def _git(repo: str, *args: str) -> str:
    return subprocess.run(
        ["git", "-C", repo, *args], capture_output=True, text=True, check=True
    ).stdout


def detectors(repo: str) -> tuple[str, list[str], list[str]]:
    """(the commit, every detector, the keyword-context detectors), sorted."""
    commit = _git(repo, "rev-parse", "HEAD").strip()
    sources: dict[str, str] = {}
    for path in _git(repo, "ls-tree", "-r", "--name-only", "HEAD", "pkg/detectors/").splitlines():
        parts = path.split("/")
        if len(parts) >= 4 and path.endswith(".go") and not path.endswith("_test.go"):
            sources[parts[2]] = sources.get(parts[2], "") + _git(repo, "show", f"HEAD:{path}")
    found = sorted(d for d, src in sources.items() if "FromData(" in src)
    standalone = re.compile(r"MustCompile\((`[^`]*`|\"[^\"]*\")\)")
    keyword = [
        d for d in found if "PrefixRegex(" in sources[d] and not standalone.search(sources[d])
    ]
    return commit, found, keyword


def main(argv: list[str] | None = None) -> int:
    """Print the ``trufflehog`` section for the clone named on the command line."""
    args = sys.argv[1:] if argv is None else argv
    if len(args) != 1:
        print("usage: python -m benchmarks.peer_rules_trufflehog PATH-TO-A-TRUFFLEHOG-CLONE")
        return 2
    commit, found, keyword = detectors(args[0])
    print("trufflehog:")
    print(f"  source: https://github.com/trufflesecurity/trufflehog/tree/{commit}/pkg/detectors")
    print("  rules:")
    print("".join(f"    - {d}\n" for d in found), end="")
    print("  keyword_context:")
    print("".join(f"    - {d}\n" for d in keyword), end="")
    return 0


if __name__ == "__main__":
    raise SystemExit(main())
