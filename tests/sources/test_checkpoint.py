"""Exact weights of a local model folder from its safetensors headers (``hfkv.sources.checkpoint``), and
the report's weights taking them over the estimate. Expected bytes are the tensors' element counts ×
dtype sizes, written beside each assertion."""

from __future__ import annotations

import json
import os
import shutil
import struct
import subprocess
import sys
from pathlib import Path

import pytest

import hfkv
from hfkv.sources.checkpoint import MAX_HEADER_BYTES, MAX_INDEX_BYTES, Untrusted, folder_weights, read_header

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


def _index(folder: Path, weight_map: dict[str, str], total_size: int | None = None) -> None:
    """A model.safetensors.index.json naming ``weight_map`` (and ``total_size`` when given)."""
    index = {"metadata": {"total_size": total_size} if total_size is not None else {}, "weight_map": weight_map}
    (folder / "model.safetensors.index.json").write_text(json.dumps(index))


def _grow(path: Path, payload: int) -> None:
    """Extend a header-only file to its full size, sparse (no disk written): the header's spans must
    end inside the file."""
    with open(path, "r+b") as handle:
        handle.truncate(path.stat().st_size + payload)


def test_hand_written_headers_give_the_exact_payload(tmp_path):
    _write_safetensors(tmp_path / "model-00001-of-00002.safetensors",
                       {"a": ("BF16", [2, 3], 12), "b": ("I64", [2], 16)}, metadata={"format": "pt"})
    _write_safetensors(tmp_path / "model-00002-of-00002.safetensors", {"c": ("F8_E4M3", [4, 4], 16)})
    _index(tmp_path, {"a": "model-00001-of-00002.safetensors", "b": "model-00001-of-00002.safetensors",
                      "c": "model-00002-of-00002.safetensors"}, total_size=44)
    got = folder_weights(tmp_path)
    assert got["weights_bytes"] == 2 * 3 * 2 + 2 * 8 + 4 * 4 * 1 == 44
    assert got["parameters"] == {"BF16": 6, "I64": 2, "F8_E4M3": 16}
    assert got["source"] == "headers" and got["parameters_exact"] is True


@pytest.mark.parametrize("content", [b"", b"\x01\x00", struct.pack("<Q", 1 << 40) + b"{}", struct.pack("<Q", 2) + b"[]"])
def test_no_readable_checkpoint_is_untrusted(tmp_path, content):
    assert folder_weights(tmp_path) is None  # an empty folder
    (tmp_path / "model.safetensors").write_bytes(content)
    got = folder_weights(tmp_path)  # not a safetensors file: the estimate stands, with a reason
    assert got["weights_bytes"] is None and "model.safetensors" in got["untrusted"]


def test_a_local_folder_reports_its_headers_over_the_estimate(tmp_path):
    shutil.copy(FIXTURES / "meta-llama__Meta-Llama-3.1-8B" / "config.json", tmp_path / "config.json")
    # One embedding matrix 128,256 × 4,096 in BF16 stands for the checkpoint: 1,050,673,152 B.
    _write_safetensors(tmp_path / "model.safetensors", {"embed": ("BF16", [128256, 4096], 128256 * 4096 * 2)},
                       payload=False)
    _grow(tmp_path / "model.safetensors", 128256 * 4096 * 2)
    weights = hfkv.inspect(str(tmp_path)).to_dict()["weights"]
    assert weights["source"] == "headers" and weights["weights_bytes"] == 128256 * 4096 * 2 == 1_050_673_152
    assert weights["roles"]["embedding"]["parameters"] == 2 * 128256 * 4096  # the estimate's split stays


# -- issue 30 item 3: headers are input; each check below let a wrong figure through as exact before --------

LLAMA = FIXTURES / "meta-llama__Meta-Llama-3.1-8B" / "config.json"
SHARDS = [f"model-0000{i}-of-00004.safetensors" for i in range(1, 5)]


def _four_shards(folder: Path, present: list[int]) -> None:
    """An index naming four BF16 shards of one 8 × 8 tensor each (128 B apiece, 512 B in all), with
    the shards of ``present`` (1-based) written."""
    _index(folder, {f"t{i}": SHARDS[i - 1] for i in range(1, 5)}, total_size=4 * 8 * 8 * 2)
    for i in present:
        _write_safetensors(folder / SHARDS[i - 1], {f"t{i}": ("BF16", [8, 8], 8 * 8 * 2)})


def _untrusted(folder: Path, *words: str) -> None:
    got = folder_weights(folder)
    assert got is not None and got["weights_bytes"] is None, got
    assert all(word in got["untrusted"] for word in words), got["untrusted"]


