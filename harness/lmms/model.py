"""``HeadscopeLMM``: an lmms-eval model over headscope's adapters, with an intervention attached.

Selected with ``--model headscope``; everything else comes from ``--model_args`` (lmms-eval's
response cache keys on the model name plus the parsed model_args, so every setting that changes
outputs — family, checkpoint, dtype, intervention and all its arguments — must be written there):

- ``family`` (required, e.g. ``family=qwen2_5_vl``; ``family=toy``: the bundled model),
  ``pretrained``, ``revision``, ``dtype``, ``device``,
  ``device_map``, ``attn_implementation``: the :class:`~harness.api.specs.ModelSpec`;
  ``family_args``: a JSON object of family options (``ModelSpec.args``);
- ``intervention``: a registered name (default ``none``) with ``intervention_args`` as a JSON
  object, or one JSON object ``{"name": ..., "args": {...}}``;
- ``batch_size``, ``max_new_tokens`` (budget when the task gives none), ``video_frames``,
  ``measure_prefill`` (time a separate prefill forward per sample; default true).

Generation is greedy (headscope's adapters); stop strings (``until``) cut the decoded text.
Each result carries token counts; per-sample prefill times are kept in :attr:`timings`, averaged
into lmms-eval's ``throughput`` block (``avg_prefill_ms``) and, if the environment variable
``HEADSCOPE_LMMS_TIMING_LOG`` names a file, appended to it as JSON lines (one file per rank).
"""

from __future__ import annotations

import json
import os
import time
from typing import Any

from lmms_eval.api.instance import GenerationResult, Instance, TokenCounts
from lmms_eval.api.model import lmms

from harness.api.specs import SpecError
from harness.lmms._convert import (
    budget_of,
    continuation_logprob,
    cut_at_stops,
    intervention_spec,
    json_arg,
    processor_frame_sampler,
    timed_prefill,
    to_request,
)

__all__ = ["HeadscopeLMM", "TIMING_LOG_ENV"]

TIMING_LOG_ENV = "HEADSCOPE_LMMS_TIMING_LOG"
STRING_ARGS = frozenset(
    {"family", "pretrained", "revision", "dtype", "device", "device_map", "attn_implementation"}
)
"""model_args whose value is text, kept as typed (:meth:`HeadscopeLMM.create_from_arg_string`)."""


