"""Try every image-text-to-text class of the installed transformers on a tiny random instance.

For each ``AutoModelForImageTextToText`` mapping entry (model type → class) this builds a tiny
random instance from the type's default config (``scripts/scan_tiny.py``: widths 64, 4 / 2
heads of 16, one decoder layer per distinct layer type, geometry kept) and reports:

- ``build``: the tiny instance was built (else the error);
- ``routed``: with a probe attention function registered in ``AttentionInterface`` (and
  ``sdpa_mask`` in ``AttentionMaskInterface``) and selected for the text decoder only, as
  ``use_dispatch`` selects headscope's (``{"text_config": probe}``, the other sub-configs
  keep theirs), a text-only forward calls the probe from the decoder's layers; ``once``: each
  called module once per forward, with ``module.layer_idx`` set and distinct. ``calls/layers``
  counts decoder layers called / decoder layers. The forward is the whole model's
  (``input_ids`` + ``attention_mask``), or its decoder's where the model needs pixels;
- ``sliding``: a call received a ``sliding_window`` kwarg that is not None;
- ``grid``: ``use_dispatch`` + ``plan_scope``: an empty plan equals the text decoder's own
  attention (``reference``: sdpa, or eager where the class has no sdpa) exactly, a window
  covering the whole sequence on every head within 1e-5, every head zero-ablated differs by
  more than 1e-4 (else the refusal or error);
- ``family``: the headscope family units declaring this class (``harness.models.unit``), and
  ``footprints``: whether ``tests/integration/test_footprints.py`` runs them (every unit).

Config facts are read from the default (full-size) config: layer kinds (``layer_types``),
encoder-decoder / cross-attention (``check_decoder_only``). Each class runs in a forked child
with a time limit; a failure is a row. Prints a Markdown table and counts, or JSON.

    python scripts/scan_families.py                 # all classes, ~3 min on one core
    python scripts/scan_families.py --only llava --only qwen3_5 --json
"""

from __future__ import annotations

import argparse
import json
import multiprocessing as mp
import os
import sys
import time
import traceback
from collections import Counter
from typing import Any

sys.path.insert(0, os.path.dirname(os.path.abspath(__file__)))
from scan_report import families, footprint_families, groups, summary, table  # noqa: E402
from scan_tiny import default_builds, tiny_model  # noqa: E402

PROBE = "famscan_probe"
SLIDING = ("sliding_attention", "chunked_attention", "hybrid_sliding")
_calls: list[tuple[Any, ...]] = []


def _probe(module, query, key, value, attention_mask, dropout=0.0, scaling=None, **kwargs):
    from transformers.integrations.sdpa_attention import sdpa_attention_forward

    sw = kwargs.get("sliding_window")
    _calls.append((id(module), getattr(module, "layer_idx", None), key.shape[1], sw))
    return sdpa_attention_forward(
        module, query, key, value, attention_mask, dropout=dropout, scaling=scaling, **kwargs
    )


def _error(err: BaseException) -> str:
    """One line: the type and the first two lines of the message, cut at 200 characters."""
    lines = [line.strip() for line in str(err).splitlines() if line.strip()]
    return f"{type(err).__name__}: {' '.join(lines[:2])}"[:200]


def _select(model: Any, name: str) -> None:
    """Text decoder → ``name``, other towers keep theirs (as ``use_dispatch`` does)."""
    subs = getattr(model.config, "sub_configs", {}) or {}
    if "text_config" in subs:
        impl = {"text_config": name}
        for sub in subs:
            if sub != "text_config":
                cfg = getattr(model.config, sub, None)
                impl[sub] = getattr(cfg, "_attn_implementation", None) or "sdpa"
        model.set_attn_implementation(impl)
    else:
        model.set_attn_implementation(name)


def _output(model: Any, inputs: dict[str, Any], how: str) -> Any:
    import torch

    with torch.no_grad():
        target = model if how == "model" else model.get_decoder()
        out = target(**inputs)
    for name in ("logits", "last_hidden_state"):
        if getattr(out, name, None) is not None:
            return getattr(out, name).float()
    return out[0].float()