def _in_a_child(folder: Path) -> dict:
    """folder_weights run in another process with a deadline: a FIFO opened for reading would block
    this one for ever (the child is killed instead, and the test fails on the timeout)."""
    code = ("import json, sys; from hfkv.sources.checkpoint import MAX_HEADER_BYTES, MAX_INDEX_BYTES, Untrusted, folder_weights, read_header; "
            "print(json.dumps(folder_weights(sys.argv[1])))")
    done = subprocess.run([sys.executable, "-c", code, str(folder)], capture_output=True, text=True, timeout=20)
    assert done.returncode == 0, done.stderr
    return json.loads(done.stdout)


@pytest.mark.skipif(not hasattr(os, "mkfifo"), reason="no FIFOs on this platform")
@pytest.mark.parametrize("name", ["model.safetensors", "model.safetensors.index.json"])
def test_a_fifo_is_never_opened(tmp_path, name):
    os.mkfifo(tmp_path / name)  # nobody writes to it: an open() for reading would wait for ever
    got = _in_a_child(tmp_path)
    assert got["weights_bytes"] is None and "not a regular file" in got["untrusted"]


def test_a_device_file_is_never_opened():
    with pytest.raises(Untrusted, match="not a regular file"):
        read_header("/dev/zero", roots=(Path("/dev"),))


def test_one_of_four_shards_is_untrusted_and_the_report_says_so(tmp_path):
    shutil.copy(LLAMA, tmp_path / "config.json")
    _four_shards(tmp_path, present=[1])  # before: 128 B summed and labelled exact ("fits" on any GPU)
    _untrusted(tmp_path, "3 of the 4 shards", "missing", SHARDS[1])
    report = hfkv.inspect(str(tmp_path))
    assert report.to_dict()["weights"]["source"] == "estimate"
    assert any(w.startswith("safetensors headers not used: 3 of the 4 shards") for w in report.warnings)


def test_all_four_shards_are_counted(tmp_path):
    _four_shards(tmp_path, present=[1, 2, 3, 4])
    got = folder_weights(tmp_path)
    assert got["weights_bytes"] == 4 * 8 * 8 * 2 == 512 and got["parameters"] == {"BF16": 4 * 64}


def test_consolidated_beside_shards_is_counted_once(tmp_path):
    # Mistral's repos ship consolidated.safetensors (their own format) beside the same weights in shards.
    _four_shards(tmp_path, present=[1, 2, 3, 4])
    _write_safetensors(tmp_path / "consolidated.safetensors",
                       {f"layers.{i}": ("BF16", [8, 8], 8 * 8 * 2) for i in range(4)})
    assert folder_weights(tmp_path)["weights_bytes"] == 4 * 8 * 8 * 2 == 512  # before: 1,024


def test_a_total_size_that_disagrees_is_untrusted(tmp_path):
    _four_shards(tmp_path, present=[1, 2, 3, 4])
    _index(tmp_path, {f"t{i}": SHARDS[i - 1] for i in range(1, 5)}, total_size=2 * 512)  # the shards hold 512 B
    _untrusted(tmp_path, "total_size 1,024 B disagrees", "512 B")


def test_a_tensor_the_index_puts_in_a_shard_must_be_there(tmp_path):
    _four_shards(tmp_path, present=[1, 2, 3, 4])
    _index(tmp_path, {**{f"t{i}": SHARDS[i - 1] for i in range(1, 5)}, "t5": SHARDS[0]}, total_size=512)
    _untrusted(tmp_path, SHARDS[0], "lacks 1 tensor", "t5")


def test_a_shard_outside_the_folder_is_not_read(tmp_path):
    inside = tmp_path / "model"
    inside.mkdir()
    _write_safetensors(tmp_path / "elsewhere.safetensors", {"t": ("BF16", [8, 8], 128)})
    _index(inside, {"t": "../elsewhere.safetensors"}, total_size=128)
    _untrusted(inside, "outside the model folder")
    (inside / "model.safetensors.index.json").unlink()
    (inside / "model.safetensors").symlink_to(tmp_path / "elsewhere.safetensors")  # a symlink out
    _untrusted(inside, "outside the model folder")


def test_a_hub_cache_snapshot_reads_its_blobs(tmp_path):
    # huggingface_hub's cache: snapshots/<commit>/model.safetensors -> ../../blobs/<hash>
    blobs, snapshot = tmp_path / "blobs", tmp_path / "snapshots" / "abc123"
    blobs.mkdir()
    snapshot.mkdir(parents=True)
    _write_safetensors(blobs / "f00d", {"t": ("BF16", [8, 8], 128)})
    (snapshot / "model.safetensors").symlink_to("../../blobs/f00d")
    assert folder_weights(snapshot)["weights_bytes"] == 8 * 8 * 2 == 128


def _raw_header(path: Path, header: dict | str, payload: int) -> None:
    """A file whose header is ``header`` verbatim (a dict as JSON) followed by ``payload`` zero bytes."""
    raw = (header if isinstance(header, str) else json.dumps(header)).encode()
    path.write_bytes(struct.pack("<Q", len(raw)) + raw + b"\0" * payload)


