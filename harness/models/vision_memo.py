"""Vision features computed once per batch and reused by every cell (sample-major runs).

Under ``generate`` transformers encodes images and videos *before* the prefill by calling the
model's own ``base_model.get_image_features`` / ``get_video_features`` (Qwen2/2.5/3-VL,
LLaVA, LLaVA-NeXT, LLaVA-OneVision, InternVL and the toy alike) and hands the outputs to the
forward as ``mm_encoder_outputs``. :class:`VisionMemo` wraps those two bound methods on the
model instance for the length of one batch (nothing is forked; the class methods are
untouched and the instance attributes are removed on exit) and returns the stored output when
a call is the same call again. Qwen3-VL's output carries its DeepStack features, so they are
reused with it.

A call is the same call when every argument is: tensors by identity (the very object, its
storage pointer, shape, stride, dtype, device and in-place version counter — the memo holds
a reference, so the id cannot be recycled), everything else by value; and the vision side of
the model is unchanged (every parameter outside the language model by identity and version).
Different pixels, different processor settings (other tensors, other grids) or modified
vision weights therefore miss. Nothing is reused

- while gradients are on, or for inputs whose version cannot be tracked (inference tensors);
- while any module of the vision side carries a forward hook (other than transformers' own
  output recorders), or a global module hook is installed: something wants to see the pass,
  so it runs (and is not stored);
- for a cell whose intervention declares ``vision="writes"``; ``vision="reads"`` (it hooks
  the tower to read what it computes, e.g. SAP's pixel and ViT-attention priors) runs the
  pass with its hooks and stores the output for the cells after it.

Memory: at most one batch's vision outputs are held (cleared when the batch ends).
"""

from __future__ import annotations

import functools
import inspect
from collections.abc import Iterator
from contextlib import contextmanager
from typing import Any, Literal

__all__ = ["VisionMemo", "VisionUse", "ENCODER_FUNCTIONS"]

VisionUse = Literal["none", "reads", "writes"]
"""How an intervention touches the vision tower: not at all, reads its pass (hooks), or
changes what it computes."""

ENCODER_FUNCTIONS = ("get_image_features", "get_video_features")
"""The model's own encoder entry points that ``generate`` calls before the prefill."""


class VisionMemo:
    """Per-batch memo of the vision encoder's outputs.

    Args:
        model: A HF ``*ForConditionalGeneration`` model.

    Attributes:
        computed: Encoder calls that ran the vision tower (since construction).
        reused: Encoder calls answered from the memo.
    """

    def __init__(self, model: Any) -> None:
        self.model = model
        self.base = getattr(model, "base_model", model)
        self.use: VisionUse = "none"
        self.computed = 0
        self.reused = 0
        self._entries: dict[tuple[Any, ...], tuple[Any, Any]] = {}
        self._depth = 0
        lm = getattr(self.base, "language_model", None)
        skip = {id(m) for m in lm.modules()} if lm is not None else set()
        self._modules = [m for m in self.base.modules() if id(m) not in skip]
        params = {id(p): p for m in self._modules for p in m.parameters(recurse=False)}
        self._params = list(params.values())

    @contextmanager
    def installed(self) -> Iterator[VisionMemo]:
        """Wrap the encoder functions for the ``with`` block (one batch); then forget all."""
        wrapped = []
        try:
            for name in ENCODER_FUNCTIONS:
                fn = getattr(self.base, name, None)
                if fn is None or name in vars(self.base):
                    continue
                setattr(self.base, name, self._wrap(name, fn))
                wrapped.append(name)
            yield self
        finally:
            for name in wrapped:
                delattr(self.base, name)
            self._entries.clear()

    @contextmanager
    def using(self, use: VisionUse) -> Iterator[None]:
        """Calls in the block follow ``use`` (the attached intervention's declaration)."""
        if use not in ("none", "reads", "writes"):
            raise ValueError(f"vision use must be none, reads or writes, not {use!r}")
        before, self.use = self.use, use
        try:
            yield
        finally:
            self.use = before

    def _wrap(self, name: str, fn: Any) -> Any:
        signature = inspect.signature(fn)

        @functools.wraps(fn)
        def call(*args: Any, **kwargs: Any) -> Any:
            if self._depth:  # e.g. Qwen3-VL's get_video_features calls get_image_features
                return fn(*args, **kwargs)
            self._depth += 1
            try:
                return self._call(name, fn, signature, args, kwargs)
            finally:
                self._depth -= 1

        return call

    def _call(self, name: str, fn: Any, signature: Any, args: Any, kwargs: Any) -> Any:
        import torch

        key = None
        if not torch.is_grad_enabled() and self.use != "writes":
            bound = signature.bind(*args, **kwargs)
            key = _freeze((name, tuple(sorted(bound.arguments.items()))))
        if key is not None and self.use == "none" and not self._hooked():
            hit = self._entries.get(key + self._weights())
            if hit is not None:
                self.reused += 1
                return hit[1]
        out = fn(*args, **kwargs)
        self.computed += 1
        if key is not None and (self.use == "reads" or not self._hooked()):
            self._entries[key + self._weights()] = ((args, kwargs), out)  # pins the inputs' ids
        return out

    def _weights(self) -> tuple[Any, ...]:
        return tuple((id(p), p._version) for p in self._params)

    def _hooked(self) -> bool:
        from torch.nn.modules import module as nn_module

        if nn_module._global_forward_hooks or nn_module._global_forward_pre_hooks:
            return True
        return any(
            not _recorder(hook)
            for m in self._modules
            for hooks in (m._forward_hooks, m._forward_pre_hooks)
            for hook in hooks.values()
        )


def _recorder(hook: Any) -> bool:
    """Whether ``hook`` is transformers' own output recorder.

    It is installed on first use and records only inside its capture context: it neither
    changes the pass nor needs to see it otherwise.
    """
    module = getattr(hook, "__module__", "") or ""
    return module.startswith("transformers.") and hook.__name__ == "output_capturing_hook"


class _Untrackable(Exception):
    pass


def _freeze(value: Any) -> tuple[Any, ...] | None:
    try:
        return (_frozen(value),)
    except _Untrackable:
        return None


def _frozen(value: Any) -> Any:
    import torch

    if isinstance(value, torch.Tensor):
        if value.is_inference():
            raise _Untrackable  # no version counter: an in-place change could not be seen
        where = (value.data_ptr(), tuple(value.shape), value.stride(), str(value.dtype))
        return ("tensor", id(value), value._version, where, str(value.device))
    if isinstance(value, list | tuple):
        return (type(value).__name__, tuple(_frozen(v) for v in value))
    if isinstance(value, dict):
        return ("dict", tuple(sorted((str(k), _frozen(v)) for k, v in value.items())))
    if value is None or isinstance(value, bool | int | float | str):
        return (type(value).__name__, value)
    raise _Untrackable  # an argument we cannot compare safely: never reuse
