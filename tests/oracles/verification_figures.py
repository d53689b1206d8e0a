"""Print the engine modes' verification figures for README.md's "Engine modes" paragraph, counted from the
oracle rows as the sweeps classify them.

    python tests/oracles/verification_figures.py

Each stored row is what vLLM 0.33.0's or SGLang 0.5.23's own code computed (tests/oracles/README*.md), or
SGLang 0.5.12's (../shared/engine-oracles/sglang-0.5.12-h200.jsonl, swept under that release's rules). A row
is *not comparable* when the oracle could not run the engine's code offline (``NOT_COMPARABLE`` /
``OFFLINE_ERRORS`` in tests/engines/vllm/test_oracle.py and tests/engines/vllm/test_transformers.py), a *known gap*
when hfkv does not reproduce it yet (tests/oracles/known-gaps.tsv, with the engine's reason); every other
row is compared, and the sweeps (tests/engines/vllm/test_oracle.py, tests/engines/sglang/test_oracle.py,
tests/engines/vllm/test_transformers.py, tests/engines/vllm/test_transformers_families.py) fail unless each
compared row matches: served rows figure by figure, refused rows with the engine's reason. So "matched" here
is "compared" while those tests pass; tests/engines/test_verification_figures.py checks the README says what
this prints.
"""

from __future__ import annotations

import json
import sys
from pathlib import Path

TESTS = Path(__file__).resolve().parents[1]
sys.path.insert(0, str(TESTS))

import engines.sglang.test_oracle as sg  # noqa: E402  (the sweeps' own classification)
import engines.vllm.test_oracle as vo  # noqa: E402
import engines.vllm.test_transformers as tb  # noqa: E402

ORACLES = TESTS / "oracles"
VLLM_GROUPS = {  # file name -> the group the README names
    "vllm-0.33.0-h200.jsonl": "H200", "vllm-0.33.0-b200.jsonl": "B200", "vllm-0.33.0-a100.jsonl": "A100",
}


def _jsonl(path: Path) -> list[dict]:
    return [json.loads(line) for line in path.read_text().splitlines() if line.strip()] if path.is_file() else []


def vllm_counts() -> dict[str, list[int]]:
    """group -> [compared, rows, gaps, offline] over the vLLM oracle files."""
    out: dict[str, list[int]] = {}
    for path in vo.ORACLE_FILES:
        if "0.34.0" in path.name:
            continue  # the figures the README prints are vLLM 0.33.0's sweep; 0.34.0's rows are swept on their own
        group = VLLM_GROUPS.get(path.name, "more")
        counts = out.setdefault(group, [0, 0, 0, 0])
        for row in _jsonl(path):
            counts[1] += 1
            if vo.offline_reason(row):
                counts[3] += 1
            elif vo.gap_reason(row):
                counts[2] += 1
            else:
                counts[0] += 1
    more = out.setdefault("more", [0, 0, 0, 0])
    for path, offline in ((tb.ROWS, lambda row: not tb.comparable(row)),
                          (ORACLES / "transformers-families-vllm-0.33.0.jsonl", lambda row: False)):
        for row in _jsonl(path):
            more[1] += 1
            more[3 if offline(row) else 0] += 1
    return out


def sglang_counts() -> dict[str, list[int]]:
    """source -> [compared, rows, gaps] over the SGLang oracle files (H200, B200, budget, fixtures + configs)."""
    out: dict[str, list[int]] = {}
    for source in ("h200", "b200", "budget", "fixtures", "configs"):
        group = "fixtures" if source == "configs" else source
        counts = out.setdefault(group, [0, 0, 0])
        for row in sg.rows(source):
            counts[1] += 1
            counts[2 if sg.gap_reason(row) else 0] += 1
    return out


def sglang_release_counts() -> dict[str, list[int]]:
    """release -> [compared, rows, gaps, driver limits] over the rows of other SGLang releases."""
    out: dict[str, list[int]] = {}
    for source in sg.RELEASE_SOURCES:
        for row in sg.rows(source):
            counts = out.setdefault(sg.release(row), [0, 0, 0, 0])
            counts[1] += 1
            counts[3 if row["config"] in sg.DRIVER_LIMITS else 2 if sg.gap_reason(row) else 0] += 1
    return out


def figures() -> str:
    """The parenthesis of the README's sentence, from the counts above."""
    v, s, r = vllm_counts(), sglang_counts(), sglang_release_counts()
    vllm = ", ".join(f"{v[g][0]}/{v[g][0] + v[g][2]} comparable {g} rows" if g == "H200" else
                     f"{v[g][0]}/{v[g][0] + v[g][2]} {g}" for g in ("H200", "B200", "A100") if g in v)
    vllm += (f", and {v['more'][0]}/{v['more'][0] + v['more'][2]} more on covering windows, the fixtures, edited "
             "configs and the models it serves through its Transformers backend")
    offline = sum(c[3] for c in v.values())
    sglang = (f"{s['h200'][0]}/{s['h200'][1]} H200, {s['b200'][0]}/{s['b200'][1]} B200 and "
              f"{s['budget'][0]}/{s['budget'][1]} budget rows, the served ones to the byte, the others refused or "
              "warned with SGLang's reason, including the TP and PP its model classes refuse, and "
              f"{s['fixtures'][0]}/{s['fixtures'][1]} fixture and edited-config rows")
    sglang += "".join(f"; SGLang {release}: {c[0]}/{c[0] + c[2]} comparable H200 rows under its own rules ({c[3]} "
                      "where its oracle failed before SGLang's code decided are listed in the test)"
                      for release, c in sorted(r.items()))
    gaps = sum(c[2] for c in v.values()) + sum(c[2] for c in s.values()) + sum(c[2] for c in r.values())
    return (f"(vLLM: {vllm}; SGLang: {sglang}). The {gaps} rows not matched are listed with the engine's own reason "
            f"in `tests/oracles/known-gaps.tsv`, and fail the day they start to match; {offline} vLLM rows where the "
            "oracle could not run vLLM's code offline are listed in the test")


if __name__ == "__main__":
    if not sg.HUB_CONFIGS.is_dir():
        sys.exit(f"{sg.HUB_CONFIGS} is absent: the shared oracle rows cannot be counted")
    print(figures())
