"""The mapper registry: which function turns which model type's config into layer specs.

Each family module registers its mappers with ``@register``, by ``model_type`` and by the
``architectures`` names the engines register. ``resolve`` picks one for a config:

1. an architecture registered with ``first=True`` (draft models, scoring heads: the architecture
   says more than the model type, which they share with the base model);
2. the root ``model_type``, then the text sub-config's ``model_type``;
3. the root ``architectures``, then the text sub-config's ``architectures`` (a config whose
   ``model_type`` is new, or has none, such as MiniCPM3);
4. a mapper whose ``signature`` keys are all in the root config (a format with neither model type nor
   architectures: mamba_ssm's ``d_model``, ``n_layer``, ``ssm_cfg``);
5. else the generic mapper.

A mapper registered with ``refuses`` always raises ``UnsupportedModelError``; the reason is what
``python -m hfkv.mappings.coverage --architectures`` prints for its architectures.
"""

from __future__ import annotations

import importlib
import pkgutil
import re
from dataclasses import dataclass, field
from functools import cached_property
from pathlib import Path
from typing import Callable

from hfkv.model.config import ConfigView
from hfkv.model.specs import Layout

from hfkv.mappings.readers.unread_keys import estimate_warning, expand_reads, unread_cache_keys

MapperFn = Callable[[ConfigView], Layout]


@dataclass(frozen=True)
class Mapper:
    """A registered mapper and what it covers."""

    name: str
    family: str
    fn: MapperFn
    model_types: tuple[str, ...] = ()
    architectures: tuple[str, ...] = ()
    reads: tuple[str, ...] = ()  # the keys it reads (``unread_keys.expand_reads`` syntax)
    ignores: dict[str, str] = field(default_factory=dict)  # key -> why it does not change this mapper's cache
    fixtures: dict[str, str] = field(default_factory=dict)  # model_type -> fixture folder
    first: bool = False  # its architectures are matched before any model type
    signature: tuple[str, ...] = ()  # root keys that identify a config with no known type (all present)
    refuses: str = ""  # the reason, for a mapper that always refuses
    reasons: dict[str, str] = field(default_factory=dict)  # architecture -> its own refusal reason

    def refusal(self, arch: str) -> str:
        """Why this mapper refuses ``arch`` ("" for a mapper that maps)."""
        return self.reasons.get(arch, self.refuses)

    @cached_property
    def understood(self) -> frozenset[str]:
        """Every key path the mapper declares: what it reads and what it knows to be irrelevant."""
        return expand_reads(self.reads) | expand_reads(self.ignores)

    def __call__(self, view: ConfigView) -> Layout:
        """The layout, with what the view's readers noted (once each) after the mapper's own.

        When the outermost mapper returns (a wrapper's mapper calls its language model's), every key of
        the config that names a cache-shaping concept and that no reader looked up and no mapper that ran
        declared makes the figures an estimate: a warning names each (``readers.unread_keys``)."""
        view.mapping_depth += 1
        try:
            layout = self.fn(view)
        finally:
            view.mapping_depth -= 1
        view.mark(*self.understood)
        layout.notes.extend(n for n in view.notes if n not in layout.notes)
        layout.warnings.extend(w for w in view.warnings if w not in layout.warnings)
        if view.mapping_depth == 0:
            unread = unread_cache_keys(view)
            if unread:
                layout.warnings.insert(0, estimate_warning(unread, self.name))
            disagreement = identity_note(view, self)
            if disagreement:
                layout.notes.append(disagreement)
        return layout


_MAPPERS: list[Mapper] = []
_GENERIC: list[Mapper] = []
_PACKAGE = __name__.rsplit(".", 1)[0]
# Modules that hold the registry, the index or the coverage tool, and the readers' sub-package: not mappers.
_NOT_FAMILIES = frozenset({"registry", "family_index", "coverage", "readers"})


def family_modules() -> list[str]:
    """Every family module of the package (the ones that register mappers)."""
    folder = Path(__file__).resolve().parent
    return sorted(m.name for m in pkgutil.iter_modules([str(folder)]) if m.name not in _NOT_FAMILIES)


