"""Encoder-decoder and encoder-only models.

Whisper is accounted: its encoder always sees 30 s of audio, so the cross-attention cache of each
decoder layer holds a length the config fixes (``max_source_positions``, 1500), a per-request
constant beside the decoder's self-attention (``CrossAttention``).

The other mappers here raise ``UnsupportedModelError`` with one line naming the architecture and the
reason, so the CLI exits with code 2 instead of printing figures that would mean nothing:

- encoder-decoder (T5, BART, ...): the decoder's self-attention grows with the generated context S,
  but its cross-attention caches the encoder output, whose length is the *input's*, a second free
  variable that config.json does not fix (α·S + γ has no place for it);
- encoder-only (BERT, RoBERTa, ModernBERT, ...): bidirectional, no generation, no KV cache;
- encoder-decoder models that do not decode token by token (DETR detectors, transducers, FastSpeech2).

The model-type lists cover every transformers 5.24 config class whose default is
``is_encoder_decoder=True``, plus the encoder-only families.

A checkpoint of an encoder-decoder family saved as its encoder alone (``T5EncoderModel``, used as a
text encoder by diffusion pipelines) is encoder-only.

"""

from __future__ import annotations

from hfkv.model.config import ConfigView
from hfkv.errors import ConfigError, UnsupportedModelError
from hfkv.model.specs import Layout

from hfkv.mappings.registry import register


ENCODER_DECODER = (
    "t5", "mt5", "umt5", "longt5", "switch_transformers", "t5gemma", "t5gemma2", "bart", "mbart", "marian",
    "pegasus", "pegasus_x", "bigbird_pegasus", "led", "plbart", "mvp", "fsmt", "blenderbot", "blenderbot-small",
    "m2m_100", "nllb-moe", "nllb_moe", "prophetnet", "xlm-prophetnet", "moonshine", "speech_to_text",
    "speecht5", "seamless_m4t", "seamless_m4t_v2", "florence2", "udop", "pix2struct", "dia", "dia_decoder",
    "moonshine_streaming", "cohere_asr", "canary", "canary_decoder", "nemotron3_5_asr", "nemotron_asr_streaming",
    "nemotron_parse", "musicgen", "musicgen_melody", "pop2piano", "pp_formulanet", "pp_formulanet_text", "rag",
    "time_series_transformer", "autoformer", "informer",
    "encoder-decoder", "vision-encoder-decoder", "speech-encoder-decoder",
)


# Encoder-decoder models that do not decode token by token from a KV cache: set-prediction
# detectors (DETR family), transducers and non-autoregressive speech synthesis.
NON_AUTOREGRESSIVE = (
    "detr", "conditional_detr", "deformable_detr", "dab-detr", "rt_detr", "rt_detr_v2", "d_fine", "deimv2",
    "grounding-dino", "mm-grounding-dino", "omdet-turbo", "table-transformer", "pp_doclayout_v2",
    "pp_doclayout_v3", "pp_doclayout_v4", "parakeet_rnnt", "parakeet_tdt", "fastspeech2_conformer",
)


ENCODER_ONLY = (
    "bert", "roberta", "xlm-roberta", "xlm-roberta-xl", "camembert", "deberta", "deberta-v2", "distilbert",
    "electra", "albert", "modernbert", "nomic_bert", "eurobert", "mpnet", "megatron-bert", "roformer",
    "big_bird", "funnel", "ernie", "rembert", "ibert", "luke", "xmod", "canine", "convbert", "squeezebert",
    "mobilebert", "nystromformer", "yoso", "mra", "data2vec-text", "esm", "layoutlm", "layoutlmv2",
    "layoutlmv3", "markuplm", "lilt", "bros", "gte", "nezha", "jina_bert", "neobert",
)


# Encoder halves of encoder-decoder families, saved as stand-alone models.
_ENCODER_ARCHITECTURES = ("T5EncoderModel", "MT5EncoderModel", "UMT5EncoderModel", "T5GemmaEncoderModel")
_ENCDEC_REASON = (
    "its decoder's cross-attention caches the encoder output, which grows with the input length, "
    "not with the context S"
)


def architecture(cfg: ConfigView) -> str:
    """The name an error should show: the root ``architectures[0]``, else the model type."""
    return next(iter(cfg.architectures), None) or cfg.model_type or "unknown architecture"


def encoder_only_error(cfg: ConfigView) -> UnsupportedModelError:
    return UnsupportedModelError(f"encoder-only model ({architecture(cfg)}): no KV cache")


def encoder_decoder_error(cfg: ConfigView) -> UnsupportedModelError:
    return UnsupportedModelError(f"encoder-decoder ({architecture(cfg)}): {_ENCDEC_REASON}")


def declared_encoder_decoder(cfg: ConfigView) -> UnsupportedModelError | None:
    """The error for a config of any model type that declares ``is_encoder_decoder: true``, else None.

    For the generic mapper, so an unknown encoder-decoder model is refused instead of reported from
    keys that describe only one of its halves.
    """
    try:
        declared = cfg.boolean("is_encoder_decoder")
    except ConfigError:  # a malformed flag says nothing either way
        return None
    return encoder_decoder_error(cfg) if declared else None


@register(
    family="encoder-decoder",
    refuses=f"encoder-decoder: {_ENCDEC_REASON}",
    model_types=ENCODER_DECODER,
    architectures=(
        "T5ForConditionalGeneration", "MT5ForConditionalGeneration", "BartForConditionalGeneration",
        "MBartForConditionalGeneration", "MarianMTModel", "PegasusForConditionalGeneration",
        "M2M100ForConditionalGeneration", "CohereAsrForConditionalGeneration", "RadioMBartPrefixForCausalLM",
        "NemotronParseForConditionalGeneration",
    ),
    reads=("architectures", "is_encoder_decoder"),
    fixtures={"t5": "google-t5__t5-base", "bart": "facebook__bart-large-cnn"},
)
def encoder_decoder(cfg: ConfigView) -> Layout:
    """Always raises: encoder-decoder models are not accounted for (see the module docstring)."""
    if any(arch in _ENCODER_ARCHITECTURES for arch in cfg.architectures):
        raise encoder_only_error(cfg)
    raise encoder_decoder_error(cfg)


@register(
    family="encoder-decoder",
    refuses="encoder-decoder: not an autoregressive decoder, no KV cache",
    model_types=NON_AUTOREGRESSIVE,
    architectures=("DetrForObjectDetection", "RTDetrForObjectDetection"),
    reads=("architectures",),
)
def non_autoregressive(cfg: ConfigView) -> Layout:
    """Always raises: these models do not generate from a KV cache."""
    raise UnsupportedModelError(f"encoder-decoder ({architecture(cfg)}): not an autoregressive decoder, no KV cache")


@register(
    family="encoder-only",
    refuses="encoder-only model: no KV cache",
    model_types=ENCODER_ONLY,
    architectures=(
        "BertModel", "BertForMaskedLM", "RobertaModel", "RobertaForMaskedLM", "XLMRobertaModel",
        "DistilBertModel", "ModernBertModel", "DebertaV2Model", "BertForSequenceClassification",
        "XLMRobertaForSequenceClassification", "Contriever", "XLMRobertaForMaskedLM",
    ),
    reads=("architectures",),
    fixtures={"bert": "google-bert__bert-base-uncased-transformers-defaults"},
)
def encoder_only(cfg: ConfigView) -> Layout:
    """Always raises: an encoder-only model keeps no KV cache."""
    raise encoder_only_error(cfg)
