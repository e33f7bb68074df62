"""Visual priors for SAP (paper B): per-token scores from the batch, and per-sample priors.

Visual tokens are the positions of the model's image/video placeholder ids in ``input_ids``;
features are scattered over them in order, so the n-th image token of the batch (row-major)
carries the n-th visual feature. A per-token score vector in that order is all a prior needs.

Families:

- ``uniform``, ``gaussian`` (softmax of N(0, 1) draws), ``dirichlet`` (Dirichlet(1), i.e.
  uniform on the simplex — paper B's code): every family. Seeded per sample from
  (seed, CRC32 of the sample's unpadded ids), so batching does not change them.
Which families a pixel prior supports is declared by each family unit's ``sap_priors``
(:mod:`harness.models.unit`); today:

- ``complexity`` (per-patch grey-level gradient magnitude + variance, softmaxed over the
  sample's visual tokens): ``llava`` (CLIP grid, ``default`` strategy: one token per patch),
  ``paligemma`` (one token per patch), ``gemma3`` (one token per pooled cell of 4×4 patches),
  ``mistral3`` (one token per 28-px cell of each image's own unpadded part)
  and ``qwen2_vl``/``qwen2_5_vl``/``qwen3_vl``/``glm4v`` (one token per merged cell, images
  and videos; GLM-4.1V flattens its patches as Qwen does). Computed on the
  processor-normalised pixels averaged over channels (and time).
- ``vision`` (last ViT layer attention, mean over heads and queries, CLS dropped, softmaxed):
  ``llava`` only — its patch grid is the decoder's token grid, so pooling is the identity.

Other families (LLaVA-NeXT / OneVision anyres layouts, InternVL pixel shuffle) raise
:class:`~harness.api.intervention.InterventionError` for the pixel-based priors.
"""

from __future__ import annotations

import math
from collections.abc import Iterator, Mapping
from typing import TYPE_CHECKING, Any

from harness.api.intervention import InterventionError

if TYPE_CHECKING:
    import torch

__all__ = [
    "PIXEL_PRIOR_FAMILIES",
    "visual_token_ids",
    "check_support",
    "vision_attention_module",
    "vision_tower_module",
    "complexity_scores",
    "vision_scores",
    "patch_scores",
    "sample_priors",
]


class _PixelPriorFamilies(Mapping):
    """Pixel prior → the families whose unit lists it in ``sap_priors`` (read at lookup)."""

    _PRIORS = ("complexity", "vision")

    def __getitem__(self, prior: str) -> tuple[str, ...]:
        if prior not in self._PRIORS:
            raise KeyError(prior)
        from harness.models.unit import unit_names

        return unit_names(sap_prior=prior)

    def __iter__(self) -> Iterator[str]:
        return iter(self._PRIORS)

    def __len__(self) -> int:
        return len(self._PRIORS)


PIXEL_PRIOR_FAMILIES: Mapping[str, tuple[str, ...]] = _PixelPriorFamilies()
"""``{"complexity": families, "vision": families}``, derived from the family units."""


def visual_token_ids(model: Any) -> dict[str, int]:
    """``{"image": id, "video": id}`` from the model config (kinds the model lacks omitted)."""
    cfg = model.config
    out = {}
    for kind in ("image", "video"):
        for attr in (f"{kind}_token_id", f"{kind}_token_index"):
            value = getattr(cfg, attr, None)
            if isinstance(value, int):
                out[kind] = value
                break
    if not out:
        raise InterventionError(f"sap: {type(model).__name__} has no image/video token id")
    return out


def check_support(prior: str, model: Any) -> None:
    """Raise :class:`InterventionError` if ``prior`` cannot be built for ``model``."""
    visual_token_ids(model)
    if prior not in PIXEL_PRIOR_FAMILIES:
        return
    from harness.models.unit import unit_for_model

    kind = unit_for_model(model) or getattr(model.config, "model_type", "?")
    families = PIXEL_PRIOR_FAMILIES[prior]
    if kind not in families:
        raise InterventionError(
            f"sap: prior={prior!r} supports model types {list(families)}, not {kind!r}; "
            "use prior='uniform', 'gaussian' or 'dirichlet' there"
        )
    if kind == "llava" and model.config.vision_feature_select_strategy != "default":
        raise InterventionError(
            "sap: pixel priors on llava need vision_feature_select_strategy "
            "'default' (one token per patch)"
        )


