"""Encoder-decoder and encoder-only models (mappings/encoders.py): refused with one line, as the
report, the CLI (exit code 2) and the script say."""

from __future__ import annotations

import shutil
import subprocess

import pytest
from click.testing import CliRunner

import hfkv
from hfkv import UnsupportedModelError, inspect_config
from hfkv.commands.cli import main

from _helpers import FIXTURES, report_inline as report


# -- budget questions ------------------------------------------------------------------------------------


def test_unknown_encoder_decoder_is_refused():
    data = {"model_type": "brand_new_seq2seq", "is_encoder_decoder": True, "num_hidden_layers": 6,
            "num_attention_heads": 8, "hidden_size": 512}
    with pytest.raises(hfkv.UnsupportedModelError, match="encoder-decoder"):
        inspect_config(data, model="x/seq2seq")


# -- encoder-decoder and encoder-only --------------------------------------------------------------


@pytest.mark.parametrize("name, arch", [
    ("google-t5__t5-base", "T5ForConditionalGeneration"),
    ("VietAI__envit5-translation", "T5ForConditionalGeneration"),
    ("facebook__bart-large-cnn", "BartForConditionalGeneration"),
])
def test_encoder_decoder_fixtures_are_refused(name, arch):
    with pytest.raises(UnsupportedModelError) as err:
        report(name)
    text = str(err.value)
    assert text.startswith(f"{name}: unsupported: encoder-decoder ({arch}): ")
    assert "\n" not in text and err.value.exit_code == 2


@pytest.mark.parametrize("model_type", [
    "t5", "mt5", "umt5", "bart", "mbart", "marian", "pegasus", "m2m_100", "nllb-moe", "nllb_moe",
    "blenderbot", "cohere_asr", "nemotron_parse", "t5gemma",
])
def test_encoder_decoder_model_types(model_type):
    with pytest.raises(UnsupportedModelError, match=rf"encoder-decoder \(X{model_type}\): .*not with the context S"):
        report({"model_type": model_type, "architectures": [f"X{model_type}"], "d_model": 512})


@pytest.mark.parametrize("model_type, arch", [
    ("bert", "BertModel"), ("roberta", "RobertaModel"), ("xlm-roberta", "XLMRobertaModel"),
    ("deberta", "DebertaModel"), ("deberta-v2", "DebertaV2Model"), ("distilbert", "DistilBertModel"),
    ("electra", "ElectraModel"), ("modernbert", "ModernBertModel"), ("nomic_bert", "NomicBertModel"),
    ("t5", "T5EncoderModel"),  # an encoder-decoder family saved as its encoder alone
])
def test_encoder_only_models(model_type, arch):
    with pytest.raises(UnsupportedModelError) as err:
        report({"model_type": model_type, "architectures": [arch]})
    assert str(err.value) == f"inline: unsupported: encoder-only model ({arch}): no KV cache"


def test_non_autoregressive_encoder_decoder():
    with pytest.raises(UnsupportedModelError, match=r"encoder-decoder \(DetrForObjectDetection\): not an autoregressive"):
        report({"model_type": "detr", "architectures": ["DetrForObjectDetection"]})


def test_declared_encoder_decoder_helper():
    from hfkv.model.config import ConfigView
    from hfkv.mappings.encoders import declared_encoder_decoder

    err = declared_encoder_decoder(ConfigView({"model_type": "new_s2s", "is_encoder_decoder": True,
                                               "architectures": ["NewS2SForConditionalGeneration"]}))
    assert str(err).startswith("unsupported: encoder-decoder (NewS2SForConditionalGeneration): ")
    assert declared_encoder_decoder(ConfigView({"model_type": "llama"})) is None
    assert declared_encoder_decoder(ConfigView({"is_encoder_decoder": "maybe"})) is None


def test_cli_exit_code_two_and_one_line():
    runner = CliRunner()
    for name, needle in [
        ("google-t5__t5-base", "encoder-decoder (T5ForConditionalGeneration)"),
        ("google-bert__bert-base-uncased-transformers-defaults", "encoder-only model (BertForMaskedLM): no KV cache"),
    ]:
        result = runner.invoke(main, [str(FIXTURES / name)])
        assert result.exit_code == 2, result.output
        assert result.stderr.startswith("hfkv: error: ") and result.stderr.count("\n") == 1
        assert needle in result.stderr and "Traceback" not in result.stderr


@pytest.mark.skipif(shutil.which("hfkv") is None, reason="the hfkv script is not installed")
def test_script_exit_code_two():
    run = subprocess.run(["hfkv", str(FIXTURES / "facebook__bart-large-cnn")], capture_output=True, text=True,
                         timeout=120)
    assert run.returncode == 2
    assert run.stderr.count("\n") == 1 and "encoder-decoder (BartForConditionalGeneration)" in run.stderr