def _load(modules) -> None:
    for module in modules:
        importlib.import_module(f"{_PACKAGE}.{module}")


def load_all() -> None:
    """Import every family module (the registry is then complete)."""
    _load(family_modules())


def _load_for(view: ConfigView) -> None:
    """Import the family modules the index names for this config's model types and architectures."""
    from hfkv.mappings.family_index import ARCHITECTURES, MODEL_TYPES

    names = [view.model_type, view.text_model_type]
    modules = {MODEL_TYPES[n] for n in names if n in MODEL_TYPES}
    modules |= {ARCHITECTURES[a] for a in view.architectures + text_architectures(view) if a in ARCHITECTURES}
    if not modules:
        from hfkv.mappings.family_index import SIGNATURES

        modules = {module for keys, module in SIGNATURES if _has_keys(view, keys)}
    _load(sorted(modules) + ["generic"])


def _has_keys(view: ConfigView, keys: tuple[str, ...]) -> bool:
    return all(view.root.get(key) is not None for key in keys)


def register(
    *,
    family: str,
    model_types: tuple[str, ...] | list[str] = (),
    architectures: tuple[str, ...] | list[str] = (),
    reads: tuple[str, ...] | list[str] = (),
    ignores: dict[str, str] | None = None,
    fixtures: dict[str, str] | None = None,
    generic: bool = False,
    first: bool = False,
    refuses: str | dict[str, str] = "",
    signature: tuple[str, ...] | list[str] = (),
) -> Callable[[MapperFn], MapperFn]:
    """Register ``fn`` as the mapper for ``model_types`` / ``architectures``.

    ``reads`` declares the config keys the mapper reads and ``ignores`` the keys it knows do not change
    its cache, each with the reason (both data: a config key naming a cache-shaping concept that no
    reader looked up and neither declares makes the figures an estimate, ``Mapper.__call__``; the
    syntax is ``unread_keys.expand_reads``'s, checked here); ``fixtures`` names, per model type, the fixture folder its tests use; ``first`` matches the
    architectures before model types; ``refuses`` is the one-line reason of a mapper that refuses (or,
    per architecture, a dict of reasons); ``signature``: root keys that, all present, pick this mapper
    for a config whose model type and architectures no mapper registers.
    A model type or architecture registered twice is an error at import.
    """

    def decorate(fn: MapperFn) -> MapperFn:
        mapper = Mapper(
            name=f"{fn.__module__.rsplit('.', 1)[-1]}.{fn.__name__}",
            family=family,
            fn=fn,
            model_types=tuple(model_types),
            architectures=tuple(architectures),
            reads=tuple(reads),
            ignores=dict(ignores or {}),
            fixtures=dict(fixtures or {}),
            first=first,
            signature=tuple(signature),
            refuses=refuses if isinstance(refuses, str) else "a layout hfkv does not model yet",
            reasons={} if isinstance(refuses, str) else dict(refuses),
        )
        _check_unique(mapper)
        mapper.understood  # a malformed entry fails at import, naming it
        (_GENERIC if generic else _MAPPERS).append(mapper)
        return fn

    return decorate


def _check_unique(new: Mapper) -> None:
    for attr in ("model_types", "architectures"):
        taken = {name for m in _MAPPERS for name in getattr(m, attr)} & set(getattr(new, attr))
        if taken:
            raise RuntimeError(f"{attr} registered twice: {sorted(taken)} ({new.name})")


def all_mappers() -> list[Mapper]:
    """Every mapper (all family modules imported)."""
    load_all()
    return list(_MAPPERS) + list(_GENERIC)


def known_architectures() -> dict[str, Mapper]:
    """Every registered architecture name and its mapper (all family modules imported)."""
    load_all()
    return {arch: mapper for mapper in _MAPPERS for arch in mapper.architectures}


