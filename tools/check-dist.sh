#!/usr/bin/env bash
# Build the sdist and the wheel, check their metadata, and prove the wheel works on its own:
# installed without extras in a fresh venv, `envscope --version` and every `--help` run, and
# the sdist carries the whole test suite (it collects the same tests as this checkout).
# build and twine live in a throwaway venv, never in the dev extras.
#   usage: tools/check-dist.sh [WORKDIR]     (default: a new temporary directory)
set -euo pipefail
repo=$(cd "$(dirname "$0")/.." && pwd)
work=${1:-$(mktemp -d)}
python=${PYTHON:-python3}
quiet="--quiet --disable-pip-version-check"

"$python" -m venv "$work/tools"
"$work/tools/bin/pip" install $quiet build twine
"$work/tools/bin/python" -m build --outdir "$work/dist" "$repo"
"$work/tools/bin/twine" check --strict "$work"/dist/*

"$python" -m venv "$work/wheel"
"$work/wheel/bin/pip" install $quiet "$work"/dist/*.whl
cli="$work/wheel/bin/envscope"
test "$("$cli" --version)" = "envscope $("$work/wheel/bin/python" -c 'import envscope; print(envscope.__version__)')"
"$cli" -V >/dev/null
"$cli" --help >/dev/null
for command in explain snapshot diff scan run check-spawns; do
    "$cli" "$command" --help >/dev/null
done
# no extra installed: the SDK is absent and `import envscope` does not need it
"$work/wheel/bin/python" -c 'import importlib.util, envscope; assert importlib.util.find_spec("mcp") is None; envscope.spawn'
"$work/wheel/bin/python" -c 'from envscope.schemas import SCHEMAS, load_schema; [load_schema(n) for n in SCHEMAS]'

mkdir -p "$work/sdist"
tar -xzf "$work"/dist/*.tar.gz -C "$work/sdist"
unpacked=$(echo "$work"/sdist/envscope-*)
count() { (cd "$1" && find tests -name '*.py' | sort); }
if [ "$(count "$repo")" != "$(count "$unpacked")" ]; then
    echo "check-dist: the sdist's tests differ from the checkout's" >&2
    diff <(count "$repo") <(count "$unpacked") >&2 || true
    exit 1
fi
for needed in tests/conftest.py fixtures/demo/envscope.yaml docs/cli.md LICENSE Makefile; do
    test -e "$unpacked/$needed" || { echo "check-dist: the sdist lacks $needed" >&2; exit 1; }
done
echo "check-dist: ok ($(ls "$work/dist" | tr '\n' ' '))"
