#!/usr/bin/env python
"""Resolve SGLang 0.5.23's own ServerArgs on a CPU with a faked NVIDIA GPU and tabulate what it
decides about the memory reserve (mem_fraction_static and the settings it is derived from).

Run with the shared SGLang oracle's venv (../shared/tools/sglang-oracle/setup.sh builds it):
    ~/.cache/hfkv-sglang-oracle/bin/python tests/oracles/sglang-serverargs.py --out rows.tsv \
        [--gpus h100,h200,b200] [--configs a.json,b.json] [--quick]
tests/engines/sglang/serverargs-0.5.23.tsv keeps the columns hfkv's test reads of the full run's rows.

How the GPU is faked (see NOTES.md):
  * torch stays a CPU build.  torch.cuda.get_device_capability / get_device_name /
    get_device_properties / mem_get_info / device_count are answered like the chosen GPU
    (taken from the shared oracle's bootstrap(), copied in ./oracle/).
  * SGLang's platform facts (is_cuda, is_sm90, is_sm100, ...) are set through SGLang's own
    runtime_context.override_platform hook (oracle install_platform facts).
  * get_device_memory_capacity() is NOT replaced: its real body runs.  Only the two leaves it
    calls are answered: sglang.srt.utils.common.is_cuda() -> True and
    get_nvgpu_memory_capacity() -> the MiB figure `nvidia-smi --query-gpu=memory.total
    --format=csv,noheader,nounits` prints on that GPU.  sglang.srt.utils.is_cuda is also set
    True, because the default prefill CUDA-graph backend (cuda_graph_config.default_prefill_backend)
    asks it at call time; on a CPU torch it would say False and drop the prefill-graph reserve.
  * Import-time is_cuda()/sm gates that matter for sizing are patched like the oracle does
    (patch_cuda_import_gates).
Each case runs in a forked child so memoised model configs / lru caches do not leak between cases.

A resolution-hook wrapper (SGLang's register_resolution_hook, the plugin mechanism) is put around
`handle_gpu_memory_settings` to record what that step saw and decided, and to call SGLang's own
helpers (reserve_for_graph_mb, reserve_for_deepep_a2a_mb, post_capture_kv_sizing_planned) so the
reserve can be split into its terms.  The final values come from ServerArgs.resolved_dict().
"""
from __future__ import annotations

import argparse
import csv
import json
import os
import select
import signal
import sys
import time
import traceback

HERE = os.path.dirname(os.path.abspath(__file__))
SHARED = os.path.join(HERE, "..", "..", "..", "shared")
sys.path.insert(0, os.path.join(SHARED, "tools", "sglang-oracle"))
os.environ.setdefault("ORACLE_WORK", os.path.join(os.environ.get("TMPDIR", "/tmp"), "hfkv-serverargs-models"))

import oracle_sglang as O  # noqa: E402  (the shared SGLang oracle: its GPU fake and config staging)

HUB = os.path.join(SHARED, "hub-configs")

# name: (capability, torch device name, torch total bytes (cudaMemGetInfo/total_memory),
#        nvidia-smi memory.total MiB)  -- sources in NOTES.md ("GPU figures")
GPUS = {
    "h100": ((9, 0), "NVIDIA H100 80GB HBM3", 85045231616, 81559),
    "h200": ((9, 0), "NVIDIA H200", 150754820096, 143771),
    "b200": ((10, 0), "NVIDIA B200", 191537135616, 183359),
}
O.GPUS.update(GPUS)

DEFAULT_CONFIGS = [
    "Qwen__Qwen3-8B.json",                       # dense GQA (Qwen3ForCausalLM)
    "meta-llama__Meta-Llama-3.1-8B.json",        # dense GQA (LlamaForCausalLM)
    "meta-llama__Llama-2-7b-hf.json",            # dense MHA; path contains "llama-2" (prefill-graph cap)
    "deepseek-ai__DeepSeek-V3.json",             # MLA + MoE (DeepseekV3ForCausalLM)
    "deepseek-ai__DeepSeek-V3.2.json",           # MLA + DSA indexer
    "Qwen__Qwen3-Next-80B-A3B-Thinking.json",    # hybrid GDN (mamba-ish) + full attention
    "openai__gpt-oss-120b.json",                 # hybrid SWA + MoE
    "google__gemma-3-4b-it.json",                # Gemma3 VLM checkpoint; SGLang serves it text-only by default
    "google__gemma-4-26B-A4B.json",              # VLM (multimodal reserve adjustment) + hybrid SWA
    "Qwen__Qwen3.5-35B-A3B.json",                # VLM + hybrid GDN
    "deepseek-ai__DeepSeek-V4-Flash.json",       # DSV4 compressed attention pools
]