def index_of_registry() -> tuple[dict[str, str], dict[str, str], list[tuple[tuple[str, ...], str]]]:
    """(model type -> module, architecture -> module, [(signature keys, module)]) as the decorators register them."""
    mappers = [m for m in all_mappers() if m not in _GENERIC]
    module = lambda m: m.name.split(".", 1)[0]  # noqa: E731
    return ({t: module(m) for m in mappers for t in m.model_types},
            {a: module(m) for m in mappers for a in m.architectures},
            sorted((m.signature, module(m)) for m in mappers if m.signature))


def text_architectures(view: ConfigView) -> list[str]:
    """The text sub-config's own ``architectures`` (InternVL's ``llm_config``), when it has one."""
    value = view.text.get("architectures") if view.text is not view.root else None
    return [a for a in value if isinstance(a, str)] if isinstance(value, list) else []


def _by_architecture(names: list[str], *, first: bool | None = None) -> Mapper | None:
    for arch in names:
        for mapper in _MAPPERS:
            if arch in mapper.architectures and (first is None or mapper.first == first):
                return mapper
    return None


def _by_model_type(*model_types: str | None) -> Mapper | None:
    for model_type in model_types:
        for mapper in _MAPPERS:
            if model_type and model_type in mapper.model_types:
                return mapper
    return None


def _by_signature(view: ConfigView) -> Mapper | None:
    return next((m for m in _MAPPERS if m.signature and _has_keys(view, m.signature)), None)


def _plain_name(name: str) -> str:
    return re.sub(r"[^a-z0-9]", "", name.lower())


# What an architecture name adds to its model's name (MistralForCausalLM, GPT2LMHeadModel, ChatGLMModel).
_ARCH_SUFFIX = re.compile(r"(For[A-Z]\w*|LMHeadModel|Model)$")


def identity_note(view: ConfigView, mapper: Mapper) -> str:
    """A note when the root ``model_type`` and ``architectures`` name different models (phi beside
    MistralForCausalLM), "" otherwise.

    They disagree when no architecture is the model type's own (its name, less ``For…``/``Model``, is
    not the type's) and one is another registered type's (``MistralForCausalLM``: mistral). A config
    with ``auto_map`` names its own classes (Kimi K2: kimi_k2 on DeepseekV3ForCausalLM, by design):
    no note. The note says which each reader follows: hfkv the model type unless an architecture is
    matched first (draft and scoring heads), transformers the model type (its config class), vLLM
    and SGLang the architecture (their model registries are keyed by it)."""
    model_type, archs = view.model_type, view.architectures
    if not model_type or not archs or "auto_map" in view.root:
        return ""
    from hfkv.mappings.family_index import MODEL_TYPES

    own = _plain_name(model_type)
    stems = [_plain_name(_ARCH_SUFFIX.sub("", arch)) for arch in archs]
    if own in stems:
        return ""
    registered = {_plain_name(t): t for t in MODEL_TYPES}
    other = next(((arch, registered[stem]) for arch, stem in zip(archs, stems) if stem in registered), None)
    if other is None:
        return ""
    arch, other_type = other
    followed = "model_type" if model_type in mapper.model_types or mapper.family == "generic" else "architectures"
    return (f"model_type {model_type!r} and architectures {arch} (the architecture of model type {other_type!r}) "
            f"disagree: hfkv follows the {followed} (mapper {mapper.name}), transformers the model_type (its config "
            f"class reads the keys), vLLM and SGLang the architectures (they build {arch})")


def resolve(view: ConfigView) -> Mapper:
    """The mapper for ``view`` (the order is in the module docstring); imports only the modules it needs."""
    _load_for(view)
    return (
        _by_architecture(view.architectures, first=True)
        or _by_model_type(view.model_type, view.text_model_type)
        or _by_architecture(view.architectures)
        or _by_architecture(text_architectures(view))
        or _by_signature(view)
        or _GENERIC[0]
    )


def resolve_language_model(view: ConfigView, *, skip: str) -> Mapper | None:
    """The mapper of a wrapper's language model: its text sub-config's model type or architectures
    (never the mapper named ``skip``, the wrapper's own, nor the generic one); None when none is known."""
    _load_for(view)
    for found in (_by_model_type(view.text_model_type), _by_architecture(text_architectures(view))):
        if found is not None and found.name != skip:
            return found
    return None
