"""Conversions between lmms-eval's requests and headscope's typed payloads (no lmms-eval import).

Kept apart from :mod:`harness.lmms.model` so the argument parsing, visual conversion, stop-string
handling, the timed prefill and the log-likelihood can be tested without lmms-eval installed.
"""

from __future__ import annotations

import functools
import json
import time
from collections.abc import Callable, Sequence
from pathlib import Path
from typing import Any

from harness.api.payloads import Request
from harness.api.specs import InterventionSpec, SpecError

__all__ = [
    "json_arg",
    "intervention_spec",
    "to_request",
    "processor_frame_sampler",
    "budget_of",
    "cut_at_stops",
    "cuda_devices",
    "timed_prefill",
    "continuation_logprob",
]

VIDEO_SUFFIXES = (".mp4", ".avi", ".mov", ".mkv", ".webm", ".m4v")


def json_arg(value: Any, name: str) -> Any:
    """A model argument given as JSON text (lmms-eval passes ``k=v`` values as strings)."""
    if not isinstance(value, str):
        return value
    try:
        return json.loads(value)
    except json.JSONDecodeError as exc:
        raise SpecError(f"model_args {name}={value!r} is not valid JSON: {exc}") from None


def intervention_spec(intervention: Any, intervention_args: Any) -> InterventionSpec:
    """The intervention named in ``model_args``: a name (+ ``intervention_args``) or a JSON object.

    Both arrive as text inside lmms-eval's ``--model_args``, so every setting of the
    intervention is part of the string lmms-eval keys its response cache on.
    """
    args = json_arg(intervention_args, "intervention_args") if intervention_args else {}
    if not isinstance(args, dict):
        raise SpecError("model_args intervention_args must be a JSON object")
    text = str(intervention).strip()
    if text.startswith("{"):
        if args:
            raise SpecError("give intervention args either inside the JSON object or separately")
        return InterventionSpec.from_dict(json_arg(text, "intervention"))
    if ":" in text:
        raise SpecError(
            "the short form 'name:key=value' cannot live inside lmms-eval's comma-separated "
            "--model_args; use intervention=NAME,intervention_args={...JSON...}"
        )
    return InterventionSpec(name=text, args=args)


def _as_image(visual: Any) -> Any:
    from PIL import Image

    if isinstance(visual, Image.Image):
        return visual.convert("RGB")
    if isinstance(visual, str | Path):
        with Image.open(visual) as im:
            return im.convert("RGB")
    raise TypeError(f"unsupported visual of type {type(visual).__name__} (images and videos only)")


def processor_frame_sampler(adapter: Any, num_frames: int) -> Callable[..., Any] | None:
    """The adapter's HF video processor's ``sample_frames`` with ``num_frames`` bound, or None."""
    video_processor = getattr(getattr(adapter, "processor", None), "video_processor", None)
    sample = getattr(video_processor, "sample_frames", None)
    return functools.partial(sample, num_frames=num_frames) if callable(sample) else None


def to_request(
    context: str,
    visuals: Sequence[Any],
    max_new_tokens: int,
    video_frames: int,
    frame_indices: Callable[..., Any] | None = None,
) -> Request:
    """A headscope :class:`Request` from an lmms-eval context and its visuals.

    lmms-eval hands the model a video file, so its frames are the ones the model's own HF
    processor would pick (:func:`harness.media.video.sample_frames_for_processor`).

    Args:
        context: The task's prompt text (becomes the instruction, after the media).
        visuals: What the task's ``doc_to_visual`` returned: PIL images, image paths, or one
            video path.
        max_new_tokens: Generation budget.
        video_frames: Frames sampled from a video file.
        frame_indices: The processor's sampling function (:func:`processor_frame_sampler`);
            None: transformers' default rule, ``i · total // video_frames``.
    """
    flat: list[Any] = []
    for v in visuals or ():
        flat.extend(v if isinstance(v, list | tuple) else [v])
    videos = [
        v for v in flat if isinstance(v, str | Path) and str(v).lower().endswith(VIDEO_SUFFIXES)
    ]
    if videos:
        if len(videos) != 1 or len(flat) != 1:
            raise ValueError("a request may carry one video and nothing else")
        from harness.media.video import sample_frames_for_processor

        clip = sample_frames_for_processor(
            videos[0], num_frames=video_frames, sample_indices_fn=frame_indices
        )
        return Request(text=context, video=clip, max_new_tokens=max_new_tokens)
    images = tuple(_as_image(v) for v in flat)
    return Request(text=context, images=images, max_new_tokens=max_new_tokens)


