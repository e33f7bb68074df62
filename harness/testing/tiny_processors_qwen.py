"""Tiny offline Qwen2-VL / Qwen2.5-VL / Qwen3-VL processors for CPU tests.

The LLaVA-family and InternVL processors are in :mod:`harness.testing.tiny_processors`.
"""

from __future__ import annotations

from typing import Any

from harness.testing.processor_parts import as_pil, byte_tokenizer, clip_stats, video_processor_base

# --- Qwen2-VL / Qwen2.5-VL / Qwen3-VL (adapter helper for issue 3, Qwen part) -----------------
# Real Qwen processor classes with the PIL image processor and small pixel budgets. The HF
# Qwen *video* processors need torchvision, so tests use PilQwenVideoProcessor below: the same
# resize rule (HF's own smart_resize), normalisation and temporal patchify, with PIL resampling.

_QWEN_TEMPLATE = (
    "{% for message in messages %}"
    "{% if loop.first and message['role'] != 'system' %}SYSTEM{% endif %}"
    "{{ '<|im_start|>' + message['role'] + '\n' }}"
    "{% if message['content'] is string %}{{ message['content'] }}{% else %}"
    "{% for c in message['content'] %}"
    "{% if c['type'] == 'image' %}{{ '<|vision_start|><|image_pad|><|vision_end|>' }}"
    "{% elif c['type'] == 'video' %}{{ '<|vision_start|><|video_pad|><|vision_end|>' }}"
    "{% elif c['type'] == 'text' %}{{ c['text'] }}{% endif %}{% endfor %}{% endif %}"
    "{{ '<|im_end|>\n' }}{% endfor %}"
    "{% if add_generation_prompt %}{{ '<|im_start|>assistant\n' }}{% endif %}"
)
QWEN_TINY_PIXELS = {
    "qwen2_vl": {"cell": 28, "image": (4, 36), "video": (4, 16)},
    "qwen2_5_vl": {"cell": 28, "image": (4, 36), "video": (4, 16)},
    "qwen3_vl": {"cell": 32, "image": (4, 36), "video": (4, 32)},
}
"""Per family: merged-cell size in px and (min, max) merged tokens per image / per video."""


