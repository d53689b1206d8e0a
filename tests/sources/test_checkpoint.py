"""Exact weights of a local model folder from its safetensors headers (``hfkv.sources.checkpoint``), and
the report's weights taking them over the estimate. Expected bytes are the tensors' element counts ×
dtype sizes, written beside each assertion."""

from __future__ import annotations

import json
import shutil
import struct
from pathlib import Path

import pytest

import hfkv
from hfkv.sources.checkpoint import folder_weights

FIXTURES = Path(__file__).resolve().parents[2] / "fixtures"


def _write_safetensors(path: Path, tensors: dict[str, tuple[str, list[int], int]], metadata=None, payload=True):
    """Hand-written file: 8-byte LE header length, JSON header, zero-filled payload (left out when
    ``payload`` is False: only the header is read)."""
    header, offset = {}, 0
    for name, (dtype, shape, nbytes) in tensors.items():
        header[name] = {"dtype": dtype, "shape": shape, "data_offsets": [offset, offset + nbytes]}
        offset += nbytes
    if metadata:
        header["__metadata__"] = metadata
    raw = json.dumps(header).encode()
    path.write_bytes(struct.pack("<Q", len(raw)) + raw + (b"\0" * offset if payload else b""))


def test_hand_written_headers_give_the_exact_payload(tmp_path):
    _write_safetensors(tmp_path / "model-00001-of-00002.safetensors",
                       {"a": ("BF16", [2, 3], 12), "b": ("I64", [2], 16)}, metadata={"format": "pt"})
    _write_safetensors(tmp_path / "model-00002-of-00002.safetensors", {"c": ("F8_E4M3", [4, 4], 16)})
    got = folder_weights(tmp_path)
    assert got["weights_bytes"] == 2 * 3 * 2 + 2 * 8 + 4 * 4 * 1 == 44
    assert got["parameters"] == {"BF16": 6, "I64": 2, "F8_E4M3": 16}
    assert got["source"] == "headers" and got["parameters_exact"] is True


def test_a_file_the_safetensors_package_wrote(tmp_path):
    np = pytest.importorskip("numpy")
    st = pytest.importorskip("safetensors.numpy")
    st.save_file({"w": np.zeros((3, 4), dtype=np.float32), "q": np.zeros((10,), dtype=np.uint8),
                  "h": np.zeros((2, 2), dtype=np.float16)}, str(tmp_path / "model.safetensors"))
    got = folder_weights(tmp_path)
    assert got["weights_bytes"] == 3 * 4 * 4 + 10 * 1 + 2 * 2 * 2 == 66
    assert got["parameters"] == {"F32": 12, "U8": 10, "F16": 4}
    assert got["parameters_exact"] is False  # U8 may pack several quantised weights per element


def test_an_index_alone_gives_its_total_size(tmp_path):
    (tmp_path / "model.safetensors.index.json").write_text(json.dumps(
        {"metadata": {"total_size": 16060522496}, "weight_map": {}}))
    got = folder_weights(tmp_path)
    assert got["weights_bytes"] == 16060522496 and got["source"] == "headers" and got["total_parameters"] is None


@pytest.mark.parametrize("content", [b"", b"\x01\x00", struct.pack("<Q", 1 << 40) + b"{}", struct.pack("<Q", 2) + b"[]"])
def test_no_readable_checkpoint_is_none(tmp_path, content):
    assert folder_weights(tmp_path) is None  # an empty folder
    (tmp_path / "model.safetensors").write_bytes(content)
    assert folder_weights(tmp_path) is None  # not a safetensors file: the estimate stands


def test_a_local_folder_reports_its_headers_over_the_estimate(tmp_path):
    shutil.copy(FIXTURES / "meta-llama__Meta-Llama-3.1-8B" / "config.json", tmp_path / "config.json")
    # One embedding matrix 128,256 × 4,096 in BF16 stands for the checkpoint: 1,050,673,152 B.
    _write_safetensors(tmp_path / "model.safetensors", {"embed": ("BF16", [128256, 4096], 128256 * 4096 * 2)},
                       payload=False)
    weights = hfkv.inspect(str(tmp_path)).to_dict()["weights"]
    assert weights["source"] == "headers" and weights["weights_bytes"] == 128256 * 4096 * 2 == 1_050_673_152
    assert weights["roles"]["embedding"]["parameters"] == 2 * 128256 * 4096  # the estimate's split stays
