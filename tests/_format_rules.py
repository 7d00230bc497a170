"""A rule over the default policy and one build's view of an owner's clean values: how the
format-memo tests ask ``SecretRule.find_in`` as a build asks it (shared by the table and
the differential property)."""

from __future__ import annotations

from collections.abc import Mapping

from envscope.pipeline._memo import FormatMemo
from envscope.pipeline.secret_rule import SecretMatch, SecretRule
from envscope.policy._secret_policy import build_policy
from envscope.policy.catalog import Catalog
from envscope.policy.formats import format_table

POLICY = build_policy(Catalog.default())


class BuildView:
    """A rule with one build's view of ``owner``'s clean values (None: without any)."""

    def __init__(
        self,
        owner: FormatMemo | None,
        *,
        inherit: bool = False,
        known_safe: frozenset[str] = frozenset(),
        launch: Mapping[str, str] | None = None,
    ) -> None:
        table = format_table()
        self.rule = SecretRule(
            POLICY,
            inherit_credentials=inherit,
            launch_values=({} if launch is None else launch,),
            formats=table,
            known_safe=known_safe,
        )
        self.clean = None if owner is None else owner.under(table)

    def find_in(self, items: list[tuple[str, str]]) -> list[tuple[SecretMatch, ...]]:
        return self.rule.find_in(items, (), self.clean)

    def secret_in(self, key: str, value: str) -> tuple[SecretMatch, ...]:
        return self.rule.secret_in(key, value)
