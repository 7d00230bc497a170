"""What secret sources cost a host (``make bench``).

- A warm routed build of W1's first profile on a host with sources configured
  (with a TTL, so a warm binding asks no source) against the same host without
  them: the same cost (≤ 1.10x), each build timed after a spawn as the other
  spawn figures are.
- A fresh ``routed()`` binding plus one build, with sources (their answers
  within the TTL) against without: the same cost (≤ 1.10x).
- A cold fetch, per source (informational): ``fetch(home)`` of three names
  against the real ``age`` and ``pass`` where installed, a local HTTP server
  answering as Vault does, moto's Secrets Manager where installed, and the
  fake ``op`` and ``bws`` clients the tests use (a Python start each: they
  measure the runner, not 1Password's or Bitwarden's service).

    python -m benchmarks.source_cost        # prints the figures
"""

from __future__ import annotations

import contextlib
import json
import os
import shutil
import statistics
import subprocess
import sys
import tempfile
import threading
import time
from collections.abc import Callable, Iterator
from http.server import BaseHTTPRequestHandler, ThreadingHTTPServer
from pathlib import Path
from typing import Any

from benchmarks.measure import Config, Figure, interleaved, ratio_figure
from benchmarks.spawn_cost import spawn
from benchmarks.workloads import Workload
from envscope import (
    AgeFileSource,
    AwsSecretsSource,
    BitwardenSource,
    Catalog,
    OnePasswordSource,
    PassSource,
    VaultSource,
)
from envscope.policy.sources import SecretSource

SAME = 1.10
NAMES = ("SRC_ALPHA_TOKEN", "SRC_BETA_TOKEN", "SRC_GAMMA_TOKEN")
VALUE = "source-value-0123456789abcdef"
BWS_IDS = (
    "be8e0ad8-d545-4017-a55a-b02f014d4158",
    "be8e0ad8-d545-4017-a55a-b02f014d4159",
    "be8e0ad8-d545-4017-a55a-b02f014d415a",
)


class _Vault(BaseHTTPRequestHandler):
    """Every KV v2 read answers three fields."""

    def do_GET(self) -> None:
        data = json.dumps({"data": {"data": {"a": VALUE, "b": VALUE, "c": VALUE}}}).encode()
        self.send_response(200)
        self.send_header("Content-Length", str(len(data)))
        self.end_headers()
        self.wfile.write(data)

    def log_message(self, *args: object) -> None:
        """Quiet."""


@contextlib.contextmanager
def _vault() -> Iterator[str]:
    server = ThreadingHTTPServer(("127.0.0.1", 0), _Vault)
    server.daemon_threads = True
    threading.Thread(target=server.serve_forever, args=(0.02,), daemon=True).start()
    try:
        yield f"http://127.0.0.1:{server.server_address[1]}"
    finally:
        server.shutdown()
        server.server_close()


def _vault_source(addr: str) -> VaultSource:
    entries = {"*": dict(zip(NAMES, ("kv/app#a", "kv/app#b", "kv/app#c"), strict=True))}
    return VaultSource(entries, environ={"VAULT_ADDR": addr, "VAULT_TOKEN": "hvs.bench"})