TPS = [1, 2, 4, 8]


def case_list(gpus, configs, quick=False):
    cases = []
    for g in gpus:
        for c in configs:
            for tp in TPS:
                for dpa in (False, True):
                    for pp in ((1,) if quick else (1, 2)):
                        for cps in ((None,) if quick else (None, 4096)):
                            cases.append(dict(gpu=g, config=c, tp=tp, dp_attention=dpa, pp=pp,
                                              chunked_prefill_size=cps))
    return cases


EXTRA_CASES = [
    # speculative decoding and a few explicit settings, H200 and B200, TP8
    dict(gpu=g, config="deepseek-ai__DeepSeek-V3.json", tp=8, dp_attention=dpa, pp=1,
         chunked_prefill_size=None, extra={"speculative_algorithm": "EAGLE"})
    for g in ("h200", "b200") for dpa in (False, True)
] + [
    dict(gpu=g, config="Qwen__Qwen3-8B.json", tp=1, dp_attention=False, pp=1, chunked_prefill_size=None,
         extra=e)
    for g in ("h100", "h200", "b200")
    for e in ({"max_running_requests": 64}, {"cuda_graph_max_bs_decode": 64}, {"disable_cuda_graph": True},
              {"kv_cache_dtype": "fp8_e4m3"}, {"disaggregation_mode": "decode"},
              {"disaggregation_mode": "prefill"})
]


# ---------------------------------------------------------------------------------------------
# child side
# ---------------------------------------------------------------------------------------------

def install_fake_gpu(gpu: str):
    O.install_platform(gpu)  # override_platform facts (+ the oracle's shim, replaced below)
    import sglang.srt.model_executor.cuda_graph_config as cgc
    import sglang.srt.utils as su
    import sglang.srt.utils.common as common

    mib = float(GPUS[gpu][3])
    real_gdmc = common.__dict__["_hfkv_real_gdmc"]
    real_dpb = cgc.__dict__.setdefault("_hfkv_real_dpb", cgc.default_prefill_backend)

    def with_cuda(mod, fn):
        """Call fn with mod.is_cuda answering True (as on a real CUDA box), then restore it.
        Scoped, so modules imported later still see the CPU torch's is_cuda() at import time
        (a global True makes them import CUDA-only kernels)."""
        def call(*a, **k):
            saved = mod.is_cuda
            mod.is_cuda = lambda: True
            try:
                return fn(*a, **k)
            finally:
                mod.is_cuda = saved
        return call

    # get_device_memory_capacity: SGLang's own body runs; only nvidia-smi is answered.
    common.get_nvgpu_memory_capacity = lambda: mib
    gdmc = with_cuda(common, real_gdmc)
    gdmc.__name__ = "get_device_memory_capacity"
    common.get_device_memory_capacity = gdmc
    for mod in list(sys.modules.values()):
        if mod is None or mod is common or not getattr(mod, "__name__", "").startswith("sglang"):
            continue
        cur = getattr(mod, "get_device_memory_capacity", None)
        if cur is not None and (cur is real_gdmc or getattr(cur, "__name__", "") == "<lambda>"):
            try:
                mod.get_device_memory_capacity = gdmc
            except Exception:  # noqa: BLE001
                pass
    # default prefill CUDA-graph backend: asks sglang.srt.utils.is_cuda() at call time.
    cgc.default_prefill_backend = with_cuda(su, real_dpb)


RECORD: dict = {}


