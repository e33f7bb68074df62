"""Pieces both tiny processor modules use: the offline byte tokenizer and PIL helpers.

:mod:`harness.testing.tiny_processors` (LLaVA family, InternVL) and
:mod:`harness.testing.tiny_processors_qwen` (Qwen family) build the real HF processor classes
around these.
"""

from __future__ import annotations

from typing import Any

__all__ = ["as_pil", "byte_tokenizer", "clip_stats", "video_processor_base"]


def byte_tokenizer(
    vocab_size: int,
    specials: dict[str, int],
    *,
    eos: str,
    pad: str,
    bos: str | None = None,
    **named: str,
) -> Any:
    """An offline byte-level BPE tokenizer (no merges) with special tokens at fixed ids.

    Every UTF-8 byte is one token, so any text round-trips exactly through encode/decode and
    offsets are exact; unused ids are filled with ``<unusedN>`` tokens.

    Args:
        vocab_size: Total vocabulary size (the tiny model's).
        specials: Special token text → id (ids ≥ 256, distinct).
        eos: The end-of-sequence token text (one of ``specials``).
        pad: The padding token text.
        bos: The beginning-of-sequence token text, if the family uses one.
        **named: Extra named special tokens (e.g. ``image_token="<image>"``), set as
            ``extra_special_tokens`` so processors find ``tokenizer.image_token``.

    Returns:
        A ``PreTrainedTokenizerFast`` (left padding).
    """
    from tokenizers import AddedToken, Tokenizer, decoders, models, pre_tokenizers
    from transformers import PreTrainedTokenizerFast

    alphabet = sorted(pre_tokenizers.ByteLevel.alphabet())
    vocab = {ch: i for i, ch in enumerate(alphabet)}
    taken = set(specials.values())
    if min(taken) < len(vocab) or max(taken) >= vocab_size or len(taken) != len(specials):
        raise ValueError(f"special ids must be distinct and in [{len(vocab)}, {vocab_size})")
    vocab.update({f"<unused{i}>": i for i in range(len(vocab), vocab_size) if i not in taken})
    vocab.update(specials)
    tok = Tokenizer(models.BPE(vocab=vocab, merges=[], unk_token=None))
    tok.pre_tokenizer = pre_tokenizers.ByteLevel(add_prefix_space=False, use_regex=True)
    tok.decoder = decoders.ByteLevel()
    tok.add_special_tokens([AddedToken(t, special=True, normalized=False) for t in specials])
    kwargs = {"eos_token": eos, "pad_token": pad, "padding_side": "left"}
    if bos is not None:
        kwargs["bos_token"] = bos
    if named:
        kwargs["extra_special_tokens"] = dict(named)
    return PreTrainedTokenizerFast(tokenizer_object=tok, **kwargs)


def video_processor_base() -> type:
    """HF's ``VideoProcessorMixin`` (imported lazily: it pulls in transformers)."""
    from transformers.video_processing_utils import VideoProcessorMixin

    return VideoProcessorMixin


def as_pil(frame: Any) -> Any:
    """A frame as a PIL RGB image (HF's batching may have turned it into an HWC/CHW array)."""
    import numpy as np
    from PIL import Image

    if isinstance(frame, Image.Image):
        return frame.convert("RGB")
    arr = np.asarray(frame)
    if arr.ndim == 3 and arr.shape[0] in (1, 3) and arr.shape[-1] not in (1, 3):
        arr = arr.transpose(1, 2, 0)
    return Image.fromarray(arr.astype(np.uint8)).convert("RGB")


def clip_stats() -> tuple[tuple[float, ...], tuple[float, ...]]:
    """OpenAI CLIP's pixel mean and std, as tuples."""
    from transformers.image_utils import OPENAI_CLIP_MEAN, OPENAI_CLIP_STD

    return tuple(OPENAI_CLIP_MEAN), tuple(OPENAI_CLIP_STD)
