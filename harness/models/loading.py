"""Loading a Hugging Face checkpoint for an adapter, with clear errors for bad input.

Before any weights are read:

- the checkpoint is found (:func:`resolve_checkpoint`): a local directory loads offline; a hub
  id loads from the local Hugging Face cache when it is there, else is downloaded — unless the
  hub cannot be reached (``HF_HUB_OFFLINE`` set, or no connection to the hub's host within a
  few seconds), which gives one :class:`CheckpointError` naming the id and asking for a local
  directory, instead of minutes of retries ending in an ``OSError`` traceback;
- the device is checked (:func:`check_device`): a name torch cannot parse, ``cuda`` on a torch
  without CUDA, a CUDA index that does not exist, or another backend this machine lacks is a
  :class:`~harness.api.specs.SpecError`;
- after the (light) processor is loaded, every family option in ``ModelSpec.args`` must be one
  the processor understands (:func:`check_processor_args`); HF's ``from_pretrained`` would
  silently drop the rest.

While they are read, a weights file that is truncated or damaged (:func:`damaged_weights`) is a
:class:`CheckpointError`, not the reader's traceback.
"""

from __future__ import annotations

import os
import socket
from pathlib import Path
from typing import TYPE_CHECKING, Any
from urllib.parse import urlparse

from harness.api.errors import MissingDependency, UsageError
from harness.api.specs import SpecError

if TYPE_CHECKING:
    from harness.api.specs import ModelSpec

__all__ = [
    "CheckpointError",
    "torch_dtype",
    "resolve_checkpoint",
    "check_device",
    "hub_reachable",
    "missing_device",
    "processor_arg_names",
    "check_processor_args",
    "damaged_weights",
    "load_pretrained",
    "is_tiny",
    "load_tiny",
]

HUB_TIMEOUT_S = 3.0
"""Seconds to wait for a TCP connection to the hub before calling it unreachable."""


class CheckpointError(SpecError):
    """A checkpoint that cannot be found or loaded (a usage error: exit code 2)."""


def torch_dtype(name: str) -> Any:
    """``"float32"``/``"bfloat16"``/``"float16"`` → ``torch.dtype``; ``"auto"`` stays ``"auto"``."""
    import torch

    if name == "auto":
        return "auto"
    if name not in ("float32", "bfloat16", "float16"):
        raise UsageError(f"unknown dtype {name!r} (float32, bfloat16, float16, auto)")
    return getattr(torch, name)


def _looks_local(path: str) -> bool:
    return path.startswith(("/", "./", "../", "~", ".\\")) or "\\" in path or path.count("/") > 1


def hub_reachable() -> bool:
    """Whether the Hugging Face hub answers (a TCP connection within HUB_TIMEOUT_S).

    False at once when ``HF_HUB_OFFLINE`` is set.
    """
    if os.environ.get("HF_HUB_OFFLINE", "").strip().lower() in ("1", "true", "yes", "on"):
        return False
    url = urlparse(os.environ.get("HF_ENDPOINT") or "https://huggingface.co")
    port = url.port or (443 if url.scheme == "https" else 80)
    try:
        socket.create_connection((url.hostname or "", port), timeout=HUB_TIMEOUT_S).close()
    except OSError:
        return False
    return True


def _in_cache(repo: str, revision: str | None) -> bool:
    from huggingface_hub import try_to_load_from_cache

    hit = try_to_load_from_cache(repo, "config.json", revision=revision)
    return isinstance(hit, str)


def resolve_checkpoint(spec: ModelSpec, default: str | None) -> tuple[str, dict[str, Any]]:
    """``(path or hub id, extra from_pretrained kwargs)`` of the checkpoint to load.

    Raises:
        CheckpointError: no checkpoint given; a local path that is not a directory; a hub id
            neither in the local cache nor reachable (no network).
    """
    path = spec.pretrained or default
    who = f"model {spec.name!r}"
    if not path:
        raise CheckpointError(f'{who}: no checkpoint given; pass "pretrained": "DIR"')
    local = Path(path).expanduser()
    if local.is_dir():
        return str(local), {"local_files_only": True}
    if _looks_local(path) or local.exists():
        raise CheckpointError(
            f"{who}: checkpoint directory {path!r} does not exist (or is not a directory)"
        )
    if _in_cache(path, spec.revision):
        if not hub_reachable():
            return path, {"local_files_only": True}
        return path, {}
    if not hub_reachable():
        raise CheckpointError(
            f"{who}: checkpoint {path!r} is not on this machine (not a local directory, not "
            "in the Hugging Face cache) and the hub cannot be reached (no network or "
            "HF_HUB_OFFLINE set). Download it where there is network and pass the local "
            f'directory: --model-args \'{{"pretrained": "/path/to/{path.split("/")[-1]}"}}\''
        )
    return path, {}