def vision_attention_module(model: Any) -> Any:
    """The last vision-encoder layer's attention module (LLaVA's CLIP tower)."""
    tower = model.model.vision_tower
    encoder = getattr(tower, "encoder", None) or tower.vision_model.encoder
    return encoder.layers[-1].self_attn


def vision_scores(attn: Any, hidden: torch.Tensor) -> torch.Tensor:
    """Mean (heads, queries) attention received by each patch in the last ViT layer.

    Args:
        attn: The layer's attention module (``q_proj``, ``k_proj``, ``num_heads``, ``scale``).
        hidden: (N_images, 1 + P, D) input of that attention (after its layer norm).

    Returns:
        (N_images · P,) scores, CLS dropped, images then patches row-major.
    """
    import torch

    with torch.no_grad():
        n, t, _ = hidden.shape
        q = attn.q_proj(hidden).view(n, t, attn.num_heads, -1).transpose(1, 2).float()
        k = attn.k_proj(hidden).view(n, t, attn.num_heads, -1).transpose(1, 2).float()
        probs = torch.softmax((q @ k.transpose(-1, -2)) * attn.scale, dim=-1)
        return probs.mean(dim=(1, 2))[:, 1:].reshape(-1)


def patch_scores(grey: torch.Tensor) -> torch.Tensor:
    """Grey-level complexity of (n, h, w) patches: mean gradient magnitude + variance."""
    import torch

    grey = grey.float()
    dx = grey[:, :-1, 1:] - grey[:, :-1, :-1]
    dy = grey[:, 1:, :-1] - grey[:, :-1, :-1]
    grad = torch.sqrt(dx**2 + dy**2).mean(dim=(1, 2))
    return grad + grey.var(dim=(1, 2), unbiased=False)


def vision_tower_module(model: Any) -> Any:
    """The vision encoder module (``vision_tower`` for LLaVA, ``visual`` for Qwen)."""
    inner = getattr(model, "model", model)
    for name in ("vision_tower", "visual"):
        module = getattr(inner, name, None)
        if module is not None:
            return module
    raise InterventionError(f"sap: cannot find the vision encoder of {type(model).__name__}")


