"""``check-spawns`` findings in the formats CI tools read: SARIF 2.1.0 and GitHub annotations.

Pure functions over the check's ``SpawnSite`` list and its errors:

- ``spawn_sites_sarif``: one SARIF 2.1.0 run (GitHub code scanning uploads
  it) with a rule per kind of finding (``SPAWN_RULES``), each finding a
  result at its file, line and column, a site marked
  ``# envscope: allow-inherit`` a result with a suppression, and each file
  that could not be checked a tool notification.
- ``github_annotations`` (``check-spawns``) and ``scan_annotations``
  (``scan``: its problems and warnings): one workflow command per finding
  (``::error file=…,line=…,col=…,title=…::message``), what the command line
  prints after its text report when ``GITHUB_ACTIONS=true``, so a pull
  request shows each finding on its line.
"""

from __future__ import annotations

import os
from collections.abc import Sequence
from pathlib import Path
from typing import Any

from envscope.tools._spawn_check import (
    ALLOW_COMMENT,
    REASON_ENVIRON,
    REASON_MISSING,
    REASON_NO_PARAM,
    REASON_NO_VARIANT,
    REASON_NONE,
    REASON_SPLAT,
    SpawnSite,
)
from envscope.tools._spawn_files import printable

__all__ = [
    "SARIF_SCHEMA",
    "SPAWN_RULES",
    "annotation",
    "github_annotations",
    "rule_of",
    "scan_annotations",
    "spawn_sites_sarif",
]

SARIF_SCHEMA = "https://json.schemastore.org/sarif-2.1.0.json"

# (rule id, the reason it reports, its short description): one row per kind of finding
SPAWN_RULES: tuple[tuple[str, str, str], ...] = (
    ("no-env", REASON_MISSING, "A spawn without env= hands the child the whole parent env"),
    ("env-none", REASON_NONE, "A spawn with env=None hands the child the whole parent env"),
    ("env-splat", REASON_SPLAT, "A spawn whose env= comes only from **kwargs is not proof"),
    ("parent-env", REASON_ENVIRON, "A spawn with env=os.environ (or a copy) hands it all over"),
    ("no-env-parameter", REASON_NO_PARAM, "A spawn function that takes no env inherits it all"),
    ("no-env-variant", REASON_NO_VARIANT, "A spawn function without env; its e-variant takes one"),
)


def rule_of(reason: str) -> str:
    """The rule id of a finding's reason (a template's fixed part before any ``{…}``)."""
    for rule, template, _ in SPAWN_RULES:
        fixed = template.split("{", 1)[0]
        if reason == template or ("{" in template and reason.startswith(fixed)):
            return rule
    raise ValueError(f"a check-spawns reason no rule reports: {reason!r}")


def _uri(path: str) -> tuple[str, bool]:
    """The artifact's URI and whether it is relative to the working directory (%SRCROOT%)."""
    rel = os.path.relpath(path)
    if not rel.startswith(".."):
        return Path(rel).as_posix(), True
    return Path(path).resolve().as_uri(), False


def _location(site: SpawnSite) -> dict[str, object]:
    uri, relative = _uri(site.path)
    artifact: dict[str, object] = {"uri": uri}
    if relative:
        artifact["uriBaseId"] = "%SRCROOT%"
    return {
        "physicalLocation": {
            "artifactLocation": artifact,
            "region": {"startLine": site.line, "startColumn": site.col},
        }
    }


def spawn_sites_sarif(
    sites: Sequence[SpawnSite], errors: Sequence[str], *, version: str, docs: str
) -> dict[str, object]:
    """The check as one SARIF 2.1.0 log (``version``: envscope's; ``docs``: the rules' help)."""
    rules = [
        {
            "id": rule,
            "name": rule.replace("-", " ").title().replace(" ", ""),
            "shortDescription": {"text": short},
            "fullDescription": {"text": template.replace("{src}", "…").replace("{call}", "…")},
            "helpUri": f"{docs}/cli.md#envscope-check-spawns",
            "defaultConfiguration": {"level": "error"},
        }
        for rule, template, short in SPAWN_RULES
    ]
    index = {rule: i for i, (rule, _, _) in enumerate(SPAWN_RULES)}
    results = []
    for site in sites:
        rule = rule_of(site.reason)
        result: dict[str, object] = {
            "ruleId": rule,
            "ruleIndex": index[rule],
            "level": "error",
            "message": {"text": f"{site.call}: {site.reason}"},
            "locations": [_location(site)],
        }
        if site.allowed:
            result["suppressions"] = [
                {"kind": "inSource", "justification": f"marked {ALLOW_COMMENT}"}
            ]
        results.append(result)
    notifications = [{"level": "error", "message": {"text": error}} for error in errors]
    return {
        "$schema": SARIF_SCHEMA,
        "version": "2.1.0",
        "runs": [
            {
                "tool": {
                    "driver": {
                        "name": "envscope check-spawns",
                        "version": version,
                        "informationUri": f"{docs}/cli.md#envscope-check-spawns",
                        "rules": rules,
                    }
                },
                "originalUriBaseIds": {"%SRCROOT%": {"uri": Path.cwd().as_uri() + "/"}},
                "invocations": [
                    {
                        "executionSuccessful": not errors,
                        "toolExecutionNotifications": notifications,
                    }
                ],
                "results": results,
            }
        ],
    }


def _data(text: str) -> str:
    """A workflow command's message, escaped as GitHub reads it."""
    return text.replace("%", "%25").replace("\r", "%0D").replace("\n", "%0A")


def _property(text: str) -> str:
    """A workflow command's property value (``file=``, ``title=``), escaped."""
    return _data(text).replace(":", "%3A").replace(",", "%2C")


def annotation(
    level: str,
    message: str,
    *,
    title: str,
    path: str | None = None,
    line: int | None = None,
    col: int | None = None,
) -> str:
    """One GitHub workflow command (``::error file=…,line=…,title=…::message``), escaped."""
    fields = []
    if path is not None:
        fields.append(f"file={_property(printable(os.path.normpath(path)))}")
        fields += [f"{name}={n}" for name, n in (("line", line), ("col", col)) if n is not None]
    fields.append(f"title={_property(title)}")
    return f"::{level} {','.join(fields)}::{_data(printable(message))}\n"


def github_annotations(sites: Sequence[SpawnSite], errors: Sequence[str]) -> str:
    """One ``::error`` workflow command per bypassing site and per file not checked."""
    out = [
        annotation("error", f"{site.call}: {site.reason}", path=site.path, line=site.line,
                   col=site.col, title=f"envscope check-spawns: {rule_of(site.reason)}")
        for site in sites
        if not site.allowed
    ]  # fmt: skip
    out += [annotation("error", error, title="envscope check-spawns") for error in errors]
    return "".join(out)


def scan_annotations(reports: Sequence[Any]) -> str:
    """``envscope scan``: an ``::error`` per manifest problem, a ``::warning`` per warning."""
    out = []
    for report in reports:
        for level, found in (("error", report.problems), ("warning", report.warnings)):
            for p in found:
                text = f"{p.field}: {p.message}" if p.field else p.message
                out.append(annotation(level, text, path=p.path, line=p.line, title="envscope scan"))
    return "".join(out)