class PilQwenVideoProcessor:
    """Torchvision-free stand-ins for ``Qwen2VLVideoProcessor`` / ``Qwen3VLVideoProcessor``.

    ``PilQwenVideoProcessor.build(family, min_pixels, max_pixels)`` returns an instance of a
    ``VideoProcessorMixin`` subclass (so the real Qwen processors accept it) that takes
    pre-sampled frames (``do_sample_frames`` is ignored: frames are never resampled).
    Qwen3-VL's budget counts all frames (HF's 3-D ``smart_resize``); Qwen2/2.5-VL's is per frame.
    """

    @staticmethod
    def build(family: str, min_pixels: int, max_pixels: int) -> Any:
        """Build the stand-in for ``family`` with the given pixel budget."""
        import numpy as np
        from PIL import Image
        from transformers.image_processing_utils import BatchFeature
        from transformers.video_utils import make_batched_metadata, make_batched_videos

        qwen3 = family == "qwen3_vl"
        patch = 16 if qwen3 else 14
        mean, std = ((0.5,) * 3, (0.5,) * 3) if qwen3 else clip_stats()

        def resized(t: int, h: int, w: int) -> tuple[int, int]:
            if qwen3:
                from transformers.models.qwen3_vl.video_processing_qwen3_vl import smart_resize

                return smart_resize(t, h, w, 2, 2 * patch, min_pixels, max_pixels)
            from transformers.models.qwen2_vl.image_processing_pil_qwen2_vl import smart_resize

            return smart_resize(h, w, 2 * patch, min_pixels, max_pixels)

        def preprocess(self: Any, videos: Any, **kwargs: Any) -> Any:
            videos = make_batched_videos(videos)
            metadata = make_batched_metadata(videos, kwargs.get("video_metadata"))
            flat, grids = [], []
            for video in videos:
                frames = [as_pil(f) for f in video]
                w0, h0 = frames[0].size
                rh, rw = resized(len(frames), h0, w0)
                arr = np.stack(
                    [np.asarray(f.resize((rw, rh), Image.BICUBIC)) for f in frames]
                ).astype(np.float32)
                arr = (arr / 255.0 - np.array(mean, np.float32)) / np.array(std, np.float32)
                arr = arr.transpose(0, 3, 1, 2)  # (T, C, H, W)
                if len(arr) % 2:
                    arr = np.concatenate([arr, arr[-1:]])
                gt, gh, gw = len(arr) // 2, rh // patch, rw // patch
                x = arr.reshape(gt, 2, 3, gh // 2, 2, patch, gw // 2, 2, patch)
                x = x.transpose(0, 3, 6, 4, 7, 2, 1, 5, 8)  # (t, hm, wm, mh, mw, C, T, p, p)
                flat.append(x.reshape(gt * gh * gw, 3 * 2 * patch * patch))
                grids.append([gt, gh, gw])
            data = {
                "pixel_values_videos": np.concatenate(flat),
                "video_grid_thw": np.array(grids, dtype=np.int64),
            }
            out = BatchFeature(data=data, tensor_type=kwargs.get("return_tensors"))
            if kwargs.get("return_metadata"):
                out["video_metadata"] = metadata
            return out

        attrs = {
            "preprocess": preprocess,
            "model_input_names": ["pixel_values_videos", "video_grid_thw"],
            "patch_size": patch,
            "temporal_patch_size": 2,
            "merge_size": 2,
            "size": {"shortest_edge": min_pixels, "longest_edge": max_pixels},
        }
        cls = type("PilQwenVideoProcessor", (video_processor_base(),), attrs)
        return cls()


def _with_video_stand_in(cls: type) -> type:
    """``cls`` accepting a :class:`PilQwenVideoProcessor` (the HF check needs torchvision)."""

    def check_argument_for_proper_class(self: Any, argument_name: str, argument: Any) -> Any:
        stand_in = type(argument).__name__ == "PilQwenVideoProcessor"
        if argument_name == "video_processor" and stand_in:
            return type(argument)
        return cls.check_argument_for_proper_class(self, argument_name, argument)

    check = {"check_argument_for_proper_class": check_argument_for_proper_class}
    return type(cls.__name__, (cls,), check)


def tiny_qwen_processor(
    family: str,
    vocab_size: int = 512,
    *,
    image_tokens: tuple[int, int] | None = None,
    video_tokens: tuple[int, int] | None = None,
) -> Any:
    """A real Qwen processor for ``build_tiny_model(family)`` (qwen2_vl, qwen2_5_vl, qwen3_vl).

    Args:
        family: ``qwen2_vl``, ``qwen2_5_vl`` or ``qwen3_vl``.
        vocab_size: The tiny model's vocabulary size.
        image_tokens: (min, max) merged tokens per image (default :data:`QWEN_TINY_PIXELS`);
            pixels = tokens · cell².
        video_tokens: (min, max) merged tokens per frame pair (Qwen3-VL: for the whole clip).

    Returns:
        ``Qwen2VLProcessor`` / ``Qwen2_5_VLProcessor`` / ``Qwen3VLProcessor``: PIL image
        processor, :class:`PilQwenVideoProcessor`, byte-level tokenizer, ChatML template
        (Qwen2/2.5: default system prompt, as the real templates; Qwen3: none).
    """
    import transformers as tf
    from transformers.models.qwen2_vl.image_processing_pil_qwen2_vl import Qwen2VLImageProcessorPil

    from harness.testing.tiny import special_token_ids

    classes = {"qwen2_vl": "Qwen2VLProcessor", "qwen2_5_vl": "Qwen2_5_VLProcessor"}
    classes["qwen3_vl"] = "Qwen3VLProcessor"
    if family not in classes:
        raise ValueError(f"not a Qwen family: {family!r}")
    px = QWEN_TINY_PIXELS[family]
    cell2 = px["cell"] ** 2
    lo, hi = image_tokens or px["image"]
    vlo, vhi = video_tokens or px["video"]
    if family == "qwen3_vl":
        vlo, vhi = vlo * 2, vhi * 2  # the 3-D budget counts frames, two per token group
    ids = special_token_ids(family, vocab_size)
    specials = {
        "<|image_pad|>": ids["image"],
        "<|video_pad|>": ids["video"],
        "<|vision_start|>": ids["vision_start"],
        "<|vision_end|>": ids["vision_end"],
        "<|im_end|>": ids["eos"],
        "<|endoftext|>": ids["pad"],
        "<|im_start|>": ids["bos"],
    }
    tokenizer = byte_tokenizer(vocab_size, specials, eos="<|im_end|>", pad="<|endoftext|>")
    qwen3 = family == "qwen3_vl"
    image_processor = Qwen2VLImageProcessorPil(
        min_pixels=lo * cell2,
        max_pixels=hi * cell2,
        patch_size=px["cell"] // 2,
        **({"image_mean": [0.5] * 3, "image_std": [0.5] * 3} if qwen3 else {}),
    )
    system = "" if qwen3 else "<|im_start|>system\nYou are a helpful assistant.<|im_end|>\n"
    return _with_video_stand_in(getattr(tf, classes[family]))(
        image_processor=image_processor,
        tokenizer=tokenizer,
        video_processor=PilQwenVideoProcessor.build(family, vlo * cell2, vhi * cell2),
        chat_template=_QWEN_TEMPLATE.replace("SYSTEM", system),
    )
