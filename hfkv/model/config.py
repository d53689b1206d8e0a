"""A read-only view of one config.json with typed key readers.

The view picks the text model's sub-config (``thinker_config``, ``llm_config``, ``llm_cfg``,
``language_config``, ``text_config``, in SGLang's order; ``llm_cfg`` is VILA/NVILA's) for attention keys and keeps ``architectures`` and
``quantization_config`` from the root. Every read is recorded (``consumed``), so the registry can say
which cache-shaping keys no reader understood (``hfkv.mappings.readers.unread_keys``). When a config
omits a key a mapper needs and the model type is known to transformers, the value comes from the
transformers config class (imported lazily, only then) and the key is listed in ``defaults_used``.

Readers raise ``ConfigError`` naming the key and the problem; they never return NaN, negative or
non-integral sizes.
"""

from __future__ import annotations

import math
from typing import Any

from hfkv.errors import ConfigError

_MISSING = object()
# No real dimension, count or window comes near 2^40; larger values are corrupt, and would make
# the accounting loop or allocate without bound.
MAX_SIZE = 1 << 40
MAX_LAYERS = 100_000
TEXT_KEYS = ("thinker_config", "llm_config", "llm_cfg", "language_config", "text_config")
# Keys that count draft (MTP) layers listed after the target layers in per-layer arrays.
_MTP_COUNT_KEYS = ("num_nextn_predict_layers", "mtp_num_hidden_layers", "num_mtp_layers", "num_mtp_modules")


def _lookup(data: dict, key: str) -> Any:
    """A dotted key ('attn_config.kv_n_heads') in nested dicts, or _MISSING."""
    node: Any = data
    for part in key.split("."):
        if not isinstance(node, dict) or part not in node:
            return _MISSING
        node = node[part]
    return node