def test_a_negative_shape_is_untrusted(tmp_path):
    # before: -64 parameters, "exact"
    _raw_header(tmp_path / "model.safetensors", {"t": {"dtype": "BF16", "shape": [-8, 8], "data_offsets": [0, 128]}}, 128)
    _untrusted(tmp_path, "impossible shape")


def test_offsets_past_the_end_are_untrusted(tmp_path):
    # before: 10^15 B, "exact", from a 136-byte file
    _raw_header(tmp_path / "model.safetensors",
                {"t": {"dtype": "BF16", "shape": [8, 8], "data_offsets": [0, 10**15]}}, 128)
    _untrusted(tmp_path, "data_offsets", "outside the file's 128-byte payload")


def test_overlapping_spans_are_untrusted(tmp_path):
    # Two tensors claiming the same 128 B would count them twice.
    _raw_header(tmp_path / "model.safetensors",
                {"a": {"dtype": "BF16", "shape": [8, 8], "data_offsets": [0, 128]},
                 "b": {"dtype": "BF16", "shape": [8, 8], "data_offsets": [0, 128]}}, 256)
    _untrusted(tmp_path, "overlap")


def test_a_shape_of_a_4300_digit_product_is_untrusted(tmp_path):
    # 239 dimensions of 10^18: 10^4302 elements (before: that count, "exact", and a ValueError when printed)
    _raw_header(tmp_path / "model.safetensors",
                {"t": {"dtype": "BF16", "shape": [10**18] * 239, "data_offsets": [0, 128]}}, 128)
    _untrusted(tmp_path, "shape does not fit its 128 bytes")


@pytest.mark.parametrize("name", ["model.safetensors", "model.safetensors.index.json"])
def test_json_5000_deep_is_untrusted_without_a_traceback(tmp_path, name):
    deep = "[" * 5000 + "]" * 5000
    if name == "model.safetensors":
        _raw_header(tmp_path / name, '{"t": {"dtype": "BF16", "shape": ' + deep + ', "data_offsets": [0, 0]}}', 0)
    else:
        (tmp_path / name).write_text('{"weight_map": ' + deep + '}')
    _untrusted(tmp_path, "nested deeper than 8 levels")


def test_headers_and_indexes_over_their_caps_are_untrusted(tmp_path):
    (tmp_path / "model.safetensors").write_bytes(struct.pack("<Q", MAX_HEADER_BYTES + 1) + b"{}")
    _untrusted(tmp_path, "is not a safetensors header")
    (tmp_path / "model.safetensors").unlink()
    with open(tmp_path / "model.safetensors.index.json", "wb") as handle:
        handle.truncate(MAX_INDEX_BYTES + 1)  # sparse: only the cap plus one byte is read
    _untrusted(tmp_path, "over 50 MiB")


def test_a_stray_safetensors_file_alone_is_not_read(tmp_path):
    _write_safetensors(tmp_path / "consolidated.safetensors", {"t": ("BF16", [8, 8], 128)})
    _untrusted(tmp_path, "consolidated.safetensors is neither model.safetensors nor named by")


# -- issue 30: a tied head stored in the files is not loaded -------------------------------------------------

TIED_LLAMA = FIXTURES / "meta-llama__Llama-3.2-3B-Instruct" / "config.json"  # tie_word_embeddings true
EMBED = 128256 * 3072 * 2  # one 128,256 × 3,072 BF16 matrix: 788,004,864 B


def _embed_and_head(folder: Path, config: Path) -> None:
    shutil.copy(config, folder / "config.json")
    _write_safetensors(folder / "model.safetensors", {"model.embed_tokens.weight": ("BF16", [128256, 3072], EMBED),
                                                      "lm_head.weight": ("BF16", [128256, 3072], EMBED)},
                       payload=False)
    _grow(folder / "model.safetensors", 2 * EMBED)


def test_the_headers_name_the_head_apart(tmp_path):
    _embed_and_head(tmp_path, TIED_LLAMA)
    got = folder_weights(tmp_path)
    assert got["weights_bytes"] == 2 * EMBED  # the files, both matrices
    assert got["lm_head"] == {"elements": 128256 * 3072, "bytes": EMBED}


def test_a_tied_head_stored_again_is_counted_once(tmp_path):
    # vLLM's LlamaForCausalLM ties lm_head to embed_tokens and its load_weights skips "lm_head." when
    # tie_word_embeddings is set: one copy held, 788,004,864 B, where the files hold two
    _embed_and_head(tmp_path, TIED_LLAMA)
    weights = hfkv.inspect(str(tmp_path)).to_dict()["weights"]
    assert weights["source"] == "headers" and weights["weights_bytes"] == EMBED == 788_004_864
    assert "tied to the embeddings" in weights["note"] and "lm_head" not in weights


def test_an_untied_head_is_counted(tmp_path):
    _embed_and_head(tmp_path, LLAMA)  # Llama-3.1-8B's config: tie_word_embeddings false
    assert hfkv.inspect(str(tmp_path)).to_dict()["weights"]["weights_bytes"] == 2 * EMBED
