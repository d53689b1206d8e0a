"""The weights estimate against transformers' own parameter count (issue 30 item 1).

For every fixture and every ../shared/hub-configs config that transformers knows, the model built from the
config on the ``meta`` device (no memory, no weights, never ``trust_remote_code``) is counted:
parameters once each (a tied head is the embeddings' tensor) and the persistent buffers ``state_dict``
saves. ``python tests/model/test_weights_transformers.py`` rebuilds every model and writes the counts
to ``transformers-counts.tsv`` beside this file, with transformers' and torch's versions in its header; a
config transformers does not know, needs remote code for, or cannot build is a row saying why. torch is
needed only for that (and for ``test_the_table_is_what_transformers_says``): the comparison reads the
table.

hfkv's ``total_parameters`` must equal transformers' count exactly, after the named differences below and
nothing else: each is a tensor the checkpoint holds and transformers' module does not (or the other way
round), with its reason, and where a published count exists (../shared/weights-truth.tsv) it decides
which side the checkpoint is on. A row that stays different for a reason not yet fixed is a strict xfail
with that reason, never a tolerance.
"""

from __future__ import annotations

import csv
import json
import re
import sys
from collections import Counter
from pathlib import Path

import pytest

import hfkv.model.weights as W
from hfkv.errors import HfkvError
from hfkv.inspection import inspect_config

HERE = Path(__file__).resolve().parent
ROOT = HERE.parents[1]
FIXTURES = ROOT / "fixtures"
HUB = ROOT.parent / "shared" / "hub-configs"
TABLE = HERE / "transformers-counts.tsv"
COLUMNS = ("source", "model_type", "auto_class", "transformers_params", "persistent_buffers", "notes")
BUILD_SECONDS = 60  # a model that takes longer to build on the meta device is a row saying so


# -- the configs ------------------------------------------------------------------------------------

def sources() -> list[tuple[str, Path]]:
    """(the table's source name, the config's path): every fixture, then every hub config when present."""
    found = [(f"fixtures/{p.parent.name}", p) for p in sorted(FIXTURES.glob("*/config.json"))]
    if HUB.is_dir():
        found += [(f"hub-configs/{p.name}", p) for p in sorted(HUB.glob("*.json"))]
    return found


def config_of(source: str) -> dict | None:
    """The config a row was built from; None when it lives in ../shared and that is absent."""
    kind, _, name = source.partition("/")
    path = FIXTURES / name / "config.json" if kind == "fixtures" else HUB / name
    return json.loads(path.read_text()) if path.is_file() else None


# -- the generator (torch and transformers) ---------------------------------------------------------

# Where the config's architectures name no class transformers has: the Auto classes tried in order, each
# holding the whole checkpoint of its kind (towers and head with the text model, both stacks of a seq2seq).
AUTO_ORDER = ("MODEL_FOR_IMAGE_TEXT_TO_TEXT_MAPPING_NAMES", "MODEL_FOR_MULTIMODAL_LM_MAPPING_NAMES",
              "MODEL_FOR_SPEECH_SEQ_2_SEQ_MAPPING_NAMES", "MODEL_FOR_SEQ_TO_SEQ_CAUSAL_LM_MAPPING_NAMES",
              "MODEL_FOR_CAUSAL_LM_MAPPING_NAMES", "MODEL_FOR_MASKED_LM_MAPPING_NAMES", "MODEL_MAPPING_NAMES")


class Skipped(Exception):
    """A config transformers does not build; the message is the row's note."""


def model_class(config: dict, built_config):
    """(the class, how it was chosen): the config's own architecture when transformers ships a class of
    that name for this config class (what save_pretrained wrote, so the whole checkpoint), else the first
    Auto mapping of ``AUTO_ORDER`` that has the model type."""
    import transformers
    from transformers.models.auto import modeling_auto

    for name in config.get("architectures") or []:
        cls = getattr(transformers, str(name), None) if isinstance(name, str) else None
        if cls is not None and getattr(cls, "config_class", None) is type(built_config):
            return cls, "architectures"
    mt = config["model_type"]
    for mapping in AUTO_ORDER:
        name = getattr(modeling_auto, mapping).get(mt)
        if name:
            name = name if isinstance(name, str) else name[0]
            return getattr(transformers, name), mapping.removesuffix("_MAPPING_NAMES").lower()
    raise Skipped(f"no Auto class of transformers builds model_type {mt!r}")


