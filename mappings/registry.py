"""The mapper registry: which function turns which model type's config into layer specs.

Each family module registers its mappers with ``@register``; ``resolve`` picks one for a config by
root ``model_type``, then the text sub-config's ``model_type``, then ``architectures`` (for configs
with no ``model_type``, such as MiniCPM3), else the generic mapper.
"""

from __future__ import annotations

from dataclasses import dataclass, field
from typing import Callable

from hfkv.config import ConfigView
from hfkv.specs import Layout

MapperFn = Callable[[ConfigView], Layout]


@dataclass(frozen=True)
class Mapper:
    """A registered mapper and what it covers."""

    name: str
    family: str
    fn: MapperFn
    model_types: tuple[str, ...] = ()
    architectures: tuple[str, ...] = ()
    reads: tuple[str, ...] = ()
    fixtures: dict[str, str] = field(default_factory=dict)  # model_type -> fixture folder

    def __call__(self, view: ConfigView) -> Layout:
        return self.fn(view)


_MAPPERS: list[Mapper] = []
_GENERIC: list[Mapper] = []


def register(
    *,
    family: str,
    model_types: tuple[str, ...] | list[str] = (),
    architectures: tuple[str, ...] | list[str] = (),
    reads: tuple[str, ...] | list[str] = (),
    fixtures: dict[str, str] | None = None,
    generic: bool = False,
) -> Callable[[MapperFn], MapperFn]:
    """Register ``fn`` as the mapper for ``model_types`` / ``architectures``.

    ``reads`` declares the config keys the mapper reads (documentation and coverage table);
    ``fixtures`` names, per model type, the fixture folder its tests use.
    """

    def decorate(fn: MapperFn) -> MapperFn:
        mapper = Mapper(
            name=f"{fn.__module__.rsplit('.', 1)[-1]}.{fn.__name__}",
            family=family,
            fn=fn,
            model_types=tuple(model_types),
            architectures=tuple(architectures),
            reads=tuple(reads),
            fixtures=dict(fixtures or {}),
        )
        taken = {mt for m in _MAPPERS for mt in m.model_types} & set(mapper.model_types)
        if taken:
            raise RuntimeError(f"model types registered twice: {sorted(taken)}")
        (_GENERIC if generic else _MAPPERS).append(mapper)
        return fn

    return decorate


def all_mappers() -> list[Mapper]:
    return list(_MAPPERS) + list(_GENERIC)


def resolve(view: ConfigView) -> Mapper:
    """The mapper for ``view``: by model_type, text model_type, then architectures; else generic."""
    for model_type in (view.model_type, view.text_model_type):
        for mapper in _MAPPERS:
            if model_type and model_type in mapper.model_types:
                return mapper
    for arch in view.architectures:
        for mapper in _MAPPERS:
            if arch in mapper.architectures:
                return mapper
    return _GENERIC[0]
