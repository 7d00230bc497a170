"""Hypothesis profiles for the property suite, chosen by ``HYPOTHESIS_PROFILE`` (default ``ci``).

- ``ci``: 300 examples per test, derandomized (the same examples on every run,
  so CI is deterministic), no example database, a 1 s deadline per example.
- ``fuzz``: 20,000 examples per test, random, with the example database (so a
  failure found once is replayed first next time); same 1 s deadline.

``make fuzz`` runs ``HYPOTHESIS_PROFILE=fuzz pytest -m property tests/property``.
"""

from __future__ import annotations

import os

from hypothesis import HealthCheck, settings

DEADLINE_MS = 1000
PROFILES = ("ci", "fuzz")

settings.register_profile(
    "ci",
    max_examples=300,
    deadline=DEADLINE_MS,
    derandomize=True,
    database=None,
    suppress_health_check=[HealthCheck.too_slow],
    print_blob=True,
)
settings.register_profile(
    "fuzz",
    max_examples=20_000,
    deadline=DEADLINE_MS,
    suppress_health_check=[HealthCheck.too_slow],
    print_blob=True,
)

_chosen = os.environ.get("HYPOTHESIS_PROFILE", "ci")
if _chosen not in PROFILES:
    raise ValueError(f"HYPOTHESIS_PROFILE must be one of {PROFILES}, not {_chosen!r}")
settings.load_profile(_chosen)
