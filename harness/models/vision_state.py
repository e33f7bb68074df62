"""What the vision-feature memo can see of a model's vision side, as a comparable key.

:func:`vision_state` snapshots everything of the vision side (every module of the model's
base outside its language model: tower, projector, merger) that decides what the encoder
computes and can be compared without reading tensor contents:

- each module by identity and class, its ``forward`` both as an instance attribute (a swapped
  ``forward``) and as the class function (a patched class), its ``training`` flag and its
  other plain attributes (numbers, strings, flags) by value, function attributes by identity;
- each parameter and buffer by name, identity, storage pointer, shape, stride, dtype, device
  and in-place version counter (a new ``nn.Parameter``, ``p.data = other``, ``p.mul_()``);
- the model config's and its sub-configs' plain values (``vision_feature_layer``,
  ``_attn_implementation``, ...) and the identity of every registered attention function.

Two snapshots are equal only if none of that changed. What a snapshot cannot see — an edit of
``p.data`` in place (it moves neither pointer nor version), a patched ``torch`` function, an
attribute of another type — is why reuse is opt-in (an intervention that does not declare is
recomputed) and why the check switch exists (:class:`~harness.models.vision_memo.VisionMemo`).
"""

from __future__ import annotations

from typing import Any

__all__ = ["vision_modules", "vision_state", "Untrackable", "frozen_value"]


class Untrackable(Exception):
    """Something the key cannot compare safely: the call is recomputed."""


def vision_modules(base: Any) -> list[Any]:
    """The modules of ``base`` outside its language model, ``base`` itself first."""
    lm = getattr(base, "language_model", None) or getattr(base, "text_model", None)
    out, seen = [base], {id(base)}
    for child in base.children():
        if child is lm:
            continue
        for m in child.modules():
            if id(m) not in seen:
                seen.add(id(m))
                out.append(m)
    return out


def vision_state(model: Any, base: Any) -> tuple[tuple[Any, ...], list[Any]] | None:
    """The comparable state of ``base``'s vision side and the objects its ids name.

    Args:
        model: The ``*ForConditionalGeneration`` model (its config is read).
        base: Its base model (``model.base_model``).

    Returns:
        ``(key, pins)``: the key holds ids and values; ``pins`` holds the objects whose ids it
        holds (kept alive with a stored entry, so no id is recycled while the entry lives).
        None when something cannot be tracked (a tensor without a version counter).
    """
    from transformers.modeling_utils import ALL_ATTENTION_FUNCTIONS

    pins: list[Any] = []
    parts: list[Any] = []
    try:
        for i, m in enumerate(vision_modules(base)):
            cls = type(m)
            own = vars(m).get("forward")
            pins.extend((m, cls, own))
            attrs = () if i == 0 else _plain_attrs(m, pins)  # base: generate-time state
            parts.append((id(m), id(cls), id(own), id(getattr(cls, "forward", None)), attrs))
            for kind in ("_parameters", "_buffers"):
                for name, t in vars(m)[kind].items():
                    pins.append(t)
                    parts.append((kind, name, _tensor_key(t)))
        parts.append(_config_key(model.config))
        for name, fn in ALL_ATTENTION_FUNCTIONS.items():
            pins.append(fn)
            parts.append(("attention", name, id(fn)))
    except Untrackable:
        return None
    return tuple(parts), pins


def _tensor_key(t: Any) -> Any:
    if t is None:
        return None
    if t.is_inference() or t.is_sparse:
        raise Untrackable
    where = (t.data_ptr(), tuple(t.shape), t.stride(), str(t.dtype), str(t.device))
    return (id(t), t._version, where)


_PLAIN = frozenset({type(None), bool, int, float, str})
_PLAIN_BASES = (bool, int, float, str)


def _plain_attrs(m: Any, pins: list[Any]) -> tuple[Any, ...]:
    import types

    functions = (types.FunctionType, types.BuiltinFunctionType, types.MethodType)
    out = []
    for name, value in vars(m).items():
        if name[0] == "_":
            continue
        kind = type(value)  # type(), not isinstance: a config's __getattribute__ is slow
        if kind in _PLAIN:
            out.append((name, kind, value))
        elif issubclass(kind, functions):
            pins.append(value)
            out.append((name, "fn", id(value)))
        else:
            try:
                out.append((name, frozen_value(value)))
            except Untrackable:
                continue  # another kind of object (a config, a tensor attribute): not compared
    return tuple(out)


def _config_key(config: Any) -> tuple[Any, ...]:
    from transformers import PretrainedConfig

    out = []
    configs = [("", config)]
    while configs:
        owner, cfg = configs.pop()
        for name, value in vars(cfg).items():
            kind = type(value)
            if kind in _PLAIN:
                out.append((owner, name, kind, value))
            elif issubclass(kind, PretrainedConfig):
                if not owner:  # a sub-config (vision_config, text_config): its values too
                    configs.append((name, value))
            else:
                try:
                    out.append((owner, name, frozen_value(value)))
                except Untrackable:
                    continue
    return tuple(out)


def frozen_value(value: Any) -> Any:
    """A hashable, comparable form of a plain value (numbers, strings, lists, dicts of them).

    Raises:
        Untrackable: Anything else.
    """
    kind = type(value)
    if kind in _PLAIN or issubclass(kind, _PLAIN_BASES):
        return (kind.__name__, value)
    if issubclass(kind, list | tuple):
        return (kind.__name__, tuple(frozen_value(v) for v in value))
    if issubclass(kind, dict):
        return ("dict", tuple(sorted((str(k), frozen_value(v)) for k, v in value.items())))
    if kind.__module__ == "torch" and kind.__name__ == "dtype":
        return ("dtype", str(value))
    raise Untrackable
