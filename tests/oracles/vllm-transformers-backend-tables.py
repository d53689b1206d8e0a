"""Print the registry facts ``hfkv/engines/vllm/0.33.0-other-architectures.tsv`` holds (the Transformers
backend's registered and fallback classes, and the pooling-only names: ``facts.pooling_only()``), read
from vLLM 0.33.0 and the transformers its venv resolves (5.20.2). Run in the vLLM oracle venv, from the
repository root:

    ~/.cache/hfkv-vllm-oracle/bin/python tests/oracles/vllm-transformers-backend-tables.py

``registered``: registry.py ``_TRANSFORMERS_SUPPORTED_MODELS`` (architecture -> backend class).
``fallback``: transformers' exported generation classes (…ForCausalLM, …LMHeadModel,
…ForConditionalGeneration) that vLLM registers under no name and whose ``is_backend_compatible()`` or
``_can_set_attn_implementation()`` holds (``_try_resolve_transformers``' test); ``incompatible``: those
that fail it. ``pooling``: the names vLLM registers outside hfkv/engines/vllm/0.33.0.tsv and the
backend tables (embedding, late-interaction, reward, token/sequence classification).
"""

import json
import warnings
from pathlib import Path

import transformers
from vllm.model_executor.models import registry

warnings.filterwarnings("ignore")
SUFFIXES = ("ForCausalLM", "LMHeadModel", "ForConditionalGeneration")
TSV = Path("hfkv/engines/vllm/0.33.0.tsv")


def main() -> None:
    known = set(registry._VLLM_MODELS)
    fallback, incompatible = [], []
    for name in sorted(n for n in dir(transformers) if n.endswith(SUFFIXES) and n not in known):
        cls = getattr(transformers, name)
        if isinstance(cls, type) and issubclass(cls, transformers.PreTrainedModel):
            ok = cls.is_backend_compatible() or cls._can_set_attn_implementation()
            (fallback if ok else incompatible).append(name)
    generation = {line.split("\t")[1] for line in TSV.read_text().splitlines()[1:] if line.strip()}
    backend = set(registry._TRANSFORMERS_SUPPORTED_MODELS) | set(registry._TRANSFORMERS_BACKEND_MODELS)
    print(json.dumps({
        "transformers": transformers.__version__,
        "registered": {k: v[1] for k, v in registry._TRANSFORMERS_SUPPORTED_MODELS.items()},
        "fallback": fallback, "incompatible": incompatible,
        "pooling": sorted(known - generation - backend),
    }, indent=1))


if __name__ == "__main__":
    main()