def budget_of(gen_kwargs: dict[str, Any], default: int) -> int:
    """The task's token budget (``max_new_tokens`` or lm-eval's ``max_gen_toks``)."""
    for key in ("max_new_tokens", "max_gen_toks"):
        if gen_kwargs.get(key) is not None:
            return int(gen_kwargs[key])
    return default


def cut_at_stops(text: str, until: Any) -> str:
    """``text`` up to the earliest stop string in ``until`` (a string or a list of strings)."""
    stops = [until] if isinstance(until, str) else list(until or ())
    cut = len(text)
    for stop in stops:
        if stop:
            pos = text.find(stop)
            if 0 <= pos < cut:
                cut = pos
    return text[:cut]


def cuda_devices(model: Any) -> list[Any]:
    """Every CUDA device holding a parameter (several with ``device_map="auto"``)."""
    import torch

    if not torch.cuda.is_available():
        return []
    return sorted({p.device for p in model.parameters() if p.device.type == "cuda"}, key=str)


def _sync(devices: list[Any]) -> None:
    import torch

    # only the model's own devices: touching another GPU would create a context on it
    for device in devices:
        torch.cuda.synchronize(device)


def timed_prefill(model: Any, inputs: Any) -> float:
    """Wall time (ms) of one prefill forward over ``inputs``, synchronised on both sides.

    This is a separate forward, run before generation, so it times the prefill alone
    (lmms-eval's own latency mixes prefill and decode). Like ``generate``'s first step it
    fills a KV cache and computes only the last position's logits where the model allows.
    Every CUDA device of the model is synchronised, so a model spread with
    ``device_map="auto"`` is timed to its last layer.
    """
    import inspect

    import torch

    extra: dict[str, Any] = {"use_cache": True}
    if "logits_to_keep" in inspect.signature(model.forward).parameters:
        extra["logits_to_keep"] = 1
    devices = cuda_devices(model)
    with torch.inference_mode():
        _sync(devices)
        start = time.perf_counter()
        model(**inputs, **extra)
        _sync(devices)
    return (time.perf_counter() - start) * 1000.0


def continuation_logprob(adapter: Any, request: Request, continuation: str) -> tuple[float, bool]:
    """``(log p(continuation | request), greedy)`` under ``adapter``'s model and chat template.

    The continuation follows the rendered prompt (after the generation prompt). Its tokens are
    those of ``prompt + continuation`` past the prompt's own tokens; the prompt must tokenise
    to a prefix of the whole (checked), else the split is ambiguous.

    Raises:
        ValueError: the prompt's tokens are not a prefix, or the continuation is empty.
    """
    import torch

    prompt = adapter.render(request)
    ctx = adapter.prepare([request])
    full = _encode_with(adapter, request, prompt + continuation)
    n_ctx = ctx["input_ids"].shape[1]
    ids = full["input_ids"][0]
    if ids.shape[0] <= n_ctx or not torch.equal(ids[:n_ctx], ctx["input_ids"][0]):
        raise ValueError("the continuation does not tokenise after the prompt's tokens")
    with torch.inference_mode():
        logits = adapter.model(**full).logits[0, n_ctx - 1 : -1].float()
    target = ids[n_ctx:]
    logprobs = torch.log_softmax(logits, dim=-1)
    total = logprobs.gather(-1, target[:, None]).sum().item()
    greedy = bool(torch.equal(logits.argmax(dim=-1), target))
    return float(total), greedy


def _encode_with(adapter: Any, request: Request, text: str) -> Any:
    """Like ``adapter.prepare([request])`` but for an arbitrary rendered ``text``."""
    # an instance attribute shadows the method for this one call, so the processor call
    # (media, family kwargs, dtype and device moves) stays exactly the adapter's own
    adapter.render = lambda _request: text
    try:
        return adapter.prepare([request])
    finally:
        vars(adapter).pop("render", None)
