"""F9: what the runtime guard's audit hook adds to each ``open()`` (a non-spawn audit event).

Audit hooks cannot be removed, so each side runs in its own interpreter: one
without the hook (baseline) and one after ``envscope.guard(host, mode="raise")``.
Each child times, in batches, the dispatch of the very event ``open()`` raises
(``sys.audit("open", path, mode, flags)``: cheap, so the hook's cost is not
lost in the file system's noise) and ``open(os.devnull).close()`` itself, and
reports its best batch per call. The parent alternates the two children over
several rounds and compares the medians.

    python -m benchmarks.guard_cost            # prints the added ns per open() event
"""

from __future__ import annotations

import statistics
import sys
import tempfile
import time

from benchmarks.measure import Figure, alternating_children

TARGET_NS = 300.0  # <= 0.3 us added per open() event (issue 14)


def _best_ns(fn: object, calls: int, batches: int) -> float:
    best = float("inf")
    clock = time.perf_counter_ns
    for _ in range(batches):
        start = clock()
        for _ in range(calls):
            fn()  # type: ignore[operator]
        best = min(best, (clock() - start) / calls)
    return best


def _child(side: str, calls: int, batches: int) -> None:
    """Print the best ns per ``open`` event and per ``open()`` call on this side."""
    import os

    if side == "guarded":
        import envscope

        envscope.guard(envscope.Host(tempfile.gettempdir(), environ={}), mode="raise")
    path = os.devnull
    audit = sys.audit

    def event() -> None:
        audit("open", path, "rb", 0)

    def open_close() -> None:
        open(path, "rb").close()

    print(_best_ns(event, calls, batches), _best_ns(open_close, calls // 4, batches))


def measure(rounds: int, calls: int, batches: int) -> dict[str, object]:
    """Alternate baseline and guarded children; the medians of their best ns per call."""
    outputs = alternating_children("benchmarks.guard_cost", [str(calls), str(batches)], rounds)
    samples = {
        side: [(float(e), float(o)) for e, o in (text.split() for text in texts)]
        for side, texts in outputs.items()
    }

    def median(side: str, i: int) -> float:
        return statistics.median(s[i] for s in samples[side])

    return {
        "added_ns": median("guarded", 0) - median("baseline", 0),
        "event_ns": {"baseline": median("baseline", 0), "guarded": median("guarded", 0)},
        "open_ns": {"baseline": median("baseline", 1), "guarded": median("guarded", 1)},
        "rounds": rounds,
    }


def guard_figure(quick: bool) -> Figure:
    """The runtime guard's audit hook: ns added per ``open()`` event."""
    result = measure(rounds=3 if quick else 7, calls=50_000 if quick else 200_000, batches=5)
    added = float(result["added_ns"])  # type: ignore[arg-type]
    return Figure(
        "guard_open_ns",
        "guard hook per open() event (added)",
        round(added),
        "ns",
        f"<= {TARGET_NS:.0f} ns",
        added <= TARGET_NS,
        result,
    )


if __name__ == "__main__":
    if len(sys.argv) == 5 and sys.argv[1] == "--child":
        _child(sys.argv[2], int(sys.argv[3]), int(sys.argv[4]))
    else:
        result = measure(rounds=5, calls=200_000, batches=5)
        print(f"guard hook: +{result['added_ns']:.0f} ns per open() event "
              f"(target <= {TARGET_NS:.0f} ns); {result}")  # fmt: skip