def missing_device(device: str | None) -> str | None:
    """Why this machine lacks ``device``, or None when it has it (or when none is named).

    A name torch cannot parse ("banana", "cuda:x"), ``cuda``/``cuda:i`` without CUDA or with
    fewer than ``i + 1`` devices, and another backend that is not available here ("mps",
    "xpu", "meta") are each a reason; ``cpu`` always exists.
    """
    if not device:
        return None
    import torch

    try:
        parsed = torch.device(str(device))
    except RuntimeError:  # torch's only error for a device string it cannot parse
        return f"device {device!r} is not a device name (cpu, cuda, cuda:N, mps, ...)"
    if parsed.type == "cpu":
        return None
    if parsed.type != "cuda":
        backend = getattr(torch, parsed.type, None)
        available = getattr(backend, "is_available", None)
        if callable(available) and available():
            return None
        return f"device {device!r} asked for, but {parsed.type} is not available here"
    if not torch.cuda.is_available():
        build = torch.version.cuda or "none (a CPU-only build)"
        return (
            f"device {device!r} asked for, but CUDA is not available here (torch "
            f"{torch.__version__}, CUDA build {build})"
        )
    if parsed.index is not None and parsed.index >= torch.cuda.device_count():
        return f"device {device!r} does not exist: {torch.cuda.device_count()} CUDA device(s) here"
    return None


def check_device(device: str | None) -> None:
    """Refuse a device this machine does not have (before anything is loaded).

    Raises:
        SpecError: see :func:`missing_device`.
    """
    problem = missing_device(device)
    if problem is not None:
        raise SpecError(problem, hint='use device "cpu", or a device this machine has')


def processor_arg_names(processor: Any) -> set[str]:
    """Option names a loaded HF processor understands at ``from_pretrained``.

    The processor's and its sub-processors' attributes, plus the typed keyword arguments
    (``valid_kwargs``) the image / video processors declare (e.g. Qwen's ``min_pixels``,
    which only ends up inside ``size``).
    """
    names: set[str] = set()
    parts = [processor] + [
        getattr(processor, a, None) for a in ("image_processor", "video_processor", "tokenizer")
    ]
    for part in parts:
        if part is None:
            continue
        names |= {k for k in vars(part) if not k.startswith("_")}
        typed = getattr(type(part), "valid_kwargs", None)
        for cls in getattr(typed, "__mro__", ()):
            names |= set(getattr(cls, "__annotations__", {}))
    return names


def check_processor_args(spec: ModelSpec, processor: Any, consumed: set[str] = frozenset()) -> None:
    """Refuse family options (``spec.args``) that neither the adapter nor the processor uses.

    Raises:
        SpecError: naming the unknown keys and the ones that would be understood.
    """
    known = processor_arg_names(processor) | set(consumed)
    unknown = sorted(set(spec.args) - known)
    if unknown:
        import difflib

        close = sorted({c for k in unknown for c in difflib.get_close_matches(k, known, 3, 0.7)})
        hint = sorted(k for k in known if "pixel" in k or k.endswith("size") or "frame" in k)
        raise SpecError(
            f"model {spec.name!r}: --model-args option(s) {unknown} are not understood by this "
            f"family's processor ({type(processor).__name__}); it would ignore them. "
            + (f"Did you mean {close}? " if close else "")
            + f"Resolution options it understands include {hint}"
        )


def damaged_weights(exc: BaseException) -> bool:
    """True when ``exc`` is the weight reader's own word that a weights file is damaged.

    safetensors raises ``SafetensorError`` for a truncated or garbled ``*.safetensors`` file;
    torch's zip reader raises a ``RuntimeError`` starting "PytorchStreamReader failed" for a
    truncated ``pytorch_model.bin``. Every other exception is left alone (a bug keeps its
    traceback).
    """
    from safetensors import SafetensorError

    if isinstance(exc, SafetensorError):
        return True
    return isinstance(exc, RuntimeError) and str(exc).startswith("PytorchStreamReader failed")


