"""Helpers shared by the family test files: load a fixture, build a report, read its layers."""

from __future__ import annotations

import copy
import json
from pathlib import Path

import hfkv

FIXTURES = Path(__file__).resolve().parents[1] / "fixtures"
HUB_CONFIGS = Path(__file__).resolve().parents[2] / "shared" / "hub-configs"


def load(folder: str) -> dict:
    return json.loads((FIXTURES / folder / "config.json").read_text())


def report(data: dict, **options) -> hfkv.Report:
    return hfkv.inspect_config(copy.deepcopy(data), model="test", options=hfkv.Options(**options))


def kinds(rep: hfkv.Report) -> list[str]:
    return [layer["kind"] for layer in rep.to_dict()["layers"]]


def state_of(rep: hfkv.Report, index: int) -> int:
    return rep.to_dict()["layers"][index]["state_bytes"]
