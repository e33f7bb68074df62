"""Measure the shipped ``toy`` model: held-out accuracy per mini task, RAM, head ablation.

Script-level reference code (independent of headscope's dispatch): eager attention weights are
read from each decoder attention module's output; zero-ablation zeroes a head's slice of the
``o_proj`` input with a forward pre-hook.

- Accuracy: greedy generation through the chat template + processor path; exact match after
  whitespace normalisation, except boxes (IoU ≥ 0.5; vidstg also needs the exact frame span).
- RAM(h): mean over the question tokens of the attention mass on the evidence tokens (object
  patch for images and video frames of the tube; the whole evidence page for documents),
  averaged per kind, then over kinds (equal weight).
- Ablation: top-k / bottom-k by RAM and ``--draws`` seeded random-k sets; drop = base accuracy −
  ablated accuracy, accuracy averaged over the eight kinds.

    python scripts/eval_toy.py --n 64 --frac 0.1 --draws 20 --json /tmp/toy_eval.json
"""

from __future__ import annotations

import argparse
import json
import random
import re
import sys
from contextlib import contextmanager
from pathlib import Path

import torch

sys.path.insert(0, str(Path(__file__).resolve().parent.parent))
from harness.api.heads import head_label  # noqa: E402
from harness.toy.scenes import GRID, IMAGE_SIZE, KINDS, box_cell, generate_samples  # noqa: E402
from harness.toy.training.batches import prompt_of  # noqa: E402

DOCS = ("mmlongbench", "mmdocir")
_NUM = re.compile(r"\d+(?:\.\d+)?")


def load(model_dir):
    """Model (eager attention, eval mode) and processor from ``model_dir``, offline."""
    from transformers import AutoProcessor, LlavaForConditionalGeneration

    model = LlavaForConditionalGeneration.from_pretrained(model_dir, attn_implementation="eager")
    return model.eval(), AutoProcessor.from_pretrained(model_dir)


@torch.no_grad()
def generate(model, processor, samples, max_new_tokens=16):
    """Greedy answers (decoded new tokens, special tokens skipped) for a list of samples."""
    processor.tokenizer.padding_side = "left"
    inputs = processor(
        images=[im for s in samples for im in s.images],
        text=[prompt_of(processor, s) for s in samples],
        padding=True,
        return_tensors="pt",
    )
    out = model.generate(**inputs, max_new_tokens=max_new_tokens, do_sample=False)
    new = out[:, inputs["input_ids"].shape[1] :]
    return processor.batch_decode(new, skip_special_tokens=True)


def _iou(a, b):
    ix = max(0.0, min(a[2], b[2]) - max(a[0], b[0]))
    iy = max(0.0, min(a[3], b[3]) - max(a[1], b[1]))
    inter = ix * iy
    union = (a[2] - a[0]) * (a[3] - a[1]) + (b[2] - b[0]) * (b[3] - b[1]) - inter
    return inter / union if union > 0 else 0.0


def correct(sample, output: str) -> bool:
    """Whether ``output`` (as decoded) answers ``sample`` (see module docs)."""
    if sample.kind in ("refcocog", "vidstg"):
        nums = [float(x) for x in _NUM.findall(output)]
        truth = [float(x) for x in _NUM.findall(sample.answer)]
        if len(nums) != len(truth):
            return False
        n_span = len(truth) - 4
        if nums[:n_span] != truth[:n_span]:
            return False
        box = [v * IMAGE_SIZE for v in nums[n_span:]]
        ref = sample.box if sample.kind == "refcocog" else next(iter(sample.frame_boxes.values()))
        return _iou(box, ref) >= 0.5
    return " ".join(output.split()) == sample.answer


def accuracy(model, processor, data, batch=64):
    """Accuracy per kind over ``data`` ({kind: samples})."""
    acc = {}
    for kind, samples in data.items():
        outs = []
        for i in range(0, len(samples), batch):
            outs += generate(model, processor, samples[i : i + batch])
        acc[kind] = sum(correct(s, o) for s, o in zip(samples, outs)) / len(samples)
    return acc


@torch.no_grad()
def forced_accuracy(model, processor, data, batch=64):
    """Teacher-forced exact match per kind: every answer token and </s> is the argmax.

    Equals greedy exact match (greedy decoding reproduces the answer iff each step's argmax
    is the next answer token); used for the ablation sweeps because it needs one forward.
    """
    processor.tokenizer.padding_side = "right"
    acc = {}
    for kind, samples in data.items():
        hits = 0
        for i in range(0, len(samples), batch):
            chunk = samples[i : i + batch]
            enc = processor(
                images=[im for s in chunk for im in s.images],
                text=[prompt_of(processor, s) + " " + s.answer + " </s>" for s in chunk],
                padding=True,
                return_tensors="pt",
            )
            pred = model(**enc).logits[:, :-1].argmax(-1)
            ids, mask = enc["input_ids"][:, 1:], enc["attention_mask"][:, 1:]
            for j, s in enumerate(chunk):
                n = len(processor.tokenizer(s.answer, add_special_tokens=False)["input_ids"]) + 1
                end = int(mask[j].sum())
                hits += bool((pred[j, end - n : end] == ids[j, end - n : end]).all())
        acc[kind] = hits / len(samples)
    processor.tokenizer.padding_side = "left"
    return acc


def evidence_positions(sample, input_ids, image_token_id):
    """Token positions of Ω(V*): object cells, or the whole evidence page for documents."""
    starts = (input_ids == image_token_id).nonzero().flatten().tolist()[:: GRID * GRID]
    if sample.kind in DOCS:
        s = starts[sample.evidence_page]
        return list(range(s, s + GRID * GRID))
    pos = []
    for idx, box in sample.evidence:
        row, col = box_cell(box)
        pos.append(starts[idx] + row * GRID + col)
    return pos