def complexity_scores(model: Any, pixels: torch.Tensor, image_sizes: Any = None) -> torch.Tensor:
    """(n_tokens,) complexity scores, in feature order, of one vision-encoder call's pixels.

    Args:
        model: The HF model (its ``model_type`` picks the pixel layout).
        pixels: LLaVA: (N, 3, H, W) images. Qwen: (rows, C·T·p·p) flattened patches, every
            ``merge²`` consecutive rows forming one merged token (images or videos).
        image_sizes: Mistral3: each padded image's own (h, w); its tokens are the
            ``patch · spatial_merge_size`` cells of that part, row-major.
    """
    family = model.config.model_type
    vcfg = model.config.vision_config
    if family == "mistral3":
        import torch

        c = vcfg.patch_size * model.config.spatial_merge_size
        grey = pixels.float().mean(dim=1)
        out = []
        for index, (h, w) in enumerate(image_sizes.tolist()):
            own = grey[index, : h // c * c, : w // c * c]
            cells = own.reshape(h // c, c, w // c, c).permute(0, 2, 1, 3).reshape(-1, c, c)
            out.append(patch_scores(cells))
        return torch.cat(out)
    if family in ("llava", "paligemma", "gemma3"):
        if pixels.dim() != 4:
            raise InterventionError(f"sap: {family} complexity prior needs (N, 3, H, W) images")
        n, _, h, w = pixels.shape
        p = vcfg.patch_size
        pooled = getattr(model.config, "mm_tokens_per_image", None)
        if pooled:  # Gemma 3: one token per pooled cell, mm_tokens_per_image on the canvas
            p = h // math.isqrt(int(pooled))
        grey = pixels.float().mean(dim=1)[:, : h // p * p, : w // p * p]
        cells = grey.reshape(n, h // p, p, w // p, p).permute(0, 1, 3, 2, 4).reshape(-1, p, p)
        return patch_scores(cells)
    m, p, t = vcfg.spatial_merge_size, vcfg.patch_size, vcfg.temporal_patch_size
    rows = pixels.float().reshape(-1, m, m, pixels.shape[-1] // (t * p * p), t, p, p)
    grey = rows.mean(dim=(3, 4))  # [token, m, m, p, p]
    cells = grey.permute(0, 1, 3, 2, 4).reshape(-1, m * p, m * p)
    return patch_scores(cells)


def _place(
    ids: torch.Tensor, token_id: int, scores: torch.Tensor, out: torch.Tensor, kind: str
) -> None:
    mask = ids == token_id
    if int(mask.sum()) != scores.numel():
        raise InterventionError(
            f"sap: {int(mask.sum())} {kind} tokens in the batch but {scores.numel()} "
            "prior scores (unsupported token layout for this prior)"
        )
    out[mask] = scores.to(out.device, out.dtype)


def sample_priors(
    prior: str,
    ids: torch.Tensor,
    token_ids: dict[str, int],
    row_keys: list[int],
    seed: int,
    scores: dict[str, torch.Tensor] | None = None,
) -> tuple[torch.Tensor, torch.Tensor, torch.Tensor] | None:
    """Per-sample priors over the visual tokens of a batch.

    Args:
        prior: ``uniform``, ``gaussian``, ``dirichlet``, ``complexity`` or ``vision``.
        ids: (B, S) ``input_ids`` of the prefill.
        token_ids: Visual token ids by kind.
        row_keys: Per-sample content keys (seeds for the noise priors).
        seed: Base seed.
        scores: For score-based priors: kind → per-token scores in feature order.

    Returns:
        ``(keys (B, K) long, prior (B, K) float32, valid (B, K) bool)`` or None when the batch
        has no visual token. Each row's valid entries sum to 1.
    """
    import numpy as np
    import torch

    visual = torch.zeros_like(ids, dtype=torch.bool)
    for token in token_ids.values():
        visual |= ids == token
    counts = visual.sum(dim=1)
    width = int(counts.max()) if ids.numel() else 0
    if width == 0:
        return None
    dense = torch.zeros(ids.shape, dtype=torch.float32, device=ids.device)
    if prior in ("complexity", "vision"):
        missing = [k for k in token_ids if ids.eq(token_ids[k]).any() and k not in (scores or {})]
        if missing:
            raise InterventionError(f"sap: prior={prior!r} has no scores for {missing} tokens")
        for kind, values in (scores or {}).items():
            _place(ids, token_ids[kind], values, dense, kind)
    batch = ids.shape[0]
    keys = torch.zeros(batch, width, dtype=torch.long, device=ids.device)
    probs = torch.zeros(batch, width, dtype=torch.float32, device=ids.device)
    valid = torch.arange(width, device=ids.device)[None, :] < counts[:, None]
    for b in range(batch):
        pos = visual[b].nonzero()[:, 0]
        n = pos.numel()
        if n == 0:
            continue
        keys[b, :n] = pos
        if prior in ("complexity", "vision"):
            row = torch.softmax(dense[b, pos], dim=0)
        elif prior == "uniform":
            row = torch.full((n,), 1.0 / n)
        else:
            rng = np.random.default_rng([int(seed), int(row_keys[b]) if b < len(row_keys) else 0])
            if prior == "gaussian":
                row = torch.softmax(torch.from_numpy(rng.standard_normal(n)).float(), dim=0)
            else:
                row = torch.from_numpy(rng.dirichlet(np.ones(n))).float()
        probs[b, :n] = row.to(probs.device, torch.float32)
    return keys, probs, valid