class ConfigView:
    """Typed access to a model's config dict; see the module docstring."""

    def __init__(self, root: dict, *, source: str = "config.json") -> None:
        if not isinstance(root, dict):
            raise ConfigError(None, f"config is a JSON {type(root).__name__}, not an object", source=source)
        self.source = source
        self.root = root
        self.text_key, self.text = self._select_text(root)
        self.consumed: set[str] = set()
        self.defaults_used: list[str] = []
        # What the readers found worth telling (a list cut to the layer count, aliases that disagree);
        # the registry's Mapper adds them to the layout's notes and warnings.
        self.notes: list[str] = []
        self.warnings: list[str] = []
        self._tf_defaults: dict | None = None
        self._tf_loaded = False
        # Keys whose config-class value the engines do not read on this model's path (``ignore_class_value``).
        self._class_ignored: set[str] = set()
        # How deep in mappers the view is (a wrapper's mapper calls its language model's): the registry
        # checks for unread cache keys once, when the outermost mapper returns.
        self.mapping_depth = 0

    # -- identity -------------------------------------------------------------------------------

    @staticmethod
    def _select_text(root: dict) -> tuple[str | None, dict]:
        for key in TEXT_KEYS:
            sub = root.get(key)
            if isinstance(sub, dict):
                inner = sub.get("text_config")
                if key == "thinker_config" and isinstance(inner, dict):
                    return f"{key}.text_config", inner
                return key, sub
        return None, root

    @property
    def model_type(self) -> str | None:
        """The root model_type (what the Hub and transformers call the model)."""
        value = self.root.get("model_type")
        return value if isinstance(value, str) and value else None

    @property
    def text_model_type(self) -> str | None:
        value = self.text.get("model_type")
        return value if isinstance(value, str) and value else self.model_type

    @property
    def architectures(self) -> list[str]:
        value = self.root.get("architectures")
        if isinstance(value, list):
            return [a for a in value if isinstance(a, str)]
        return []

    @property
    def defaults_loaded(self) -> bool:
        """True once transformers defaults were needed (the config is sparse: read them consistently)."""
        return bool(self.defaults_used)

    def path(self, key: str) -> str:
        """The key as written in config.json, with its sub-config prefix."""
        return f"{self.text_key}.{key}" if self.text_key else key

    # -- raw access -----------------------------------------------------------------------------

    def value(self, key: str, default: Any = None, *, root: bool = False, defaults: bool = False) -> Any:
        """The raw value of ``key`` (dotted paths allowed), or ``default``.

        ``root=True`` reads the root config instead of the text sub-config (falling back to the
        root when the key is absent from the text config). ``defaults=True`` consults the
        transformers config class when the key is absent.
        """
        self.consumed.add(key)
        scopes = (self.root,) if root else (self.text,) if self.text is self.root else (self.text, self.root)
        for scope in scopes:
            found = _lookup(scope, key)
            if found is not _MISSING and found is not None:
                return found
        if defaults:
            found = self._default(key)
            if found is not None:
                return found
        return default

    def written(self, key: str) -> bool:
        """True when ``key`` is written in the text config, even as null (the config class sees it)."""
        return _lookup(self.text, key) is not _MISSING

    @property
    def may_omit_class_keys(self) -> bool:
        """False when the config says ``save_pretrained`` wrote it (``transformers_version`` at the root)
        and the attention keys sit at its top level: ``to_diff_dict`` writes every key of the model's own
        class there (it leaves out only what equals ``PretrainedConfig``'s base defaults), so nothing of
        the class is missing and transformers need not be asked (a scan of complete configs imports it
        for none). A sub-config (``text_config``) is diffed against its own class, and a hand-written
        config records no version: both may leave the class's keys out."""
        return self.text is not self.root or "transformers_version" not in self.root

    def class_entry(self, *keys: str) -> tuple[str, Any] | None:
        """(key, value) of the first of ``keys`` the config leaves out (not ``written``: a key written
        as null is the author's choice and is never replaced) that the config class gives a value; None.

        This is what transformers, and so vLLM and SGLang, read where ``save_pretrained`` or a
        hand-written config omits a key (MistralConfig: 8 KV heads and a 4,096 window). Nothing is
        recorded: the caller says with ``record_default`` whether the value was used."""
        if not self.may_omit_class_keys:
            return None
        for key in keys:
            self.consumed.add(key)
            if not self.written(key) and key not in self._class_ignored:
                found = self._default(key, record=False)
                if found is not None:
                    return key, found
        return None

    def ignore_class_value(self, *keys: str) -> None:
        """``class_entry`` skips ``keys``: a mapper whose engines apply a rule of their own there (the
        class's value means something else on that path) says so."""
        self._class_ignored.update(keys)

    def class_int(self, *keys: str, unless: Any = _MISSING, minimum: int = 1, maximum: int = MAX_SIZE) -> int | None:
        """``class_entry``'s value as an int in [``minimum``, ``maximum``] (an out-of-range class value,
        such as a 0 meaning "derive it", counts as none). The key joins ``defaults_used`` unless the value
        equals ``unless``, the rule the caller applies without it (a legacy Llama's KV heads = its query
        heads): a default that changes nothing is not worth a note."""
        found = self.class_entry(*keys)
        if found is None:
            return None
        key, raw = found
        if isinstance(raw, bool) or not isinstance(raw, int) or not minimum <= raw <= maximum:
            return None
        if unless is _MISSING or raw != unless:
            self.record_default(key)
        return raw

    def record_default(self, key: str) -> None:
        """List ``key`` among the keys filled from transformers' defaults (once)."""
        if key not in self.defaults_used:
            self.defaults_used.append(key)

    def present(self, key: str) -> bool:
        """True when ``key`` is in the text config with a non-null value (does not consult defaults)."""
        self.consumed.add(key)
        found = _lookup(self.text, key)
        return found is not _MISSING and found is not None

    def mark(self, *keys: str) -> None:
        """Record keys as understood without reading them (e.g. keys that do not shape the cache)."""
        self.consumed.update(keys)

    # -- typed readers --------------------------------------------------------------------------

    def integer(
        self, *keys: str, default: Any = _MISSING, minimum: int = 0, maximum: int = MAX_SIZE,
        defaults: bool = False,
    ) -> int:
        """The first of ``keys`` present, as an int in [``minimum``, ``maximum``]; ``default`` (or an error) if none."""
        for key in keys:
            raw = self.value(key)
            if raw is not None:
                return self._as_int(key, raw, minimum, maximum)
        if defaults:
            for key in keys:
                raw = self._default(key)
                if raw is not None:
                    return self._as_int(key, raw, minimum, maximum)
        if default is _MISSING:
            raise ConfigError(self.path(keys[0]), "missing (needed to size the cache)")
        return default

    def optional_int(self, *keys: str, minimum: int = 0, maximum: int = MAX_SIZE, defaults: bool = False) -> int | None:
        return self.integer(*keys, default=None, minimum=minimum, maximum=maximum, defaults=defaults)

    def boolean(self, key: str, default: bool = False) -> bool:
        raw = self.value(key)
        if raw is None:
            return default
        if isinstance(raw, bool):
            return raw
        if isinstance(raw, (int, float)) and raw in (0, 1):
            return bool(raw)
        if isinstance(raw, str) and raw.lower() in ("true", "false"):
            return raw.lower() == "true"
        raise ConfigError(self.path(key), f"expected true or false, got {raw!r}")

    def string(self, key: str, default: str | None = None) -> str | None:
        raw = self.value(key)
        if raw is None:
            return default
        if not isinstance(raw, str):
            raise ConfigError(self.path(key), f"expected a string, got {type(raw).__name__}")
        return raw

    def int_list(self, key: str, *, length: int | None = None, defaults: bool = False) -> list[int] | None:
        """A list of ints (None when absent). ``length``: cut longer lists (MTP entries), reject shorter."""
        raw = self.value(key, defaults=defaults)
        if raw is None:
            return None
        if not isinstance(raw, list):
            raise ConfigError(self.path(key), f"expected a list, got {type(raw).__name__}")
        values = [self._as_int(f"{key}[{i}]", v, 0) for i, v in enumerate(raw[: MAX_LAYERS + 1])]
        return self.fit_length(key, values, length)

    def str_list(self, key: str, *, length: int | None = None, defaults: bool = False) -> list[str] | None:
        raw = self.value(key, defaults=defaults)
        if raw is None:
            return None
        if not isinstance(raw, list) or not all(isinstance(v, str) for v in raw):
            raise ConfigError(self.path(key), "expected a list of strings")
        return self.fit_length(key, list(raw), length)

    def note(self, text: str) -> None:
        """Record a note for the report (once)."""
        if text not in self.notes:
            self.notes.append(text)

    def warn(self, text: str) -> None:
        """Record a warning for the report (once)."""
        if text not in self.warnings:
            self.warnings.append(text)

    def fit_length(self, key: str, values: list, length: int | None) -> list:
        """``values`` cut to ``length``; shorter is an error, longer a note (MTP entries) or a warning."""
        if length is None:
            return values
        if len(values) < length:
            raise ConfigError(
                self.path(key), f"has {len(values)} entries but the model has {length} layers"
            )
        if len(values) > length:
            self._report_cut(key, len(values) - length, length)
        return values[:length]

    def _report_cut(self, key: str, extra: int, length: int) -> None:
        """A longer per-layer list: its tail belongs to MTP layers when the config declares some, else
        it contradicts the layer count (the first ``length`` entries are used either way)."""
        if any(self.optional_int(k) for k in _MTP_COUNT_KEYS):
            entries = "entry" if extra == 1 else "entries"
            self.note(f"{key} lists {extra} {entries} past num_hidden_layers {length} (MTP layers): left out")
        else:
            self.warn(f"{self.path(key)} has {length + extra} entries but the model has {length} layers "
                      f"(and no MTP layers): the first {length} are used")

    def _as_int(self, key: str, raw: Any, minimum: int, maximum: int = MAX_SIZE) -> int:
        if isinstance(raw, bool) or not isinstance(raw, (int, float)):
            raise ConfigError(self.path(key), f"expected an integer, got {raw!r}"[:200])
        if isinstance(raw, float):
            if not math.isfinite(raw) or raw != int(raw):
                raise ConfigError(self.path(key), f"expected an integer, got {raw!r}")
            raw = int(raw)
        if raw < minimum:
            raise ConfigError(self.path(key), f"must be at least {minimum}, got {raw}")
        if raw > maximum:
            raise ConfigError(self.path(key), f"{raw} is beyond any real model (at most {maximum})")
        return raw

    # -- transformers defaults ------------------------------------------------------------------

    def _default(self, key: str, *, record: bool = True) -> Any:
        defaults = self._load_tf_defaults()
        if not defaults:
            return None
        found = _lookup(defaults, key)
        if found is _MISSING or found is None:
            return None
        if record:
            self.record_default(key)
        return found

    def _load_tf_defaults(self) -> dict | None:
        """The transformers config class's view of this config (defaults filled), or None.

        Computed once per view, by ``hfkv.model.defaults`` (which imports transformers on first use).
        """
        if not self._tf_loaded:
            from hfkv.model import defaults as tfdefaults  # here, not at import: most configs never need transformers' defaults

            split = self.text is not self.root
            candidates = [(t, t == self.model_type and split) for t in (self.text_model_type, self.model_type) if t]
            self._tf_defaults = tfdefaults.lookup(candidates, self.text)  # may raise tfdefaults.NotReady
            self._tf_loaded = True
        return self._tf_defaults
