"""Run shared/tools/vllm-oracle/oracle_vllm.py with one more substitution: the fake platform's SM count.

vLLM's CUTLASS-MLA backend (SM100) sizes a workspace at import from the device's multiprocessor count;
the fake platform has no device, so the count is answered here (148, a B200's). It only sizes that
workspace; no KV-cache figure reads it.
"""
import runpy
import sys

TOOL = "/work/shared/tools/vllm-oracle"
sys.path.insert(0, TOOL)
import fakeplat  # noqa: E402  (the tool's own fake platform)

fakeplat.FakeH200Platform.num_compute_units = classmethod(lambda cls, device_id=0: 148)
sys.argv[0] = f"{TOOL}/oracle_vllm.py"
runpy.run_path(sys.argv[0], run_name="__main__")