def _config_facts(model_type: str) -> dict[str, Any]:
    from types import SimpleNamespace

    from transformers import AutoConfig

    from harness.api.anatomy import NON_ATTENTION_TYPES, UnsupportedModelError, check_decoder_only

    config = AutoConfig.for_model(model_type)
    text = config.get_text_config()
    types = list(getattr(text, "layer_types", None) or [])
    facts = {
        "layer_types": sorted(set(map(str, types))),
        "config_sliding": any(t in SLIDING for t in types),
        "no_head_layers": any(t in NON_ATTENTION_TYPES for t in types),
        "refused": None,
    }
    try:
        check_decoder_only(SimpleNamespace(config=config))
    except UnsupportedModelError as err:
        facts["refused"] = "encoder-decoder" if "encoder-decoder" in str(err) else "cross-attention"
    return facts


def _layer_list(decoder: Any) -> list[Any]:
    import torch

    for name, module in decoder.named_modules():
        last = name.rsplit(".", 1)[-1]
        if isinstance(module, torch.nn.ModuleList) and last in ("layers", "layer", "h", "block"):
            return list(module)
    return [decoder]


def _routing(model: Any, inputs: dict[str, Any]) -> tuple[dict[str, Any], str]:
    from harness.api.anatomy import decoder_layers

    _select(model, PROBE)
    how, error = "model", None
    for how in ("model", "decoder"):
        _calls.clear()
        try:
            _output(model, inputs, how)
            error = None
            break
        except Exception as err:  # noqa: BLE001 - a row, not a crash
            error = f"{how} forward: {_error(err)}"
    try:
        layers = list(decoder_layers(model))
    except ValueError:  # headscope cannot find them: the decoder's first layer list
        layers = _layer_list(model.get_decoder())
    owner = {id(m): i for i, layer in enumerate(layers) for m in layer.modules()}
    text = [c for c in _calls if c[0] in owner]
    counts = Counter(c[0] for c in text)
    idx = [c[1] for c in text]
    return {
        "forward": None if error else how,
        "forward_error": error,
        "routed": bool(text),
        "once": bool(text)
        and set(counts.values()) == {1}
        and None not in idx
        and len(set(idx)) == len(idx),
        "layers_called": len({owner[c[0]] for c in text}),
        "decoder_layers": len(layers),
        "other_calls": len(_calls) - len(text),
        "sliding": any(c[3] is not None for c in text),
    }, how


def _grid(model: Any, inputs: dict[str, Any], how: str, own: str) -> dict[str, Any]:
    from harness.api.anatomy import UnsupportedModelError, geometry_of
    from harness.attention.dispatch import Plan, plan_scope, use_dispatch
    from harness.attention.plan import Ablation, LayerPlan, Window

    _select(model, own)  # the reference: the text decoder's own (sdpa where it has it)
    ref = _output(model, inputs, how)
    try:
        use_dispatch(model)
    except UnsupportedModelError as err:
        return {"grid": "refused", "grid_detail": str(err)[:160]}
    geo = geometry_of(model)
    heads = range(geo.num_heads)
    seq = inputs["input_ids"].shape[1]
    plans = {
        "empty": Plan(),
        "window": Plan(
            {ly: LayerPlan(window={h: Window(seq) for h in heads}) for ly in geo.head_layers}
        ),
        "zero": Plan(
            {ly: LayerPlan(ablate={h: Ablation("zero") for h in heads}) for ly in geo.head_layers}
        ),
    }
    diff = {}
    for name, plan in plans.items():
        with plan_scope(model, plan):
            diff[name] = float((_output(model, inputs, how) - ref).abs().max())
    ok = diff["empty"] == 0 and diff["window"] <= 1e-5 and diff["zero"] > 1e-4
    return {"grid": "ok" if ok else "differs", "grid_detail": diff}


