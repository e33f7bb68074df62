"""Vision features computed once per batch and reused by every cell (sample-major runs).

Under ``generate`` transformers encodes images and videos *before* the prefill by calling the
model's own ``base_model.get_image_features`` / ``get_video_features`` (Qwen2/2.5/3-VL,
LLaVA, LLaVA-NeXT, LLaVA-OneVision, InternVL and the toy alike) and hands the outputs to the
forward as ``mm_encoder_outputs``. :class:`VisionMemo` wraps those two bound methods on the
model instance for the length of one batch (nothing is forked; the class methods are
untouched and the instance attributes are removed on exit) and returns the stored output when
a call is the same call again. Qwen3-VL's output carries its DeepStack features, so they are
reused with it.

A call is the same call when every argument is — tensors by identity (the very object, its
storage pointer, shape, stride, dtype, device and in-place version counter — the memo holds
a reference, so the id cannot be recycled), everything else by value — and the vision side
of the model is the same (:func:`~harness.models.vision_state.vision_state`: every module,
parameter and buffer by identity, storage pointer and version, every ``forward`` by
identity, plain attributes and the config by value). Different pixels, different processor
settings or modified vision weights therefore miss. Reuse is opt-in: nothing is reused

- for a cell whose intervention does not declare ``vision_use()`` (None: a plugin that may
  change the tower in a way no key sees, such as an edit of ``p.data`` in place) or declares
  ``"writes"``: its pass runs and is not stored; ``"reads"`` (it hooks the tower to read what
  it computes, e.g. SAP's pixel and ViT-attention priors) runs the pass with its hooks and
  stores the output for the cells after it; ``"none"`` reuses;
- while gradients are on, or for inputs or weights whose version cannot be tracked
  (inference tensors);
- while any module of the vision side carries a forward hook (other than transformers' own
  output recorders), or a global module hook is installed: something wants to see the pass,
  so it runs (and is not stored);
- after the model's class function was patched (the call goes to the patched function).

``check=True`` (``headscope run --check-vision-reuse``) recomputes every call that would be
reused and raises :class:`VisionReuseError`, naming both cells' interventions, unless the
stored output is bit-identical: for authors of interventions that declare ``"none"``.

Memory: at most one batch's vision outputs are held (cleared when the batch ends).
"""

from __future__ import annotations

import functools
import inspect
import types
from collections.abc import Iterator
from contextlib import contextmanager
from typing import Any, Literal

from harness.api.errors import UsageError
from harness.models.vision_state import Untrackable, frozen_value, vision_modules, vision_state

__all__ = ["VisionMemo", "VisionUse", "VisionReuseError", "ENCODER_FUNCTIONS"]

VisionUse = Literal["none", "reads", "writes"]
"""How an intervention touches the vision tower: not at all, reads its pass (hooks), or
changes what it computes (an intervention that declares nothing is treated as ``writes``)."""

ENCODER_FUNCTIONS = ("get_image_features", "get_video_features")
"""The model's own encoder entry points that ``generate`` calls before the prefill."""


class VisionReuseError(UsageError):
    """Reused vision features differ from a recomputation (the check switch)."""

    hint = (
        "an intervention that changes what the vision tower computes must not declare "
        "vision_use() 'none': declare 'writes', or leave vision_use() undeclared"
    )


