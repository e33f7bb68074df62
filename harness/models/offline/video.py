"""PIL stand-ins for the video processors that need torchvision, and the frame helpers.

transformers' OneVision / InternVL / Qwen video processors need torchvision; these do the same
resizing (bicubic), rescaling, normalisation and (Qwen) temporal patchify with PIL and numpy.
:func:`with_pil_video` makes a processor class accept them.
"""

from __future__ import annotations

from typing import Any

__all__ = [
    "PilQwenVideoProcessor",
    "as_pil",
    "clip_stats",
    "pil_video_processor",
    "video_processor_base",
    "with_pil_video",
]

STAND_INS = ("PilVideoProcessor", "PilQwenVideoProcessor")
"""Class names of the stand-ins :func:`with_pil_video` lets through."""


def with_pil_video(cls: type) -> type:
    """``cls`` accepting a PIL stand-in as its video processor (HF's check needs torchvision)."""

    def check_argument_for_proper_class(self: Any, argument_name: str, argument: Any) -> Any:
        if argument_name == "video_processor" and type(argument).__name__ in STAND_INS:
            return type(argument)
        return cls.check_argument_for_proper_class(self, argument_name, argument)

    check = {"check_argument_for_proper_class": check_argument_for_proper_class}
    return type(cls.__name__, (cls,), check)


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


def pil_video_processor(size: int) -> Any:
    """A torchvision-free stand-in for the OneVision / InternVL video processors.

    Like theirs: every frame squashed to ``size``² (bicubic), rescaled, CLIP mean/std;
    pre-sampled frames are never resampled. Returns ``pixel_values_videos`` (B, T, 3, S, S).
    """
    import numpy as np
    from PIL import Image
    from transformers.image_processing_utils import BatchFeature
    from transformers.video_utils import make_batched_videos

    mean, std = (np.array(x, np.float32)[:, None, None] for x in clip_stats())

    def preprocess(self: Any, videos: Any, **kwargs: Any) -> Any:
        out = []
        for video in make_batched_videos(videos):
            frames = [as_pil(f).resize((size, size), Image.BICUBIC) for f in video]
            arr = np.stack([np.asarray(f, np.float32).transpose(2, 0, 1) for f in frames])
            out.append((arr / 255.0 - mean) / std)
        if len({len(v) for v in out}) > 1:
            raise ValueError("videos of one batch need the same number of frames")
        data = {"pixel_values_videos": np.stack(out)}
        return BatchFeature(data=data, tensor_type=kwargs.get("return_tensors"))

    attrs = {
        "preprocess": preprocess,
        "model_input_names": ["pixel_values_videos"],
        "size": {"height": size, "width": size},
    }
    return type("PilVideoProcessor", (video_processor_base(),), attrs)()


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