def install_probe():
    from sglang.srt.arg_groups import memory_hook
    from sglang.srt.arg_groups.overrides import post_capture_kv_sizing_planned, resolving_view
    from sglang.srt.arg_groups.resolution_hooks import register_resolution_hook
    from sglang.srt.runtime_context import attn_dp_enabled_of

    @register_resolution_hook("handle_gpu_memory_settings")
    def probe(server_args, previous):
        cfg0 = resolving_view(server_args)
        RECORD["in_mem_fraction_static"] = cfg0.mem_fraction_static
        RECORD["in_chunked_prefill_size"] = cfg0.chunked_prefill_size
        RECORD["in_prefill_graph_backend"] = cfg0.cuda_graph_config.prefill.backend
        RECORD["in_decode_graph_backend"] = cfg0.cuda_graph_config.decode.backend
        previous(server_args)
        cfg = resolving_view(server_args)
        from sglang.srt.utils.common import get_device_memory_capacity

        RECORD["gpu_mem_mib_seen"] = get_device_memory_capacity(cfg.device)
        RECORD["hook_mem_fraction_static"] = cfg.mem_fraction_static
        RECORD["hook_chunked_prefill_size"] = cfg.chunked_prefill_size
        RECORD["hook_max_prefill_tokens"] = cfg.max_prefill_tokens
        RECORD["hook_decode_max_bs"] = cfg.cuda_graph_config.decode.max_bs
        RECORD["hook_decode_backend"] = cfg.cuda_graph_config.decode.backend
        RECORD["hook_prefill_backend"] = cfg.cuda_graph_config.prefill.backend
        RECORD["hook_prefill_max_bs"] = cfg.cuda_graph_config.prefill.max_bs
        RECORD["hook_prefill_n_bs"] = len(cfg.cuda_graph_config.prefill.bs or ())
        RECORD["hook_attn_dp_size"] = cfg.attn_dp_size
        RECORD["hook_disaggregation_mode"] = cfg.disaggregation_mode
        RECORD["hook_max_running_requests"] = cfg.max_running_requests
        RECORD["hook_speculative_num_draft_tokens"] = cfg.speculative_num_draft_tokens
        RECORD["hook_attn_dp_enabled"] = attn_dp_enabled_of(cfg)
        try:
            RECORD["post_capture_kv_sizing"] = post_capture_kv_sizing_planned(server_args)
        except Exception as e:  # noqa: BLE001
            RECORD["post_capture_kv_sizing"] = f"err:{type(e).__name__}"
        try:
            RECORD["graph_reserve_mb"] = memory_hook.reserve_for_graph_mb(server_args)
        except Exception as e:  # noqa: BLE001
            RECORD["graph_reserve_mb"] = f"err:{type(e).__name__}"
        try:
            RECORD["deepep_reserve_mb"] = memory_hook.reserve_for_deepep_a2a_mb(server_args)
        except Exception as e:  # noqa: BLE001
            RECORD["deepep_reserve_mb"] = f"err:{type(e).__name__}"
        try:
            from sglang.srt.arg_groups.overrides import model_config_of

            mc = model_config_of(server_args)
            RECORD["is_vlm"] = bool(mc.is_multimodal and not cfg.language_only and not cfg.language_model_only
                                    and cfg.disaggregation_mode != "decode")
            vc = getattr(mc.hf_config, "vision_config", None)
            RECORD["vit_layers"] = getattr(vc, "num_hidden_layers", None) if vc is not None else None
            RECORD["vit_hidden"] = getattr(vc, "hidden_size", None) if vc is not None else None
            from sglang.srt.configs.model_config import AttentionArch

            RECORD["use_mla"] = mc.attention_arch == AttentionArch.MLA
            RECORD["model_context_len"] = mc.context_len
        except Exception as e:  # noqa: BLE001
            RECORD["is_vlm"] = f"err:{type(e).__name__}"