def warm_figures(cfg: Config, catalog: Catalog, w1: Workload) -> list[Figure]:
    """Warm and fresh routed builds with sources (TTL warm) against the same without."""
    home = w1.profiles[0]
    base = dict(w1.environ)
    calls = max(cfg.warm_calls // 5, 60)
    with _vault() as addr, contextlib.ExitStack() as held:
        plain = w1.host(catalog)
        sourced = w1.host(catalog)
        sourced.add_secret_source(_vault_source(addr), ttl=3600)
        samples: dict[str, list[int]] = {}
        for name, host in (("without", plain), ("with", sourced)):
            held.enter_context(host.routed(home))

            def warm(host: Any = host) -> object:
                return host.build_subprocess_env(base)

            samples[name] = interleaved({name: warm}, calls, after=spawn)[name]
        fresh: dict[str, list[int]] = {}
        for name, host in (("without", w1.host(catalog)), ("with", w1.host(catalog))):
            if name == "with":
                host.add_secret_source(_vault_source(addr), ttl=3600)

            def bind(host: Any = host) -> object:
                with host.routed(home):
                    return host.build_subprocess_env(base)

            fresh[name] = interleaved({name: bind}, calls, after=spawn)[name]
    return [
        ratio_figure(
            "sources_warm_build", "W1 warm routed build, sources configured / none",
            samples, "with", "without", SAME,
        ),
        ratio_figure(
            "sources_fresh_binding", "W1 fresh routed() + build, sources (TTL) / none",
            fresh, "with", "without", SAME,
        ),
    ]  # fmt: skip


def _fake_cli(where: Path, answers: dict[str, str]) -> str:
    """The tests' kind of fake client: ``op read``'s or ``bws secret get``'s answer."""
    exe = where / "client"
    exe.write_text(
        f"#!{sys.executable}\nimport json, sys\n"
        f"answers = {answers!r}\n"
        "ref = sys.argv[-1] if sys.argv[1] == 'read' else sys.argv[3]\n"
        "v = answers[ref]\n"
        "print(json.dumps({'value': v}) if sys.argv[1] == 'secret' else v, end='')\n"
    )
    exe.chmod(0o755)
    return str(exe)


def _age_source(where: Path) -> SecretSource | None:
    if shutil.which("age") is None or shutil.which("age-keygen") is None:
        return None
    key = where / "age.txt"
    subprocess.run(["age-keygen", "-o", str(key)], check=True, capture_output=True)
    public = subprocess.run(["age-keygen", "-y", str(key)], check=True, capture_output=True)
    text = "".join(f"{name}={VALUE}\n" for name in NAMES).encode()
    target = where / "secrets.env.age"
    recipient = public.stdout.decode().strip()
    subprocess.run(["age", "-r", recipient, "-o", str(target)], input=text, check=True)
    return AgeFileSource({"*": dict.fromkeys(NAMES, str(target))}, identities=str(key))


def _pass_source(where: Path) -> SecretSource | None:
    if any(shutil.which(t) is None for t in ("pass", "gpg", "gpgconf")):
        return None
    env = {"PATH": os.defpath, "HOME": str(where), "GNUPGHOME": str(where / "g"),
           "PASSWORD_STORE_DIR": str(where / "store")}  # fmt: skip
    (where / "g").mkdir(mode=0o700)

    def run(argv: list[str], stdin: str | None = None) -> None:
        subprocess.run(argv, env=env, input=stdin, text=True, check=True, capture_output=True)

    uid = "bench <bench@example.invalid>"
    run(["gpg", "--batch", "--pinentry-mode", "loopback", "--passphrase", "",
         "--quick-gen-key", uid, "future-default", "default", "never"])  # fmt: skip
    run(["pass", "init", "bench@example.invalid"])
    for name in NAMES:
        run(["pass", "insert", "--multiline", f"bench/{name}"], f"{VALUE}\n")
    return PassSource({"*": {name: f"bench/{name}" for name in NAMES}}, environ=env)


@contextlib.contextmanager
def _aws_source() -> Iterator[SecretSource | None]:
    try:
        import boto3
        from moto.server import ThreadedMotoServer
    except ImportError:
        yield None
        return
    import logging

    logging.getLogger("werkzeug").setLevel(logging.ERROR)  # moto's server logs each request
    server = ThreadedMotoServer(ip_address="127.0.0.1", port=0, verbose=False)
    server.start()
    try:
        url = "http://{}:{}".format(*server.get_host_and_port())
        keys = {"AWS_ACCESS_KEY_ID": "AKIABENCH00000000000", "AWS_SECRET_ACCESS_KEY": "bench"}
        client = boto3.client("secretsmanager", region_name="eu-west-1", endpoint_url=url,
                              aws_access_key_id=keys["AWS_ACCESS_KEY_ID"],
                              aws_secret_access_key=keys["AWS_SECRET_ACCESS_KEY"])  # fmt: skip
        for name in NAMES:
            client.create_secret(Name=f"bench/{name}", SecretString=VALUE)
        entries = {"*": {name: f"bench/{name}" for name in NAMES}}
        yield AwsSecretsSource(
            entries, endpoint_url=url, environ={**keys, "AWS_REGION": "eu-west-1"}
        )
    finally:
        server.stop()


def _fetcher(source: SecretSource) -> Callable[[], object]:
    def fetch() -> object:
        return source.fetch("/bench-home")

    return fetch


def _cold_ms(fetch: Callable[[], object], calls: int) -> tuple[float, float]:
    """The median and the best of ``calls`` fetches, in ms."""
    times = []
    for _ in range(calls):
        start = time.perf_counter_ns()
        fetch()
        times.append((time.perf_counter_ns() - start) / 1e6)
    return statistics.median(times), min(times)


def cold_fetch_figures(quick: bool) -> list[Figure]:
    """A cold ``fetch(home)`` of three names, per source (informational)."""
    calls = 5 if quick else 20
    figures: list[Figure] = []
    with tempfile.TemporaryDirectory(prefix="envscope-sources-") as tmp, _vault() as addr, \
            _aws_source() as aws:  # fmt: skip
        where = Path(tmp)
        op = OnePasswordSource(
            {"*": {name: f"op://bench/item/{name}" for name in NAMES}},
            executable=_fake_cli(where, {f"op://bench/item/{n}": VALUE for n in NAMES}),
            environ={"OP_SERVICE_ACCOUNT_TOKEN": "ops_bench"},
        )
        (where / "bws").mkdir()
        bws = BitwardenSource(
            {"*": dict(zip(NAMES, BWS_IDS, strict=True))},
            executable=_fake_cli(where / "bws", dict.fromkeys(BWS_IDS, VALUE)),
            environ={"BWS_ACCESS_TOKEN": "0.bench"},
        )
        (where / "pass").mkdir()
        sources: list[tuple[str, SecretSource | None, str]] = [
            ("vault", _vault_source(addr), "a local server answering as Vault"),
            ("aws", aws, "moto's server mode"),
            ("age", _age_source(where), "the real age, one file"),
            ("pass", _pass_source(where / "pass"), "the real pass and gpg, one call per name"),
            ("1password", op, "a fake op (a Python start per name)"),
            ("bitwarden", bws, "a fake bws (a Python start per name)"),
        ]
        for name, source, how in sources:
            if source is None:
                figures.append(Figure(f"cold_fetch_{name}", f"cold fetch, {name} (not installed)",
                                      0.0, "ms", detail={"skipped": True}))  # fmt: skip
                continue
            started = time.perf_counter_ns()
            assert source.fetch("/bench-home") == dict.fromkeys(NAMES, VALUE)
            first = (time.perf_counter_ns() - started) / 1e6  # with its client or TLS context
            median, best = _cold_ms(_fetcher(source), calls)
            detail: dict[str, object] = {"first_ms": first, "best_ms": best, "calls": calls}
            label = f"cold fetch of 3 names, {name} ({how})"
            figures.append(Figure(f"cold_fetch_{name}", label, median, "ms", detail=detail))
    return figures


if __name__ == "__main__":
    for figure in cold_fetch_figures(quick="--quick" in sys.argv):
        print(f"{figure.label}: {figure.shown()}")
