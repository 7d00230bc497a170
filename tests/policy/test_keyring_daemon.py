"""``KeyringSource`` against a real Secret Service: gnome-keyring under ``dbus-run-session``.

``.ci/run`` installs Debian's gnome-keyring (and dbus). The test runs a child
in its own D-Bus session with a throw-away ``HOME`` and runtime directory; the
child unlocks a fresh login keyring, stores entries through keyring's
SecretService backend (the one a Linux desktop uses), then reads them back
through ``KeyringSource`` and a routed ``Host`` build, and reports what it saw
as JSON. Without the programs, or without ``secretstorage``, it skips and says why.
"""

from __future__ import annotations

import importlib.util
import json
import os
import shutil
import subprocess
import sys
from pathlib import Path

import pytest

MISSING = [t for t in ("dbus-run-session", "gnome-keyring-daemon") if shutil.which(t) is None]
if importlib.util.find_spec("secretstorage") is None:
    MISSING.append("the secretstorage package (keyring's Linux dependency)")
pytestmark = pytest.mark.skipif(
    bool(MISSING), reason=f"needs {', '.join(MISSING)} (Debian: gnome-keyring, dbus)"
)

CHILD = r"""
import json, os, subprocess, sys, tempfile
started = subprocess.run(
    ["gnome-keyring-daemon", "--unlock", "--components=secrets"],
    input=b"a-throw-away-login-password\n", capture_output=True, timeout=20,
)
import keyring
from keyring.backends import SecretService
keyring.set_keyring(SecretService.Keyring())
keyring.set_password("envscope-test", "github", "keyring-gh-value-0123456789")
keyring.set_password("envscope-test", "b-user", "keyring-b-value-0123456789")

from envscope import Catalog, Host, KeyringSource, SourceError, Trace

report = {"daemon": started.returncode}
source = KeyringSource("envscope-test", {"*": {"GH_TOKEN": "github"}})
report["fetched"] = dict(source.fetch("/any-home"))
try:
    KeyringSource("envscope-test", {"*": {"NOPE": "no-such-user"}}).fetch("/any-home")
except SourceError as err:
    report["missing"] = str(err)

launch, routed = tempfile.mkdtemp(), tempfile.mkdtemp()
host = Host(launch, environ={"PATH": os.defpath}, catalog=Catalog.default())
host.add_secret_source(KeyringSource("envscope-test", {routed: {"B_SETTING": "b-user"}}))
host.load_launch_env()
trace = Trace()
with host.routed(routed):
    child = host.build_subprocess_env(trace=trace)
report["child"] = child.get("B_SETTING")
report["origin"] = trace.final()["B_SETTING"].origin.detail
print(json.dumps(report))
"""


def test_a_real_secret_service_answers_through_keyring_source(tmp_path: Path) -> None:
    home, runtime = tmp_path / "home", tmp_path / "run"
    home.mkdir()
    runtime.mkdir(mode=0o700)
    env = {"PATH": os.environ.get("PATH", os.defpath), "HOME": str(home),
           "XDG_RUNTIME_DIR": str(runtime), "LANG": "C.UTF-8"}  # fmt: skip
    done = subprocess.run(
        ["dbus-run-session", "--", sys.executable, "-c", CHILD],
        env=env, capture_output=True, text=True, timeout=90, check=False,
    )  # fmt: skip
    assert done.returncode == 0, done.stderr[-2000:]
    report = json.loads(done.stdout.strip().splitlines()[-1])
    assert report["daemon"] == 0
    assert report["fetched"] == {"GH_TOKEN": "keyring-gh-value-0123456789"}
    assert "no entry for NOPE" in report["missing"]
    assert "user 'no-such-user'" in report["missing"]
    assert report["child"] == "keyring-b-value-0123456789"
    assert report["origin"] == "keyring (service 'envscope-test', user 'b-user')"
