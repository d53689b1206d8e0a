"""Which of SGLang 0.5.23's facts (``facts.py``) apply to a model, as SGLang finds them.

SGLang's config class for the model type may rename an architecture first (``configs/olmo3.py``,
``configs/deepseek_v41.py``); ``ModelRegistry.resolve_model_cls`` then builds the first name it
registers. Rules keyed by architecture are looked up under the renamed names, and only for names
SGLang registers: a name it does not register has no row, and every name SGLang's own lists hold is
registered. Which names a rule reads (any of them, or the first) is the rule's, said where it is asked.
"""

from __future__ import annotations

from hfkv.engines.contract import EngineInput
from hfkv.engines.sglang.facts import ArchFacts, ModelTypeFacts, facts, model_type_facts, registered


def model_type(model: EngineInput) -> ModelTypeFacts:
    """The facts of the model's ``model_type``."""
    return model_type_facts(model.model_type)


RAW_MAMBA_ARCHITECTURE = "MambaForCausalLM"  # utils/hf_transformers/config.py _try_load_raw_mamba_config


def raw_mamba(model: EngineInput) -> bool:
    """mamba_ssm's raw config (``state-spaces/mamba-*``): no ``model_type`` nor ``architectures``, with
    ``d_model`` and ``ssm_cfg``, which SGLang's parser maps to its own ``MambaConfig`` (``MambaForCausalLM``)."""
    config = getattr(model, "root_config", None) or getattr(model, "config", None) or {}
    return (not config.get("model_type") and not config.get("architectures") and "d_model" in config
            and "ssm_cfg" in config)


def native_architectures(model: EngineInput) -> list[str]:
    """The config's architectures after its config class's rename (``architecture_rename``); mamba_ssm's
    raw config (``raw_mamba``) is SGLang's ``MambaForCausalLM``."""
    if raw_mamba(model):
        return [RAW_MAMBA_ARCHITECTURE]
    rename = model_type(model).architecture_rename
    return [rename.new if rename and arch == rename.old else arch for arch in model.architectures or []]


def arch_facts(model: EngineInput) -> list[ArchFacts]:
    """The facts of every architecture of the config SGLang registers, in the config's order."""
    return [facts(arch) for arch in native_architectures(model) if registered(arch)]


def first_arch_facts(model: EngineInput) -> ArchFacts | None:
    """The facts of the config's first architecture (``hf_config.architectures[0]``, which SGLang's
    model overrides and hooks are keyed by); None when SGLang does not register it."""
    names = native_architectures(model)
    return facts(names[0]) if names and registered(names[0]) else None


def native_class(model: EngineInput) -> str | None:
    """``ModelRegistry.resolve_model_cls``: the first of the config's architectures SGLang registers."""
    found = arch_facts(model)
    return found[0].architecture if found else None
