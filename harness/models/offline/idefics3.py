"""Tiny recipes of Idefics3 and SmolVLM (``Idefics3`` / ``SmolVLMForConditionalGeneration``).

Both resize twice (the longer side to ``size["longest_edge"]``, then each side up to a multiple
of the tile ``max_image_size["longest_edge"]``), cut row-major tiles and append the global
image; each tile is ``(tile / patch)²`` patches pixel-shuffled by ``scale_factor``.

Geometry (``"real"``: the released processors' and configs'):

- Idefics3 (``HuggingFaceM4/Idefics3-8B-Llama3``): tiles 364², longest edge 4·364 = 1456,
  SigLIP patch 14, ``scale_factor`` 2 → 13×13 = 169 tokens a tile; ``"tiny"``: 56² tiles
  (longest edge 224) → 2×2 tokens.
- SmolVLM (``HuggingFaceTB/SmolVLM2-256M-Video-Instruct``): tiles 512², longest edge
  4·512 = 2048 (transformers' ``docs/source/en/model_doc/smolvlm.md``: "the longest edge is
  4*512 pixels by default", ``max_image_size`` 512), SigLIP patch 16, ``scale_factor`` 4 →
  8×8 = 64 tokens a tile; ``"tiny"``: 128² tiles (longest edge 512) → 2×2 tokens.

A Llama text decoder; the offline byte tokenizer carries the processors' special tokens
(``<image>``, ``<fake_token_around_image>``, ``<global-img>``, ``<end_of_utterance>``, the
``<row_i_col_j>`` markers for 6×6 tiles) and the released chat template's shape
(``User:<image>…<end_of_utterance>``, a newline, ``Assistant:``). SmolVLM's processor insists
on a video processor (torchvision-only in transformers): the PIL stand-in
(:func:`~harness.models.offline.video.pil_video_processor`) fills the slot; videos are shown
as frames (``video_as="images"``).
"""

from __future__ import annotations

from typing import Any

from harness.models.offline.tokenizer import byte_tokenizer, special_token_ids

__all__ = [
    "GEOMETRY",
    "idefics3_config",
    "idefics3_processor",
    "smolvlm_config",
    "smolvlm_processor",
]

GEOMETRY = {
    ("idefics3", "real"): {"tile": 364, "patch": 14, "scale": 2},
    ("idefics3", "tiny"): {"tile": 56, "patch": 14, "scale": 2},
    ("smolvlm", "real"): {"tile": 512, "patch": 16, "scale": 4},
    ("smolvlm", "tiny"): {"tile": 128, "patch": 16, "scale": 4},
}
"""Tile side, tower patch and pixel-shuffle ``scale_factor`` per (family, geometry); the
first resize's longest edge is 4 tiles in both released processors."""

ROW_COL = 6
"""``<row_i_col_j>`` markers the processors look up (6×6, ``Idefics3Processor.__init__``)."""

TEMPLATE = (
    "{{ START }}{% for message in messages %}{{ message['role'] | capitalize }}"
    "{% if message['content'][0]['type'] == 'image' %}{{ ':' }}{% else %}{{ ': ' }}{% endif %}"
    "{% for line in message['content'] %}{% if line['type'] == 'text' %}{{ line['text'] }}"
    "{% elif line['type'] == 'image' %}{{ '<image>' }}{% endif %}{% endfor %}"
    "<end_of_utterance>\n{% endfor %}{% if add_generation_prompt %}{{ 'Assistant:' }}{% endif %}"
)
"""The released chat template's shape (Idefics3-8B-Llama3's ``chat_template.json``; SmolVLM's
``DEFAULT_CHAT_TEMPLATE`` in ``processing_smolvlm.py``): ``User:<image>text<end_of_utterance>``
turns, ``Assistant:`` to answer."""


START = {"idefics3": "<|begin_of_text|>", "smolvlm": "<|im_start|>"}
"""The token each released template opens with (Llama 3's bos; SmolVLM's ``<|im_start|>``)."""


def _geometry(family: str, geometry: str) -> dict[str, int]:
    if geometry not in ("tiny", "real"):
        raise ValueError(f"geometry must be 'tiny' or 'real', got {geometry!r}")
    return GEOMETRY[family, geometry]


