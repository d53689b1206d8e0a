"""Run ../shared/tools/vllm-oracle/oracle_vllm.py with one more substitution: the ``<image>`` token id.

vLLM's DeepSeek-OCR wrapper (which ``UnlimitedOCRForCausalLM`` extends) looks the ``<image>`` token up in
the model's tokenizer when the model is built; the oracle builds from config.json alone, with no tokenizer.
The lookup is answered here with Unlimited-OCR's documented id (128815). A token id is not a KV-cache
spec, a block size or a budget.

The stub libcuda and the network guard must already be on the paths, as the tool's ``vllm-oracle``
wrapper sets them (the command is in README.md); without them this refuses instead of re-executing.
"""

import os
import runpy
import sys
from pathlib import Path
from types import SimpleNamespace

TOOL = Path(__file__).resolve().parents[3] / "shared" / "tools" / "vllm-oracle"
IMAGE_TOKEN_ID = 128815  # baidu/Unlimited-OCR's "<image>" (fixtures/baidu__Unlimited-OCR/README.md)

if str(TOOL / "stublib") not in os.environ.get("LD_LIBRARY_PATH", "") or "netguard" not in os.environ.get(
    "PYTHONPATH", ""
):
    sys.exit("set LD_LIBRARY_PATH (venv and tool stublib) and PYTHONPATH (netguard) as README.md says")

sys.path.insert(0, str(TOOL))
import fakeplat  # noqa: E402,F401  (the tool's own fake platform, before vLLM resolves one)

import vllm.tokenizers  # noqa: E402  (light; the model module is imported later and takes this name)

vllm.tokenizers.cached_tokenizer_from_config = lambda model_config, **kw: SimpleNamespace(
    vocab={"<image>": IMAGE_TOKEN_ID}
)
sys.argv[0] = str(TOOL / "oracle_vllm.py")
runpy.run_path(sys.argv[0], run_name="__main__")
