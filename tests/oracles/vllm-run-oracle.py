"""Run ../shared/tools/vllm-oracle/oracle_vllm.py with two more substitutions, for SM100 (B200) runs.

On SM100, vLLM's CUTLASS-MLA backend sizes a workspace at import from the device's multiprocessor
count, and its FlashInfer attention backend allocates a TRT-LLM multi-CTA counter buffer on the GPU
when a layer is built. The fake platform has no device: the count is answered here (148, a B200's)
and the counter buffer is not allocated. Neither is a KV-cache spec, a block size or a budget.

Run it with the oracle venv's python (see README.md); it sets the loader path and the network
guard the way the tool's own ``vllm-oracle`` wrapper does, re-executing itself once if needed.
"""

import os
import runpy
import sys
from pathlib import Path

TOOL = Path(__file__).resolve().parents[3] / "shared" / "tools" / "vllm-oracle"
STUBS = [str(Path(sys.prefix) / "stublib"), str(TOOL / "stublib")]  # setup.sh's stub libcuda, the tool's check
B200_SMS = 148


def ensure_environment() -> None:
    """The stub libcuda must be on the loader path before the process starts: re-exec once with it."""
    paths = os.environ.get("LD_LIBRARY_PATH", "")
    if all(stub in paths for stub in STUBS):
        return
    env = dict(os.environ)
    env["LD_LIBRARY_PATH"] = ":".join([*STUBS, paths]).rstrip(":")
    env["PYTHONPATH"] = ":".join([str(TOOL / "netguard"), env.get("PYTHONPATH", "")]).rstrip(":")
    os.execve(sys.executable, [sys.executable, *sys.argv], env)


ensure_environment()
sys.path.insert(0, str(TOOL))
import fakeplat  # noqa: E402  (the tool's own fake platform)

fakeplat.FakeH200Platform.num_compute_units = classmethod(lambda cls, device_id=0: B200_SMS)

import vllm.v1.attention.backends.flashinfer as _flashinfer  # noqa: E402

_flashinfer.get_device_sm_count = lambda device: B200_SMS
_flashinfer._get_multi_ctas_kv_counter_buffer = lambda nbytes, device: None
sys.argv[0] = str(TOOL / "oracle_vllm.py")
runpy.run_path(sys.argv[0], run_name="__main__")