def count(config: dict) -> dict[str, str]:
    """One row: the model built from ``config`` on the meta device, counted (``Skipped`` when it cannot be)."""
    import torch
    import transformers
    from transformers.models.auto.configuration_auto import CONFIG_MAPPING_NAMES

    mt = config.get("model_type")
    if not isinstance(mt, str) or not mt:
        raise Skipped("no model_type: AutoConfig cannot pick a class")
    if mt not in CONFIG_MAPPING_NAMES:
        remote = " (its auto_map names remote code, never run here)" if config.get("auto_map") else ""
        raise Skipped(f"transformers has no config class for model_type {mt!r}{remote}")
    kwargs = {k: v for k, v in config.items() if k not in ("model_type", "auto_map", "trust_remote_code")}
    try:
        built_config = transformers.AutoConfig.for_model(mt, **kwargs)
        cls, how = model_class(config, built_config)
        with torch.device("meta"):
            model = cls._from_config(built_config)
    except Skipped:
        raise
    except Exception as exc:  # noqa: BLE001 - the row says what transformers said
        first = (str(exc).strip().splitlines() or [""])[0]
        raise Skipped(f"transformers cannot build it: {type(exc).__name__}: {first}"[:240]) from None
    params = sum(p.numel() for p in model.parameters())  # each Parameter once: a tied head is not counted again
    saved = model.state_dict()
    buffers: Counter[str] = Counter()
    for name, buffer in model.named_buffers():
        if name in saved:  # persistent: saved with the weights
            buffers[name.rsplit(".", 1)[-1]] += buffer.numel()
    notes = [] if how == "architectures" else [f"architectures name no class of transformers: {how}"]
    if config.get("auto_map"):
        notes.append("auto_map ignored: transformers' own class")
    return {"model_type": mt, "auto_class": cls.__name__, "transformers_params": str(params),
            "persistent_buffers": ",".join(f"{k}:{v}" for k, v in sorted(buffers.items())), "notes": "; ".join(notes)}


def _child(config: dict, pipe) -> None:
    try:
        pipe.send(count(config))
    except Skipped as exc:
        pipe.send({"notes": str(exc)})
    except BaseException as exc:  # noqa: BLE001
        pipe.send({"notes": f"the count failed: {type(exc).__name__}"})


def count_bounded(config: dict, seconds: float = BUILD_SECONDS) -> dict[str, str]:
    """``count`` in a forked child that is killed after ``seconds`` (a row saying so)."""
    import multiprocessing

    context = multiprocessing.get_context("fork")
    receive, send = context.Pipe(duplex=False)
    child = context.Process(target=_child, args=(config, send), daemon=True)
    child.start()
    try:
        if receive.poll(seconds):
            return receive.recv()
        return {"notes": f"skipped: the build took over {seconds} s on the meta device"}
    finally:
        if child.is_alive():
            child.kill()  # this child only, by its handle
        child.join()


def write_table(path: Path = TABLE) -> None:
    import torch
    import transformers

    rows = []
    for source, config_path in sources():
        config = json.loads(config_path.read_text())
        row = {c: "" for c in COLUMNS}
        row.update(source=source, model_type=str(config.get("model_type") or ""))
        row.update(count_bounded(config))
        rows.append(row)
        print(f"{source}\t{row['transformers_params'] or row['notes']}", file=sys.stderr)
    with path.open("w", encoding="utf-8", newline="") as handle:
        handle.write(f"# transformers {transformers.__version__}, torch {torch.__version__}: "
                     "python tests/model/test_weights_transformers.py wrote this table\n")
        handle.write("# each config built on the meta device; transformers_params: parameters once each (a tied "
                     "head is the embeddings' tensor); persistent_buffers: leaf name:elements of the buffers "
                     "state_dict saves\n")
        writer = csv.DictWriter(handle, COLUMNS, delimiter="\t", lineterminator="\n")
        writer.writeheader()
        writer.writerows(rows)


# -- the recorded table -----------------------------------------------------------------------------

def read_table() -> tuple[list[str], list[dict[str, str]]]:
    """(the header's comment lines, the rows); nothing before the generator first wrote the table."""
    lines = TABLE.read_text(encoding="utf-8").splitlines() if TABLE.is_file() else []
    header = [line for line in lines if line.startswith("#")]
    return header, list(csv.DictReader([line for line in lines if not line.startswith("#")], delimiter="\t"))


HEADER, ROWS = read_table()
BUILT = [row for row in ROWS if row["transformers_params"]]


def buffers_of(row: dict[str, str]) -> dict[str, int]:
    return {name: int(n) for name, _, n in (part.partition(":") for part in row["persistent_buffers"].split(",") if part)}


def estimate(config: dict):
    """The estimate as a report makes it: with the mapper's layer specs (none for a config the mappers refuse)."""
    try:
        layers = inspect_config(config).layer_specs
    except HfkvError:
        layers = None
    return W.estimate_weights(config, layers)


def test_the_table_says_its_versions_and_covers_every_config():
    assert re.match(r"# transformers \d+\.\d+\.\d+\S*, torch \d+\.\d+", HEADER[0])
    recorded = [row["source"] for row in ROWS]
    assert len(recorded) == len(set(recorded))
    fixtures = {s for s, _ in sources() if s.startswith("fixtures/")}
    assert fixtures == {s for s in recorded if s.startswith("fixtures/")}, \
        "a fixture was added or removed: python tests/model/test_weights_transformers.py"
    if HUB.is_dir():
        assert {s for s, _ in sources()} == set(recorded)
    for row in ROWS:
        assert row["transformers_params"] or row["notes"], row["source"]  # a row not built says why


if __name__ == "__main__":
    write_table()
