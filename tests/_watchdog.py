"""A watchdog for tests of code that must never hang (a FIFO, a lock, a regex)."""

from __future__ import annotations

import threading
from collections.abc import Callable

WATCHDOG_S = 2.0


def run_with_watchdog(fn: Callable[[], object], seconds: float = WATCHDOG_S) -> object:
    """Run ``fn`` in a daemon thread; fail if it has not finished within ``seconds``."""
    box: dict[str, object] = {}

    def target() -> None:
        try:
            box["result"] = fn()
        except BaseException as exc:  # noqa: BLE001 - handed to the test thread, re-raised there
            box["error"] = exc

    thread = threading.Thread(target=target, daemon=True)
    thread.start()
    thread.join(timeout=seconds)
    assert not thread.is_alive(), f"still running after {seconds} s (a hang)"
    if "error" in box:
        raise box["error"]  # type: ignore[misc]
    return box["result"]
