"""The roles a chat model plays, and `RoleModels`: which model serves each.

A role is a kind of model call: ``extraction`` (graph extraction and gleaning, later claims),
``summaries`` (entity/relationship description summaries, summary-tree cluster summaries),
``reports`` (community reports), ``query`` (query processing: keywords and entities, the
`auto` router, follow-up rewrites, `drift`'s HyDE and follow-ups, `iterative`'s controller
and decomposition), ``answer`` (final answers, `lazy`'s map-reduce answer, and both steps of
`global` search: its map writes the rated points the reduce quotes, so it is answer
writing), and ``judge`` (`ukr eval`'s judge). The configuration (``llm.roles``) maps each
role to the default model, a tier (``fast``, ``strong``) or a model of its own; the
composition root builds the models, this module only holds the mapping (any model type).
"""

from __future__ import annotations

from collections.abc import Mapping
from dataclasses import dataclass, field
from typing import Generic, Literal, TypeVar

__all__ = ["ROLES", "ModelRole", "RoleModels"]

ModelRole = Literal["extraction", "summaries", "reports", "query", "answer", "judge"]
"""The name of a role (`ROLES` lists them in the order a build then a query meets them)."""

ROLES: tuple[ModelRole, ...] = ("extraction", "summaries", "reports", "query", "answer", "judge")

M = TypeVar("M")


@dataclass(frozen=True)
class RoleModels(Generic[M]):
    """The model of each role; a role not listed is served by ``default``.

    Attributes:
        default: the top-level model (``llm``), or None when ``llm.kind`` is ``none``.
        by_role: the model of each role that does not use the default one.
        sources: what serves each listed role, as configured (``fast``, ``strong``,
            ``inline``); a role not listed says ``default``.
    """

    default: M | None
    by_role: Mapping[str, M | None] = field(default_factory=dict)
    sources: Mapping[str, str] = field(default_factory=dict)

    @classmethod
    def single(cls, model: M | None) -> RoleModels[M]:
        """Return the mapping where ``model`` serves every role (a one-model setup)."""
        return cls(model)

    def for_role(self, role: ModelRole) -> M | None:
        """Return the model serving ``role`` (None: no model is configured for it).

        Raises:
            KeyError: ``role`` is not one of `ROLES` (a programming error).
        """
        if role not in ROLES:
            raise KeyError(f"unknown model role {role!r}; roles: {', '.join(ROLES)}")
        return self.by_role.get(role, self.default)

    def source(self, role: ModelRole) -> str:
        """Return what serves ``role``: ``default``, ``fast``, ``strong`` or ``inline``."""
        return self.sources.get(role, "default")

    @property
    def any_model(self) -> bool:
        """True when at least one role has a model."""
        return self.default is not None or any(m is not None for m in self.by_role.values())