def _config(family: str, text: dict[str, Any], ids: dict[str, int], geometry: str) -> Any:
    import transformers as tf

    from harness.models.tiny import small_vit

    geo = _geometry(family, geometry)
    vision = small_vit(image_size=geo["tile"], patch_size=geo["patch"])
    cls = tf.Idefics3Config if family == "idefics3" else tf.SmolVLMConfig
    return cls(
        text_config=dict(text, model_type="llama"),
        vision_config=vision,
        scale_factor=geo["scale"],
        image_token_id=ids["image"],
        pad_token_id=text["pad_token_id"],
    )


def idefics3_config(text: dict[str, Any], ids: dict[str, int], geometry: str) -> Any:
    """The tiny Idefics3 config (a Llama decoder, SigLIP /14, pixel shuffle 2)."""
    return _config("idefics3", text, ids, geometry)


def smolvlm_config(text: dict[str, Any], ids: dict[str, int], geometry: str) -> Any:
    """The tiny SmolVLM config (a Llama decoder, SigLIP /16, pixel shuffle 4)."""
    return _config("smolvlm", text, ids, geometry)


def _tokenizer(family: str, vocab_size: int) -> Any:
    ids = special_token_ids(family, vocab_size)
    bos = START[family]
    specials = {
        "<image>": ids["image"],
        "<video>": ids["video"],
        "<fake_token_around_image>": ids["vision_start"],
        "<global-img>": ids["vision_end"],
        "<end_of_utterance>": ids["eos"],
        "<pad>": ids["pad"],
        bos: ids["bos"],
    }
    rows = [f"<row_{i + 1}_col_{j + 1}>" for i in range(ROW_COL) for j in range(ROW_COL)]
    specials.update({name: 256 + k for k, name in enumerate(rows)})
    return byte_tokenizer(
        vocab_size,
        specials,
        eos="<end_of_utterance>",
        pad="<pad>",
        bos=bos,
        image_token="<image>",
        video_token="<video>",
        fake_image_token="<fake_token_around_image>",
        global_image_token="<global-img>",
        end_of_utterance_token="<end_of_utterance>",
    )


def _image_processor(family: str, geometry: str) -> Any:
    if family == "idefics3":
        from transformers.models.idefics3.image_processing_pil_idefics3 import (
            Idefics3ImageProcessorPil as cls,
        )
    else:
        from transformers.models.smolvlm.image_processing_pil_smolvlm import (
            SmolVLMImageProcessorPil as cls,
        )
    tile = _geometry(family, geometry)["tile"]
    return cls(
        do_resize=True,
        size={"longest_edge": 4 * tile},
        do_image_splitting=True,
        max_image_size={"longest_edge": tile},
    )


def _seq_len(family: str, geometry: str) -> int:
    geo = _geometry(family, geometry)
    return (geo["tile"] // geo["patch"] // geo["scale"]) ** 2


def idefics3_processor(vocab_size: int = 512, geometry: str = "tiny") -> Any:
    """An ``Idefics3Processor`` for ``build_tiny_model("idefics3")`` (364² tiles at real)."""
    from transformers import Idefics3Processor

    return Idefics3Processor(
        image_processor=_image_processor("idefics3", geometry),
        tokenizer=_tokenizer("idefics3", vocab_size),
        image_seq_len=_seq_len("idefics3", geometry),
        chat_template=TEMPLATE.replace("{{ START }}", START["idefics3"]),
    )


def smolvlm_processor(vocab_size: int = 512, geometry: str = "tiny") -> Any:
    """A ``SmolVLMProcessor`` for ``build_tiny_model("smolvlm")`` (512² tiles at real)."""
    from transformers import SmolVLMProcessor

    from harness.models.offline.video import pil_video_processor, with_pil_video

    tile = _geometry("smolvlm", geometry)["tile"]
    video = pil_video_processor(tile)
    # read by SmolVLMProcessor.apply_chat_template; unused: headscope shows frames as images
    video.num_frames = video.fps = None
    return with_pil_video(SmolVLMProcessor)(
        image_processor=_image_processor("smolvlm", geometry),
        tokenizer=_tokenizer("smolvlm", vocab_size),
        video_processor=video,
        image_seq_len=_seq_len("smolvlm", geometry),
        chat_template=TEMPLATE.replace("{{ START }}", START["smolvlm"]),
    )