class HeadscopeLMM(lmms):
    """lmms-eval model wrapping a headscope :class:`~harness.api.model.ModelAdapter`.

    Args:
        family: Registered headscope model family (required).
        pretrained: Hub id or local directory (None: the family's default).
        revision: Hub revision.
        dtype: ``float32``/``bfloat16``/``float16``/``auto``.
        device: ``cpu``/``cuda``/``cuda:1``; default ``cuda`` when available. Under a
            multi-process launcher ``cuda`` becomes ``cuda:LOCAL_RANK``.
        device_map: ``from_pretrained`` device map (``auto`` for models larger than a device).
        attn_implementation: ``sdpa`` or ``eager``.
        family_args: JSON object of family options.
        intervention: Intervention name or JSON object (see the module docstring).
        intervention_args: JSON object of the intervention's arguments.
        batch_size: Requests per ``generate`` call.
        max_new_tokens: Budget when the task's generation kwargs set none.
        measure_prefill: Time a separate prefill forward for every sample.
        video_frames: Frames sampled from a video file, as the model's HF processor does.
        max_batch_size: Accepted for lmms-eval compatibility; unused.

    Raises:
        harness.api.specs.SpecError: unknown or malformed model_args.
    """

    is_simple = True

    def __init__(
        self,
        family: str | None = None,
        pretrained: str | None = None,
        revision: str | None = None,
        dtype: str = "float32",
        device: str | None = None,
        device_map: str | None = None,
        attn_implementation: str = "sdpa",
        family_args: Any = None,
        intervention: Any = "none",
        intervention_args: Any = None,
        batch_size: int | str = 1,
        max_new_tokens: int = 256,
        measure_prefill: bool = True,
        video_frames: int = 8,
        max_batch_size: int | None = None,
        **unknown: Any,
    ) -> None:
        super().__init__()
        if unknown:
            raise SpecError(f"headscope model_args: unknown key(s) {sorted(unknown)}")
        if family is None or not str(family).strip():
            raise SpecError(
                "headscope model_args: 'family' is required (e.g. family=qwen2_5_vl, or "
                "family=toy for the bundled model); see 'headscope list models'"
            )
        from harness.api.intervention import build_intervention
        from harness.api.model import load_adapter
        from harness.api.specs import ModelSpec
        from harness.run.distributed import device_for_rank, shard_from_env

        self.intervention_spec = intervention_spec(intervention, intervention_args)
        self._intervention = build_intervention(self.intervention_spec)  # fail before loading
        args = json_arg(family_args, "family_args") if family_args else {}
        if not isinstance(args, dict):
            raise SpecError("model_args family_args must be a JSON object")
        if not str(batch_size).isdigit() or int(batch_size) < 1:
            raise SpecError(f"headscope: batch_size must be a positive integer, got {batch_size!r}")
        self.batch_size_per_gpu = int(batch_size)
        self._rank, self._world_size = shard_from_env()
        spec = ModelSpec(
            name=str(family),
            pretrained=None if pretrained is None else str(pretrained),
            revision=None if revision is None else str(revision),
            dtype=str(dtype),
            device=device_for_rank(str(device or _default_device())),
            device_map=device_map or None,
            attn_implementation=str(attn_implementation),
            args=args,
        )
        self.adapter = load_adapter(spec)
        self.max_new_tokens = int(max_new_tokens)
        self.measure_prefill = bool(measure_prefill)
        self.video_frames = int(video_frames)
        self._frame_indices = processor_frame_sampler(self.adapter, self.video_frames)
        self.timings: list[dict[str, Any]] = []
        """Per-sample records: task, doc_id, prefill_ms, total_ms, input/output tokens."""
        self.intervention_resolved: dict[str, Any] = {}
        self._warned: set[str] = set()

    @classmethod
    def create_from_arg_string(
        cls, arg_string: str, additional_config: dict[str, Any] | None = None
    ) -> HeadscopeLMM:
        """lmms-eval's ``--model_args`` reading, except that string settings stay as typed.

        lmms-eval turns every number-like value into a number (``revision=1.10`` becomes 1.1,
        ``pretrained=2024.10`` 2024.1); the family, checkpoint, revision, dtype and device
        settings keep their text exactly (outer quotes removed), as ``headscope run`` does.
        """
        from lmms_eval import utils

        from harness.api.kv import raw_value, split_top_level

        args = utils.simple_parse_args_string(arg_string)
        for part in split_top_level(arg_string.strip()):
            key, eq, _ = part.partition("=")
            if eq and key.strip() in STRING_ARGS:
                args[key.strip()] = raw_value(part)
        extra = {k: v for k, v in (additional_config or {}).items() if v is not None}
        return cls(**args, **extra)

    @property
    def batch_size(self) -> int:
        """Requests per generate call."""
        return self.batch_size_per_gpu

    @property
    def device(self) -> Any:
        """The model's (first) device."""
        import torch

        model = getattr(self.adapter, "model", None)
        return getattr(model, "device", None) or torch.device("cpu")

    # -- lmms-eval API ------------------------------------------------------------------------
    def generate_until(self, requests: list[Instance]) -> list[GenerationResult]:
        """Greedy generation for lmms-eval requests, with the intervention attached."""
        from tqdm.auto import tqdm

        results: list[GenerationResult] = []
        bar = tqdm(total=len(requests), disable=self.rank != 0, desc="headscope generate")
        with self._intervention.attach(self.adapter) as resolved:
            self.intervention_resolved = dict(resolved or {})
            size = self.batch_size_per_gpu
            for start in range(0, len(requests), size):
                chunk = requests[start : start + size]
                results.extend(self._generate_batch(chunk))
                bar.update(len(chunk))
        bar.close()
        return results

    def loglikelihood(self, requests: list[Instance]) -> list[tuple[float, bool]]:
        """``(log p(continuation | context), is_greedy)`` per request (HF adapters only)."""
        if not hasattr(self.adapter, "render"):
            raise NotImplementedError(f"{type(self.adapter).__name__} has no loglikelihood path")
        out = []
        with self._intervention.attach(self.adapter):
            for inst in requests:
                context, target, doc_to_visual, doc_id, task, split = inst.args
                doc = self.task_dict[task][split][doc_id]
                continuation = target if isinstance(target, str) else target(doc)
                visuals = doc_to_visual(doc) if doc_to_visual else []
                request = to_request(context, visuals, 1, self.video_frames, self._frame_indices)
                out.append(continuation_logprob(self.adapter, request, continuation))
        return out

    def generate_until_multi_round(self, requests: list[Instance]) -> list[str]:
        """Not supported: headscope requests are single-turn."""
        raise NotImplementedError("headscope: multi-round generation is not supported")

    # -- internals ------------------------------------------------------------------------------
    def _generate_batch(self, chunk: list[Instance]) -> list[GenerationResult]:
        from lmms_eval.models.model_utils.gen_metrics import log_metrics

        requests, stops, where = [], [], []
        for inst in chunk:
            context, gen_kwargs, doc_to_visual, doc_id, task, split = inst.args
            gen_kwargs = dict(gen_kwargs or {})
            self._check_greedy(gen_kwargs)
            doc = self.task_dict[task][split][doc_id]
            visuals = doc_to_visual(doc) if doc_to_visual else []
            budget = budget_of(gen_kwargs, self.max_new_tokens)
            requests.append(
                to_request(context, visuals, budget, self.video_frames, self._frame_indices)
            )
            stops.append(gen_kwargs.get("until"))
            where.append((task, doc_id))
        prefill = [self._prefill_ms(r) for r in requests]
        start = time.perf_counter()
        generations = self.adapter.generate(requests)
        elapsed = time.perf_counter() - start
        results = []
        share_ms = elapsed * 1e3 / len(chunk)
        for gen, until, ms, (task, doc_id) in zip(generations, stops, prefill, where, strict=True):
            counts = TokenCounts(input_tokens=gen.prompt_tokens, output_tokens=gen.output_tokens)
            text = cut_at_stops(gen.text, until)
            results.append(GenerationResult(text=text, token_counts=counts))
            self._record(
                {
                    "task": task,
                    "doc_id": doc_id,
                    "intervention": self.intervention_spec.label,
                    "prefill_ms": ms,
                    "total_ms": share_ms if gen.total_ms is None else gen.total_ms,
                    "input_tokens": gen.prompt_tokens,
                    "output_tokens": gen.output_tokens,
                }
            )
        tokens = sum(g.output_tokens for g in generations)
        measured = [m for m in prefill if m is not None]
        extra = {"prefill_ms": sum(measured) / len(measured)} if measured else None
        log_metrics(elapsed, tokens, tokens / elapsed if elapsed > 0 else 0.0, extra)
        return results

    def _prefill_ms(self, request: Any) -> float | None:
        model = getattr(self.adapter, "model", None)
        if not self.measure_prefill or model is None or not hasattr(self.adapter, "prepare"):
            return None
        return timed_prefill(model, self.adapter.prepare([request]))

    def _record(self, row: dict[str, Any]) -> None:
        self.timings.append(row)
        path = os.environ.get(TIMING_LOG_ENV)
        if path:
            if self.world_size > 1:
                path = f"{path}.rank{self.rank}"
            with open(path, "a", encoding="utf-8") as fh:
                fh.write(json.dumps(row) + "\n")

    def _check_greedy(self, gen_kwargs: dict[str, Any]) -> None:
        sampling = bool(gen_kwargs.get("do_sample")) or (gen_kwargs.get("temperature") or 0) > 0
        beams = int(gen_kwargs.get("num_beams") or 1) > 1
        for flag, what in ((sampling, "sampling"), (beams, "beam search")):
            if flag and what not in self._warned:
                self._warned.add(what)
                from loguru import logger

                logger.warning(f"headscope generates greedily: the task's {what} is ignored")


def _default_device() -> str:
    import torch

    return "cuda" if torch.cuda.is_available() else "cpu"