def my_formula(rec, tp, pp, gpu_mem):
    """The reserve as NOTES.md describes it (CUDA path; XPU's extra 2 GB and the aiter/kv-sharding
    post-adjustments are not modelled -- the hook_* value is compared, before those),
    rebuilt from the recorded inputs; compared with what SGLang declared."""
    if rec.get("post_capture_kv_sizing") is True:
        reserved = 1536 + tp * pp / 8 * 1024
    else:
        cps = rec["hook_chunked_prefill_size"]
        if rec.get("hook_disaggregation_mode") == "decode":
            running = rec.get("hook_max_running_requests") or rec.get("hook_decode_max_bs") or 1
            tokens = max(running * (rec.get("hook_speculative_num_draft_tokens") or 1), 2048)
        elif cps and cps > 0:
            tokens = max(cps, 2048)
        else:
            tokens = max(rec["hook_max_prefill_tokens"], 2048)
        reserved = 512 + tokens * 1.5 + tp * pp / 8 * 1024 + float(rec["graph_reserve_mb"])
        if gpu_mem > 60 * 1024:
            reserved = max(reserved, 10 * 1024)
        reserved += float(rec["deepep_reserve_mb"])
    mfs = round((gpu_mem - reserved) / gpu_mem, 3)
    if rec.get("is_vlm") is True:
        if rec.get("post_capture_kv_sizing") is True:
            mfs = mfs - 8 * 1024 / gpu_mem
        elif rec.get("vit_layers") is not None or rec.get("vit_hidden") is not None:
            L = rec.get("vit_layers") or 24
            H = rec.get("vit_hidden") or 1024
            ratio = L * H * H / (24 * 1024 * 1024)
            f = max(0.8, min(1.05, 1.0 - 0.1 * (ratio - 1.0)))
            mfs = mfs * 0.95 * f
    return reserved, mfs


def run_case(case):
    import logging
    import warnings

    warnings.filterwarnings("ignore")
    logging.disable(logging.WARNING)
    gpu = case["gpu"]
    O.bootstrap(gpu)
    O.patch_cuda_import_gates(gpu)
    install_fake_gpu(gpu)
    O.patch_autoconfig()
    install_probe()
    from sglang.srt.server_args import ServerArgs

    cfg_path = os.path.join(HUB, case["config"])
    raw = json.load(open(cfg_path))
    model_dir = O.prepare_model_dir(cfg_path)
    kw = dict(model_path=model_dir, tp_size=case["tp"], pp_size=case["pp"], device="cuda",
              trust_remote_code=True)
    if case["dp_attention"]:
        kw["dp_size"] = case["tp"]
        kw["enable_dp_attention"] = True
    if case.get("chunked_prefill_size") is not None:
        kw["chunked_prefill_size"] = case["chunked_prefill_size"]
    kw.update(case.get("extra") or {})
    out = {"status": "ok"}
    try:
        sa = ServerArgs(**kw)
        sa.resolve_once()
        r = sa.resolved_dict()
    except BaseException as e:  # noqa: BLE001
        out.update(status="sglang_error", error=f"{type(e).__name__}: {str(e)[:300]}".replace("\t", " ").replace("\n", " "))
        out.update({k: v for k, v in RECORD.items()})
        return out
    cg = r.get("cuda_graph_config") or {}
    out.update({k: v for k, v in RECORD.items()})
    # what the runtime reads: publish() builds the runtime-context bags from the resolved record
    try:
        from sglang.srt.runtime_context import get_exec, get_model, get_schedule, publish

        publish(sa, role="scheduler")
        out["pub_mem_fraction_static"] = get_schedule().mem_fraction_static
        out["pub_chunked_prefill_size"] = get_schedule().chunked_prefill_size
        out["pub_page_size"] = get_schedule().page_size
        out["pub_max_running_requests"] = get_schedule().max_running_requests
        out["pub_kv_cache_dtype"] = get_model().kv_cache_dtype
        out["pub_decode_max_bs"] = get_exec().graph.cuda_graph_config.decode.max_bs
    except BaseException as e:  # noqa: BLE001
        out["pub_mem_fraction_static"] = "publish_err:%s:%s" % (type(e).__name__, str(e)[:80])
    out.update(
        mem_fraction_static=r.get("mem_fraction_static"),
        chunked_prefill_size=r.get("chunked_prefill_size"),
        max_prefill_tokens=r.get("max_prefill_tokens"),
        cuda_graph_max_bs=(cg.get("decode") or {}).get("max_bs"),
        decode_graph_backend=(cg.get("decode") or {}).get("backend"),
        decode_graph_n_bs=len((cg.get("decode") or {}).get("bs") or ()),
        prefill_graph_backend=(cg.get("prefill") or {}).get("backend"),
        prefill_graph_max_bs=(cg.get("prefill") or {}).get("max_bs"),
        prefill_graph_n_bs=len((cg.get("prefill") or {}).get("bs") or ()),
        max_running_requests=r.get("max_running_requests"),
        max_total_tokens=r.get("max_total_tokens"),
        page_size=r.get("page_size"),
        attn_dp_size=r.get("attn_dp_size"),
        dp_size_resolved=r.get("dp_size"),
        ep_size=r.get("ep_size"),
        kv_cache_dtype=r.get("kv_cache_dtype"),
        attention_backend=r.get("attention_backend"),
        moe_a2a_backend=r.get("moe_a2a_backend"),
        disable_radix_cache=r.get("disable_radix_cache"),
        swa_full_tokens_ratio=r.get("swa_full_tokens_ratio"),
        mamba_full_memory_ratio=r.get("mamba_full_memory_ratio"),
        max_mamba_cache_size=r.get("max_mamba_cache_size"),
        speculative_algorithm=r.get("speculative_algorithm"),
        speculative_num_draft_tokens=r.get("speculative_num_draft_tokens"),
        schedule_conservativeness=r.get("schedule_conservativeness"),
        disaggregation_mode=r.get("disaggregation_mode"),
        context_length=r.get("context_length"),
    )
    try:
        gm = float(RECORD["gpu_mem_mib_seen"])
        res, mfs = my_formula(RECORD, case["tp"], case["pp"], gm)
        out["notes_reserved_mb"] = res
        out["notes_formula_mfs"] = round(mfs, 6)
        out["notes_formula_matches"] = abs(mfs - float(RECORD["hook_mem_fraction_static"])) < 1e-9
    except Exception as e:  # noqa: BLE001
        out["notes_formula_mfs"] = f"err:{type(e).__name__}:{e}"
    out["model_arch"] = (raw.get("architectures") or [None])[0]
    return out