def load_pretrained(
    spec: ModelSpec,
    model_class: str,
    default_pretrained: str | None,
    *,
    processor_kwargs: dict[str, Any] | None = None,
    model_kwargs: dict[str, Any] | None = None,
    consumed_args: set[str] = frozenset(),
) -> tuple[Any, Any]:
    """Load ``(model, processor)`` with ``from_pretrained`` and put the decoder on the dispatch.

    Args:
        spec: Model spec (pretrained, revision, dtype, device, device_map, attn_implementation).
        model_class: ``transformers`` class name, e.g. ``"Qwen2_5_VLForConditionalGeneration"``.
        default_pretrained: Hub id used when ``spec.pretrained`` is None.
        processor_kwargs: Extra ``AutoProcessor.from_pretrained`` kwargs (e.g. ``max_pixels``).
        model_kwargs: Extra model ``from_pretrained`` kwargs.
        consumed_args: Keys of ``spec.args`` the adapter itself uses (not the processor).

    Returns:
        The model (eval mode, on ``spec.device`` unless ``device_map`` is set, text decoder on
        ``headscope``) and the processor (left padding). A local directory loads offline.

    Raises:
        CheckpointError: see :func:`resolve_checkpoint`. SpecError: see :func:`check_device`
            and :func:`check_processor_args`.
    """
    import transformers

    if not spec.device_map:
        check_device(spec.device)
    path, common = resolve_checkpoint(spec, default_pretrained)
    if spec.revision:
        common["revision"] = spec.revision
    try:
        processor = transformers.AutoProcessor.from_pretrained(
            path, **common, **(processor_kwargs or {})
        )
    except (ImportError, ValueError) as exc:
        if "torchvision" not in str(exc):
            if isinstance(exc, ValueError):  # not a checkpoint transformers can read
                raise CheckpointError(f"model {spec.name!r}: cannot load {path!r}: {exc}") from exc
            raise
        # HF's video processors (Qwen, LLaVA-OneVision, InternVL) are torchvision-only
        raise MissingDependency(
            f"the processor of {path!r} needs torchvision: install the torchvision build "
            f"that matches your torch ({exc})"
        ) from exc
    except OSError as exc:  # gated / missing repo, missing files in a directory
        raise CheckpointError(f"model {spec.name!r}: cannot load {path!r}: {exc}") from None
    check_processor_args(spec, processor, consumed_args)
    kwargs: dict[str, Any] = {
        "dtype": torch_dtype(spec.dtype),
        "attn_implementation": spec.attn_implementation,
    }
    if spec.device_map:
        kwargs["device_map"] = spec.device_map
    kwargs.update(model_kwargs or {})
    try:
        model = getattr(transformers, model_class).from_pretrained(path, **common, **kwargs)
    except OSError as exc:
        raise CheckpointError(f"model {spec.name!r}: cannot load {path!r}: {exc}") from None
    except Exception as exc:
        if not damaged_weights(exc):
            raise
        raise CheckpointError(
            f"model {spec.name!r}: the weights in {path!r} cannot be read ({exc})",
            hint="the file is truncated or damaged: download the checkpoint again",
        ) from None
    if not spec.device_map:
        model = model.to(spec.device)
    from harness.attention.dispatch import use_dispatch

    return use_dispatch(model.eval()), processor


def is_tiny(spec: ModelSpec) -> bool:
    """Whether ``spec`` asks for the family's tiny random instance (``tiny=true``)."""
    value = spec.args.get("tiny", False)
    return value is True or str(value).strip().lower() in ("1", "true", "yes")


def load_tiny(spec: ModelSpec, family: str) -> tuple[Any, Any]:
    """The family's tiny random instance at real processor geometry (``--model-args tiny=true``).

    Built offline from the family unit's :class:`~harness.models.unit.TinyRecipe`
    (:func:`harness.models.tiny.build_tiny_model` and :func:`~harness.models.tiny.tiny_processor`
    with ``geometry="real"``): random weights, so its answers are noise, but every path a real
    checkpoint takes (processor geometry, evidence maps, interventions, maps, view) runs before
    any download. ``seed`` picks the weights (default 0); no other option is accepted.

    Raises:
        SpecError: other ``--model-args`` beside ``tiny`` / ``seed``, a ``pretrained``
            checkpoint beside it, or a device this machine lacks.
        UsageError: the family has no tiny recipe.
    """
    extra = sorted(set(spec.args) - {"tiny", "seed"})
    if extra:
        raise SpecError(
            f"model {family!r}: tiny=true builds a random instance at the released processor "
            f"geometry and takes no other --model-args (got {extra}); drop them"
        )
    if spec.pretrained:
        raise SpecError(
            f"model {family!r}: tiny=true and pretrained={spec.pretrained!r} exclude each "
            "other; drop one"
        )
    from harness.attention.dispatch import use_dispatch
    from harness.models.tiny import build_tiny_model, tiny_processor

    check_device(spec.device)
    seed = int(spec.args.get("seed", 0))
    model = build_tiny_model(family, seed=seed, geometry="real")
    dtype = torch_dtype(spec.dtype)
    if dtype != "auto":
        model = model.to(dtype)
    model = model.to(spec.device)
    return use_dispatch(model.eval()), tiny_processor(family, geometry="real")
