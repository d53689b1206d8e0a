"""What the weights estimate returns: the priced tensors, bytes by role, or why the config cannot be priced."""

from __future__ import annotations

import math
from dataclasses import dataclass, field
from typing import NamedTuple

# The roles a checkpoint's bytes are split by (a parallel layout divides each by its own group).
ROLES = ("embedding", "attention", "mixers", "dense_mlp", "shared_experts", "routed_experts", "mtp", "towers",
         "other")


class Tensor(NamedTuple):
    """One checkpoint tensor (or ``count`` identical ones, e.g. the experts of a layer).

    ``kind``: ``linear`` (a weight matrix ``shape=(out, in)`` that a quantisation method may quantise),
    ``embedding``, ``lm_head``, ``router``, ``norm``, ``bias``, ``conv``, ``param`` (vectors/scalars such
    as ``A_log``) or ``buffer`` (a persistent buffer saved with the weights). ``exempt`` linears stay in
    high precision under every method (the family's checkpoint keeps them so). ``dtype_bytes`` overrides
    the checkpoint dtype for tensors the family stores in another precision (fp32 router biases, int64
    tables). ``loaded`` False: in the files but not loaded by the engines (a tied head's stored copy). A
    named tuple, not a frozen dataclass: a 100,000-layer config builds 800,000 of them, and a
    frozen dataclass's constructor costs about twice as much."""

    name: str
    role: str
    kind: str
    shape: tuple[int, ...]
    count: int = 1
    exempt: bool = False
    dtype_bytes: int | None = None
    loaded: bool = True

    @property
    def numel(self) -> int:
        return math.prod(self.shape) * self.count


@dataclass(frozen=True)
class RoleWeights:
    parameters: int
    bytes: int


@dataclass(frozen=True)
class WeightsEstimate:
    """Estimated weights as loaded. ``total_parameters`` counts logical weights (a 4-bit weight is one
    parameter; scales and zero points are not parameters but are in ``weights_bytes``)."""

    total_parameters: int
    weights_bytes: int
    breakdown: dict[str, RoleWeights]
    source: str = "estimate"
    error_note: str = ""
    architecture: str = ""
    quantization: str = ""
    notes: tuple[str, ...] = ()
    tensors: tuple[Tensor, ...] = field(default=(), repr=False, compare=False)
    # the bytes the checkpoint's files hold, where the engine holds them otherwise (padded MXFP4 experts, a
    # tied head's stored copy); None when the same as ``weights_bytes``
    stored_bytes: int | None = None
    skipped_bytes: int = 0  # of ``stored_bytes``, the tensors the engines do not load (a tied head's copy, MTP)
    # of ``skipped_bytes``, the MTP layers' (loaded only as a speculative-decoding draft)
    mtp_bytes: int = 0
    band_percent: float = 1.0  # how far off the bytes may be, ± percent (what a deployment's budget carries)

    @property
    def loaded_extra(self) -> int:
        """Bytes the engine holds beyond the files' (padding less what it skips), 0 when none."""
        return 0 if self.stored_bytes is None else self.weights_bytes - self.stored_bytes

    @property
    def padding(self) -> int:
        """Bytes the engine's layout adds to the tensors it loads (MXFP4 padding), 0 when none."""
        return self.loaded_extra + self.skipped_bytes

    @property
    def stores_head(self) -> bool:
        """Whether the checkpoint, as the estimate sees it, holds a head apart from the embeddings."""
        return any(t.kind == "lm_head" and t.role == "embedding" for t in self.tensors)

    @property
    def ties_head(self) -> bool:
        """Whether the engines load no head apart from the embeddings (tied, or a model without one)."""
        return not any(t.kind == "lm_head" and t.role == "embedding" and t.loaded for t in self.tensors)

    def role(self, name: str) -> RoleWeights:
        return self.breakdown.get(name, RoleWeights(0, 0))


@dataclass(frozen=True)
class Unknown:
    """The config cannot be priced: ``reason`` says why, ``missing_keys`` which keys would be needed."""

    reason: str
    missing_keys: tuple[str, ...] = ()
    source: str = "unknown"