def fork_run(case, timeout=300):
    r, w = os.pipe()
    pid = os.fork()
    if pid == 0:
        os.close(r)
        try:
            res = run_case(case)
        except BaseException as e:  # noqa: BLE001
            res = {"status": "crash", "error": repr(e)[:300], "tb": traceback.format_exc()[-600:]}
        with os.fdopen(w, "wb") as f:
            f.write(json.dumps(res, default=str).encode())
        os._exit(0)
    os.close(w)
    chunks = []
    with os.fdopen(r, "rb") as f:
        while True:
            ready, _, _ = select.select([f], [], [], timeout)
            if not ready:
                os.kill(pid, signal.SIGKILL)
                break
            b = f.read1(1 << 20)
            if not b:
                break
            chunks.append(b)
    os.waitpid(pid, 0)
    try:
        return json.loads(b"".join(chunks).decode())
    except Exception:  # noqa: BLE001
        return {"status": "crash", "error": "no JSON from child (timeout or hard crash)"}


INPUT_COLS = ["gpu", "gpu_name", "sm", "nvidia_smi_total_mib", "gpu_mem_gib_from_mib", "torch_total_bytes",
              "torch_total_gib", "tp", "dp", "enable_dp_attention", "pp", "chunked_prefill_size_set", "extra_args",
              "config_file", "model_arch"]
OUTPUT_COLS = [
    "status", "gpu_mem_mib_seen", "mem_fraction_static", "hook_mem_fraction_static", "notes_formula_mfs",
    "notes_formula_matches", "notes_reserved_mb", "graph_reserve_mb", "deepep_reserve_mb", "post_capture_kv_sizing",
    "is_vlm", "use_mla", "model_context_len", "hook_chunked_prefill_size", "chunked_prefill_size", "max_prefill_tokens",
    "cuda_graph_max_bs", "decode_graph_backend", "decode_graph_n_bs", "hook_prefill_backend", "prefill_graph_backend",
    "hook_prefill_max_bs", "hook_prefill_n_bs", "prefill_graph_max_bs", "prefill_graph_n_bs",
    "max_running_requests", "max_total_tokens", "page_size", "attn_dp_size", "dp_size_resolved", "ep_size",
    "kv_cache_dtype", "attention_backend", "moe_a2a_backend", "disable_radix_cache", "swa_full_tokens_ratio",
    "mamba_full_memory_ratio", "max_mamba_cache_size", "speculative_algorithm", "speculative_num_draft_tokens",
    "schedule_conservativeness", "disaggregation_mode", "context_length", "pub_mem_fraction_static",
    "pub_chunked_prefill_size", "pub_page_size", "pub_max_running_requests", "pub_kv_cache_dtype", "pub_decode_max_bs",
    "error"]


