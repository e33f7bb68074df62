"""Batched generation over a HF model: greedy by default, each row cut to its own budget."""

from __future__ import annotations

import time
from collections.abc import Sequence
from typing import Any

from harness.api.payloads import Generation

__all__ = ["generate_greedy"]


def generate_greedy(
    model: Any,
    tokenizer: Any,
    inputs: Any,
    max_new_tokens: Sequence[int],
    *,
    time_prefill: bool = True,
    ids_out: list[list[int]] | None = None,
    gen_kwargs: dict[str, Any] | None = None,
    seed: int = 0,
) -> list[Generation]:
    """Greedy, batched generation; decodes only the new tokens of each row.

    Args:
        model: A HF generative model.
        tokenizer: Its tokenizer (for EOS/pad ids and decoding).
        inputs: Left-padded model inputs (``input_ids``, ``attention_mask``, ...).
        max_new_tokens: Per-row budgets; the batch runs to the largest and each row is cut
            to its own budget (greedy decoding makes that the same as running it alone).
        time_prefill: Measure the first forward (the prefill) with forward hooks.
        ids_out: If given, receives each row's new token ids (cut at EOS, EOS included).
        gen_kwargs: Run-wide generation settings (``RunSpec.gen_kwargs``): ``temperature``,
            ``do_sample``, ``top_p``, ``num_beams`` go to ``generate``; ``max_new_tokens`` is
            applied by the caller. Empty: greedy.
        seed: With ``do_sample``, torch's RNG is seeded with it before the batch.

    Returns:
        One :class:`Generation` per row; ``total_ms`` is the batch wall time divided by rows.
    """
    import torch

    cfg = model.generation_config
    eos = cfg.eos_token_id if cfg.eos_token_id is not None else tokenizer.eos_token_id
    eos_ids = set(eos if isinstance(eos, list | tuple) else [eos])
    pad = cfg.pad_token_id if cfg.pad_token_id is not None else tokenizer.pad_token_id
    stamps: list[float] = []
    hooks = []
    if time_prefill:  # stamps only around the first forward, so decode steps never sync

        def stamp(want: int) -> Any:
            return lambda *_: stamps.append(_now(model)) if len(stamps) == want else None

        hooks = [model.register_forward_pre_hook(stamp(0)), model.register_forward_hook(stamp(1))]
    decoding: dict[str, Any] = {"do_sample": False, "num_beams": 1, "temperature": None,
                                "top_p": None, "top_k": None}  # fmt: skip
    gen = {k: v for k, v in (gen_kwargs or {}).items() if k != "max_new_tokens"}
    decoding.update(gen)
    if decoding["do_sample"]:
        torch.manual_seed(seed)
    cache = _streamed_cache(model)
    if cache is not None:
        decoding["past_key_values"] = cache
    start = time.perf_counter()
    try:
        with torch.inference_mode():
            out = model.generate(
                **inputs,
                max_new_tokens=max(max_new_tokens),
                pad_token_id=pad,
                eos_token_id=sorted(eos_ids),
                **decoding,
            )
    finally:
        for hook in hooks:
            hook.remove()
    total_ms = (time.perf_counter() - start) * 1000.0
    prefill_ms = (stamps[1] - stamps[0]) * 1000.0 if len(stamps) >= 2 else None
    seqs = out.sequences if hasattr(out, "sequences") else out
    new = seqs[:, inputs["input_ids"].shape[1] :].tolist()
    prompt_lens = inputs["attention_mask"].sum(dim=1).tolist()
    results = []
    for row, budget, n_prompt in zip(new, max_new_tokens, prompt_lens):
        row = row[:budget]
        stop = next((i + 1 for i, t in enumerate(row) if t in eos_ids), len(row))
        text = tokenizer.decode(row[:stop], skip_special_tokens=True)
        if ids_out is not None:
            ids_out.append(row[:stop])
        results.append(
            Generation(
                text=text,
                prompt_tokens=int(n_prompt),
                output_tokens=stop,
                prefill_ms=prefill_ms,
                total_ms=total_ms / len(new),
            )
        )
    return results


def _streamed_cache(model: Any) -> Any:
    """The streamed KV cache when the installed plan streams decode, else None.

    Hybrid ``decode=stream`` streams; without it (or with ``stream_reference``) the model
    builds its own cache as before.
    """
    from harness.attention.dispatch import current_plan

    plan = current_plan(model)
    if plan is None or not any(
        lp.stream is not None and not lp.stream.reference for lp in plan.layers.values()
    ):
        return None
    from harness.attention.stream_cache import stream_cache

    return stream_cache(model)


def _now(model: Any) -> float:
    import torch

    if torch.cuda.is_available() and getattr(model.device, "type", "cpu") == "cuda":
        torch.cuda.synchronize(model.device)
    return time.perf_counter()