def scan_one(model_type: str, class_name: str) -> dict[str, Any]:
    """One row: build, routing, grid (see the module docstring). Runs in a child process."""
    import torch

    from harness.api.anatomy import text_config
    from harness.attention.dispatch import ensure_registered

    torch.set_num_threads(1)
    row: dict[str, Any] = {"model_type": model_type, "class": class_name}
    try:
        start = time.perf_counter()
        model = tiny_model(model_type, class_name)
        row["build"] = "ok"
        row["params_m"] = round(sum(p.numel() for p in model.parameters()) / 1e6, 1)
        row["build_s"] = round(time.perf_counter() - start, 1)
    except Exception as err:  # noqa: BLE001
        row["build"] = _error(err)
        row["default_build"] = default_builds(model_type, class_name)
        return row
    ensure_registered()
    row["reference"] = text_config(model)._attn_implementation
    g = torch.Generator().manual_seed(0)
    ids = torch.randint(5, 100, (1, 12), generator=g)
    inputs = {"input_ids": ids, "attention_mask": torch.ones_like(ids)}
    try:
        routing, how = _routing(model, inputs)
        row.update(routing)
        if routing["forward"] is not None:
            row.update(_grid(model, inputs, how, row["reference"]))
    except Exception as err:  # noqa: BLE001
        row["grid"] = _error(err)
        row["trace"] = traceback.format_exc(limit=-3)
    return row


def _child(conn: Any, model_type: str, class_name: str) -> None:
    conn.send(scan_one(model_type, class_name))
    conn.close()


def _run(model_type: str, class_name: str, limit: float) -> dict[str, Any]:
    ctx = mp.get_context("fork")
    recv, send = ctx.Pipe(duplex=False)
    proc = ctx.Process(target=_child, args=(send, model_type, class_name))
    proc.start()
    send.close()
    row = None
    try:
        if recv.poll(limit):
            row = recv.recv()
    except EOFError:  # the child died
        pass
    proc.join(5)
    timed_out = proc.is_alive()
    if timed_out:
        proc.kill()
        proc.join()
    if row is None:
        why = f"timeout after {limit:.0f} s" if timed_out else f"child exit {proc.exitcode}"
        row = {"model_type": model_type, "class": class_name, "build": why}
    return {**row, **_config_facts(model_type)}


def main(argv: list[str] | None = None) -> int:
    """Scan, then print the table and counts (or ``--json``)."""
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--only", action="append", default=[], help="a model type (repeatable)")
    parser.add_argument("--json", action="store_true", help="print rows and counts as JSON")
    parser.add_argument("--limit", type=float, default=120.0, help="seconds per class")
    args = parser.parse_args(argv)

    import torch
    from transformers.models.auto.modeling_auto import MODEL_FOR_IMAGE_TEXT_TO_TEXT_MAPPING_NAMES

    from harness.attention.dispatch import ensure_registered

    torch.set_num_threads(1)
    from transformers import AttentionInterface, AttentionMaskInterface
    from transformers.masking_utils import sdpa_mask

    AttentionInterface.register(PROBE, _probe)
    AttentionMaskInterface.register(PROBE, sdpa_mask)
    ensure_registered()
    mapping = dict(sorted(MODEL_FOR_IMAGE_TEXT_TO_TEXT_MAPPING_NAMES.items()))
    unknown = [m for m in args.only if m not in mapping]
    if unknown:
        parser.error(f"unknown model types {unknown} (known: {', '.join(mapping)})")
    units, footprinted = families(), footprint_families()
    rows = []
    for model_type, class_name in mapping.items():
        if args.only and model_type not in args.only:
            continue
        row = _run(model_type, class_name, args.limit)
        row["family"] = units.get(class_name, [])
        row["footprints"] = bool(set(row["family"]) & footprinted)
        rows.append(row)
        print(f"{model_type}: {row['build']}, grid {row.get('grid')}", file=sys.stderr)
    import transformers

    versions = {"transformers": transformers.__version__, "torch": torch.__version__}
    counts = summary(rows)
    if args.json:
        out = {**versions, "counts": counts, "groups": groups(rows), "rows": rows}
        print(json.dumps(out, indent=1, default=str))
    else:
        print(f"transformers {transformers.__version__}, torch {torch.__version__}\n")
        print(table(rows))
        print()
        for key, value in counts.items():
            print(f"- {key}: {value}")
        print()
        for key, names in groups(rows).items():
            print(f"- {key}: {', '.join(names) or '-'}")
    return 0


if __name__ == "__main__":
    sys.exit(main())