def question_positions(processor, sample, input_ids):
    """Positions of the question tokens: just before the final ``ASSISTANT :``."""
    n_q = len(processor.tokenizer(sample.question, add_special_tokens=False)["input_ids"])
    end = len(input_ids) - 2
    return list(range(end - n_q, end))


@torch.no_grad()
def ram(model, processor, data):
    """RAM matrix [layers, heads]: per-kind mean over samples, then mean over kinds."""
    layers = model.model.language_model.layers
    captured = {}
    hooks = [
        layer.self_attn.register_forward_hook(lambda m, i, o, k=k: captured.__setitem__(k, o[1]))
        for k, layer in enumerate(layers)
    ]
    per_kind = []
    try:
        for samples in data.values():
            rows = []
            for s in samples:
                if not s.evidence:
                    continue  # a POPE "no": nothing to retrieve
                enc = processor(
                    images=list(s.images), text=prompt_of(processor, s), return_tensors="pt"
                )
                model(**enc)
                ids = enc["input_ids"][0]
                q = question_positions(processor, s, ids)
                ev = evidence_positions(s, ids, processor.image_token_id)
                mat = torch.stack(
                    [captured[k][0][:, q][:, :, ev].sum(-1).mean(-1) for k in range(len(layers))]
                )
                rows.append(mat)
            if rows:
                per_kind.append(torch.stack(rows).mean(0))
    finally:
        for h in hooks:
            h.remove()
    return torch.stack(per_kind).mean(0)


@contextmanager
def zero_heads(model, heads):
    """Zero-ablate ``heads`` [(layer, head)]: their slice of the o_proj input is set to 0."""
    layers = model.model.language_model.layers
    hooks = []
    for li in sorted({la for la, _ in heads}):
        att = layers[li].self_attn
        idx = [h for la, h in heads if la == li]

        def pre(mod, args, idx=idx, d=att.head_dim):
            x = args[0].clone()
            for h in idx:
                x[..., h * d : (h + 1) * d] = 0
            return (x, *args[1:])

        hooks.append(att.o_proj.register_forward_pre_hook(pre))
    try:
        yield
    finally:
        for h in hooks:
            h.remove()


def main(argv=None):
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument("--model", default="harness/assets/toy")
    ap.add_argument("--split", default="test")
    ap.add_argument("--n", type=int, default=64, help="samples per kind")
    ap.add_argument("--n-ram", type=int, default=32, help="samples per kind for RAM")
    ap.add_argument("--frac", type=float, default=0.1)
    ap.add_argument("--draws", type=int, default=20)
    ap.add_argument("--seed", type=int, default=0)
    ap.add_argument("--threads", type=int, default=1)
    ap.add_argument("--kinds", default=",".join(KINDS), help="comma-separated kinds")
    ap.add_argument("--json", default=None)
    ap.add_argument("--generate-sweep", action="store_true", help="greedy decoding in sweeps")
    args = ap.parse_args(argv)
    torch.set_num_threads(args.threads)
    model, processor = load(args.model)
    data = {
        k: generate_samples(k, args.split, args.n, seed=args.seed) for k in args.kinds.split(",")
    }
    base = accuracy(model, processor, data)
    mean = lambda a: sum(a.values()) / len(a)  # noqa: E731
    print(
        "accuracy", json.dumps({k: round(v, 4) for k, v in base.items()}), f"mean {mean(base):.4f}"
    )
    ram_data = {k: v[: args.n_ram] for k, v in data.items()}
    mat = ram(model, processor, ram_data)
    n_layers, n_heads = mat.shape
    order = [divmod(i, n_heads) for i in mat.flatten().argsort(descending=True).tolist()]
    k = max(1, round(args.frac * n_layers * n_heads))
    print(
        "RAM top heads", [(head_label(la, h), round(mat[la, h].item(), 3)) for la, h in order[:8]]
    )
    res = {"base": base, "k": k, "ram": mat.tolist(), "top": order[:k], "bottom": order[-k:]}
    forced = forced_accuracy(model, processor, data)
    print("teacher-forced accuracy", json.dumps(forced), f"mean {mean(forced):.4f}")
    sweep = accuracy if args.generate_sweep else forced_accuracy
    res["sweep_metric"] = "greedy" if args.generate_sweep else "teacher-forced exact match"
    res["base_sweep"] = base if args.generate_sweep else forced
    for name, heads in (("top", order[:k]), ("bottom", order[-k:])):
        with zero_heads(model, heads):
            res[f"acc_{name}"] = sweep(model, processor, data)
    rng = random.Random(args.seed)
    res["acc_random"] = []
    for _ in range(args.draws):
        heads = rng.sample(order, k)
        with zero_heads(model, heads):
            res["acc_random"].append(sweep(model, processor, data))
    ref = mean(res["base_sweep"])
    drop = {n: ref - mean(res[f"acc_{n}"]) for n in ("top", "bottom")}
    drop["random"] = sum(ref - mean(a) for a in res["acc_random"]) / args.draws
    res["drop"] = drop
    res["ratio_top_random"] = drop["top"] / drop["random"] if drop["random"] > 0 else float("inf")
    print(
        f"k={k} drop top {drop['top']:.4f} random {drop['random']:.4f} bottom {drop['bottom']:.4f}"
    )
    print(f"ratio top/random {res['ratio_top_random']:.2f}")
    print("acc_top", json.dumps({a: round(b, 3) for a, b in res["acc_top"].items()}))
    if args.json:
        Path(args.json).write_text(json.dumps(res, indent=1))


if __name__ == "__main__":
    main()