def main():
    ap = argparse.ArgumentParser()
    ap.add_argument("--out", default=os.path.join(HERE, "serverargs-0.5.23.tsv"))
    ap.add_argument("--gpus", default="h100,h200,b200")
    ap.add_argument("--configs", default=",".join(DEFAULT_CONFIGS))
    ap.add_argument("--quick", action="store_true", help="PP=1 and default chunked prefill only")
    ap.add_argument("--no-extra", action="store_true")
    a = ap.parse_args()

    import logging
    import warnings

    warnings.filterwarnings("ignore")
    logging.disable(logging.WARNING)
    # import SGLang once in the parent (children inherit it)
    O.bootstrap("h200")
    O.supported_archs()
    O.patch_cuda_import_gates("h200")
    import sglang.srt.arg_groups.memory_hook  # noqa: F401
    import sglang.srt.server_args  # noqa: F401
    import sglang.srt.utils.common as common

    common._hfkv_real_gdmc = common.get_device_memory_capacity
    import sglang

    gpus = [g for g in a.gpus.split(",") if g]
    configs = [c for c in a.configs.split(",") if c]
    cases = case_list(gpus, configs, a.quick)
    if not a.no_extra:
        cases += [c for c in EXTRA_CASES if c["gpu"] in gpus and c["config"] in configs]
    t0 = time.time()
    with open(a.out, "w", newline="") as f:
        w = csv.writer(f, delimiter="\t", lineterminator="\n")
        w.writerow(INPUT_COLS + OUTPUT_COLS + ["sglang_version"])
        for i, c in enumerate(cases):
            # gate patches depend on sm: re-apply per case in the child via bootstrap/platform
            res = fork_run(c)
            cap, name, tbytes, mib = GPUS[c["gpu"]]
            row = {
                "gpu": c["gpu"], "gpu_name": name, "sm": cap[0] * 10 + cap[1], "nvidia_smi_total_mib": mib,
                "gpu_mem_gib_from_mib": round(mib / 1024, 4), "torch_total_bytes": tbytes,
                "torch_total_gib": round(tbytes / 2**30, 4), "tp": c["tp"],
                "dp": c["tp"] if c["dp_attention"] else 1, "enable_dp_attention": c["dp_attention"],
                "pp": c["pp"], "chunked_prefill_size_set": c.get("chunked_prefill_size") or "default",
                "extra_args": json.dumps(c.get("extra")) if c.get("extra") else "",
                "config_file": c["config"], "model_arch": res.get("model_arch") or
                (json.load(open(os.path.join(HUB, c["config"]))).get("architectures") or [""])[0],
            }
            row.update({k: res.get(k, "") for k in OUTPUT_COLS})
            row["sglang_version"] = sglang.__version__
            w.writerow([("" if row[k] is None else row[k]) for k in INPUT_COLS + OUTPUT_COLS + ["sglang_version"]])
            f.flush()
            print(f"[{i + 1}/{len(cases)}] {c['gpu']} {c['config']} tp={c['tp']} dpa={c['dp_attention']} pp={c['pp']} "
                  f"cps={c.get('chunked_prefill_size')} {c.get('extra') or ''}: {res.get('status')} "
                  f"mfs={res.get('mem_fraction_static')} match={res.get('notes_formula_matches')} "
                  f"{(res.get('error') or '')[:120]}", file=sys.stderr, flush=True)
    print(f"wrote {len(cases)} rows to {a.out} in {time.time() - t0:.0f}s", file=sys.stderr)


if __name__ == "__main__":
    main()
