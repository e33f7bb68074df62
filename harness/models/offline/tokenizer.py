"""An offline byte-level tokenizer with special tokens at fixed ids, and chat templates."""

from __future__ import annotations

from typing import Any

__all__ = [
    "CHATML_TEMPLATE",
    "RESERVED",
    "byte_tokenizer",
    "llava_tokenizer",
    "special_token_ids",
]

RESERVED = 16
"""Number of ids at the top of the vocabulary reserved for special tokens."""

CHATML_TEMPLATE = (
    "{% for message in messages %}{{ '<|im_start|>' + message['role'] + '\n' }}"
    "{% for c in message['content'] if c['type'] == 'image' %}{{ IMAGE }}{% endfor %}"
    "{% for c in message['content'] if c['type'] == 'video' %}{{ '<video>\n' }}{% endfor %}"
    "{% for c in message['content'] if c['type'] == 'text' %}{{ c['text'] }}{% endfor %}"
    "{{ '<|im_end|>\n' }}{% endfor %}"
    "{% if add_generation_prompt %}{{ '<|im_start|>assistant\n' }}{% endif %}"
)
"""ChatML with images first, then videos, then text; replace ``{{ IMAGE }}`` with the
family's image placeholder (e.g. ``{{ '<image>\\n' }}``)."""


def special_token_ids(family: str | None, vocab_size: int = 512) -> dict[str, int]:
    """Special-token ids of an offline tokenizer (they sit in the top :data:`RESERVED` ids).

    The layout is the same for every family; each family's recipe names its own tokens for
    these ids (``<|image_pad|>``, ``<image>``, ``<IMG_CONTEXT>``, ...).

    Args:
        family: A registered model family (checked, with did-you-mean), or None.
        vocab_size: The model's vocabulary size (512: the tiny test models').

    Returns:
        ``{"image", "video", "vision_start", "vision_end", "eos", "pad", "bos"}`` → id. For
        InternVL ``vision_start``/``vision_end`` stand for ``<img>``/``</img>``; families
        without a video token still get an id (unused by the model).
    """
    if family is not None:
        from harness.api.registry import MODEL_FAMILIES

        MODEL_FAMILIES.get(family)  # UnknownNameError with did-you-mean
    if vocab_size < 2 * RESERVED:
        raise ValueError(f"vocab_size must be ≥ {2 * RESERVED}, got {vocab_size}")
    top = vocab_size - 1
    return {
        "image": top,
        "video": top - 1,
        "vision_start": top - 2,
        "vision_end": top - 3,
        "eos": top - 4,
        "pad": top - 5,
        "bos": top - 6,
    }


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
        vocab_size: Total vocabulary size (the model's).
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


def llava_tokenizer(family: str, vocab_size: int, chatml: bool) -> Any:
    """The LLaVA family's byte tokenizer: ``<image>``, ``<video>`` at :func:`special_token_ids`.

    Args:
        family: ``llava``, ``llava_next`` or ``llava_onevision``.
        vocab_size: The model's vocabulary size.
        chatml: ChatML specials (``<|im_start|>``, eos ``<|im_end|>``, no bos; OneVision) or
            Vicuna/Mistral ones (bos ``<s>``, eos ``</s>``).
    """
    ids = special_token_ids(family, vocab_size)
    eos = "<|im_end|>" if chatml else "</s>"
    specials = {
        "<image>": ids["image"],
        "<video>": ids["video"],
        eos: ids["eos"],
        "<pad>": ids["pad"],
        "<s>": ids["bos"],
    }
    if chatml:
        specials["<|im_start|>"] = ids["bos"] - 1
    return byte_tokenizer(
        vocab_size,
        specials,
        eos=eos,
        pad="<pad>",
        bos=None if chatml else "<s>",
        image_token="<image>",
        video_token="<video>",
    )