class VisionMemo:
    """Per-batch memo of the vision encoder's outputs.

    Args:
        model: A HF ``*ForConditionalGeneration`` model.
        check: Recompute every call that would be reused and compare (see the module).

    Attributes:
        computed: Encoder calls that ran the vision tower (since construction).
        reused: Encoder calls answered from the memo.
        checked: Reused calls that were recomputed and found identical (``check``).
    """

    def __init__(self, model: Any, check: bool = False) -> None:
        self.model = model
        self.base = getattr(model, "base_model", model)
        self.check = check
        self.use: VisionUse | None = "none"
        self.label = ""
        self.computed = 0
        self.reused = 0
        self.checked = 0
        self._entries: dict[tuple[Any, ...], tuple[Any, Any]] = {}
        self._depth = 0

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
    def using(self, use: VisionUse | None, label: str = "") -> Iterator[None]:
        """Calls in the block follow ``use`` (the attached intervention's declaration).

        Args:
            use: ``vision_use()`` of the cell's intervention; None (not declared): as
                ``"writes"``.
            label: The cell's intervention (named by :class:`VisionReuseError`).
        """
        if use not in ("none", "reads", "writes", None):
            raise ValueError(f"vision use must be none, reads, writes or None, not {use!r}")
        before = self.use, self.label
        self.use, self.label = use, label
        try:
            yield
        finally:
            self.use, self.label = before

    def _wrap(self, name: str, fn: Any) -> Any:
        signature = inspect.signature(fn)
        original = getattr(type(self.base), name)

        @functools.wraps(fn)
        def call(*args: Any, **kwargs: Any) -> Any:
            now = getattr(type(self.base), name, None)
            if now is not original:  # the class function was patched: call it, no memo
                return types.MethodType(now, self.base)(*args, **kwargs)
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

        key = pins = None
        if not torch.is_grad_enabled() and self.use in ("none", "reads"):
            bound = signature.bind(*args, **kwargs)
            key = _freeze((name, tuple(sorted(bound.arguments.items()))))
            state = vision_state(self.model, self.base) if key is not None else None
            key, pins = (None, None) if state is None else (key + state[0], state[1])
        hooked = key is not None and self._hooked()
        if key is not None and self.use == "none" and not hooked:
            hit = self._entries.get(key)
            if hit is not None:
                if self.check:
                    self._compare(hit, fn(*args, **kwargs))
                self.reused += 1
                return hit[1]
        out = fn(*args, **kwargs)
        self.computed += 1
        if key is not None and (self.use == "reads" or not hooked):
            # the entry pins the inputs and the vision side's objects: no id is recycled
            self._entries[key] = ((args, kwargs, pins, self.label), out)
        return out

    def _compare(self, hit: tuple[Any, Any], fresh: Any) -> None:
        diff = _difference(hit[1], fresh)
        if diff is not None:
            stored = hit[0][3]
            raise VisionReuseError(
                f"vision features reused in the cell of intervention {self.label!r} differ "
                f"from a recomputation ({diff}); they were computed in the cell of "
                f"{stored!r}: one of the two changes the vision tower but declares "
                "vision_use() 'none'"
            )
        self.checked += 1

    def _hooked(self) -> bool:
        from torch.nn.modules import module as nn_module

        if nn_module._global_forward_hooks or nn_module._global_forward_pre_hooks:
            return True
        return any(
            not _recorder(hook)
            for m in vision_modules(self.base)
            for hooks in (m._forward_hooks, m._forward_pre_hooks)
            for hook in hooks.values()
        )


def _difference(a: Any, b: Any, where: str = "output") -> str | None:
    """Where ``a`` and ``b`` (encoder outputs) differ, or None when bit-identical."""
    import torch

    if isinstance(a, torch.Tensor) or isinstance(b, torch.Tensor):
        if not (isinstance(a, torch.Tensor) and isinstance(b, torch.Tensor)):
            return f"{where}: a tensor and a {type(b).__name__}"
        if a.shape != b.shape or a.dtype != b.dtype:
            return f"{where}: shape/dtype {tuple(a.shape)} {a.dtype} vs {tuple(b.shape)} {b.dtype}"
        if torch.equal(a, b):
            return None
        gap = (a.double() - b.double()).abs().max().item()
        return f"{where}: max |difference| {gap:.3g}"
    if isinstance(a, dict) and isinstance(b, dict):  # ModelOutput included
        if list(a) != list(b):
            return f"{where}: fields {list(a)} vs {list(b)}"
        found = (_difference(a[k], b[k], f"{where}.{k}") for k in a)
        return next((d for d in found if d is not None), None)
    if isinstance(a, list | tuple) and isinstance(b, list | tuple):
        if len(a) != len(b):
            return f"{where}: {len(a)} vs {len(b)} items"
        found = (_difference(x, y, f"{where}[{i}]") for i, (x, y) in enumerate(zip(a, b)))
        return next((d for d in found if d is not None), None)
    return None if a == b else f"{where}: {a!r} vs {b!r}"


def _recorder(hook: Any) -> bool:
    """Whether ``hook`` is transformers' own output recorder.

    It is installed on first use and records only inside its capture context: it neither
    changes the pass nor needs to see it otherwise.
    """
    module = getattr(hook, "__module__", "") or ""
    return module.startswith("transformers.") and hook.__name__ == "output_capturing_hook"


def _freeze(value: Any) -> tuple[Any, ...] | None:
    try:
        return (_frozen(value),)
    except Untrackable:
        return None


def _frozen(value: Any) -> Any:
    import torch

    if isinstance(value, torch.Tensor):
        if value.is_inference():
            raise Untrackable  # no version counter: an in-place change could not be seen
        where = (value.data_ptr(), tuple(value.shape), value.stride(), str(value.dtype))
        return ("tensor", id(value), value._version, where, str(value.device))
    if isinstance(value, list | tuple):
        return (type(value).__name__, tuple(_frozen(v) for v in value))
    if isinstance(value, dict):
        return ("dict", tuple(sorted((str(k), _frozen(v)) for k, v in value.items())))
    return frozen_value(value)  # plain values; anything else: never reuse
