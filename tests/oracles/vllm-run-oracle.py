"""Run shared/tools/vllm-oracle/oracle_vllm.py with two more substitutions, for SM100 (B200) runs.

On SM100, vLLM's CUTLASS-MLA backend sizes a workspace at import from the device's multiprocessor
count, and its FlashInfer attention backend allocates a TRT-LLM multi-CTA counter buffer on the GPU
when a layer is built. The fake platform has no device: the count is answered here (148, a B200's)
and the counter buffer is not allocated. Neither is a KV-cache spec, a block size or a budget.
"""
import runpy
import sys

TOOL = "/work/shared/tools/vllm-oracle"
sys.path.insert(0, TOOL)
import fakeplat  # noqa: E402  (the tool's own fake platform)

B200_SMS = 148
fakeplat.FakeH200Platform.num_compute_units = classmethod(lambda cls, device_id=0: B200_SMS)

import vllm.v1.attention.backends.flashinfer as _flashinfer  # noqa: E402

_flashinfer.get_device_sm_count = lambda device: B200_SMS
_flashinfer._get_multi_ctas_kv_counter_buffer = lambda nbytes, device: None
sys.argv[0] = f"{TOOL}/oracle_vllm.py"
runpy.run_path(sys.argv[0], run_name="__main__")
