"""Train the embedded ``toy`` LLaVA from scratch on the mini tasks (CPU, minutes; never in CI).

Phase 1 ("dense") trains everything with the answer loss plus an auxiliary loss: a linear probe
on the projector output predicts each image token's content (empty / text / colour×shape) —
without it the tiny CLIP tower does not learn to see in the time available. Optional losses on
heads (``harness.toy.training.head_losses``): evidence supervision at the question's object noun, a
reading bottleneck (only ``--readers`` may attend from the text to the image) and DropHead on the
other heads — together they put the model's retrieval in a few heads (the CoRe-head phenomenon we
measure). Phase 2 ("prune") adds a group-lasso penalty per head over its Q, K, V rows and O
columns. The shipped weights come from a chain of runs: ``scripts/train_toy_chain.sh``.

Batches go through the exact inference path: ``processor.apply_chat_template`` then
``processor(images=..., text=...)``. Resumable: checkpoints in ``--work`` every ``--ckpt-every``.

    nohup python scripts/train_toy.py > /tmp/toy_train.log 2>&1 &
"""

from __future__ import annotations

import argparse
import json
import math
import random
import sys
import time
from pathlib import Path

import torch
from tqdm import tqdm

sys.path.insert(0, str(Path(__file__).resolve().parent.parent))
from harness.toy.builders import ALL_TYPES  # noqa: E402
from harness.toy.scenes import GRID, KINDS, generate_sample  # noqa: E402
from harness.toy.training.batches import collate  # noqa: E402
from harness.toy.training.head_losses import (  # noqa: E402
    add_head_dropout,
    evidence_attention_loss,
    head_groups,
    parse_heads,
    read_mass,
)
from harness.toy.training.probe_losses import (  # noqa: E402
    content_probe_loss,
    evidence_probe_loss,
    image_index_loss,
    probe_width,
)
from harness.toy.vocab import build_processor, build_tokenizer, build_vocab  # noqa: E402


def build_model(tokenizer, args):
    """A LlavaForConditionalGeneration with a tiny CLIP tower and a tiny Llama decoder."""
    from transformers import CLIPVisionConfig, LlamaConfig, LlavaConfig
    from transformers import LlavaForConditionalGeneration as Llava

    vision = CLIPVisionConfig(
        hidden_size=args.vision_hidden, intermediate_size=4 * args.vision_hidden,
        num_hidden_layers=args.vision_layers, num_attention_heads=4, image_size=64,
        patch_size=16, projection_dim=args.vision_hidden,
    )  # fmt: skip
    text = LlamaConfig(
        vocab_size=len(tokenizer), hidden_size=args.hidden,
        intermediate_size=args.ffn * args.hidden,
        num_hidden_layers=args.layers, num_attention_heads=args.heads,
        num_key_value_heads=args.heads, max_position_embeddings=512, tie_word_embeddings=False,
        bos_token_id=tokenizer.bos_token_id, eos_token_id=tokenizer.eos_token_id,
        pad_token_id=tokenizer.pad_token_id,
    )  # fmt: skip
    config = LlavaConfig(
        vision_config=vision, text_config=text,
        image_token_index=tokenizer.convert_tokens_to_ids("<image>"),
        vision_feature_select_strategy="default", vision_feature_layer=-1, image_seq_length=16,
    )  # fmt: skip
    model = Llava(config)
    model.generation_config.pad_token_id = tokenizer.pad_token_id
    model.generation_config.eos_token_id = tokenizer.eos_token_id
    model.generation_config.bos_token_id = tokenizer.bos_token_id
    return model


def lr_at(step, args):
    if step < args.probe_warmup:  # only the fresh probes train (model frozen): a flat rate
        return args.lr
    if step < args.dense_steps:
        warm = min(1.0, (step + 1 - args.probe_warmup) / 200)
        frac = step / args.dense_steps
        return args.lr * warm * (0.1 + 0.9 * 0.5 * (1 + math.cos(math.pi * frac)))
    frac = (step - args.dense_steps) / max(1, args.prune_steps)
    return args.prune_lr * (0.1 + 0.9 * 0.5 * (1 + math.cos(math.pi * frac)))


def lam_at(step, args):
    if step < args.dense_steps:
        return 0.0
    return args.lam * min(1.0, (step - args.dense_steps) / max(1, args.prune_steps * 0.2))


@torch.no_grad()
def quick_eval(model, processor, split, n, seed, kinds=KINDS, oracle=None):
    """Teacher-forced exact match (= greedy exact match) per kind on ``n`` samples.

    ``oracle``: the training loop's oracle-feature dict; when given, evaluation uses oracle
    image features too (how far the decoder got), else the real vision path.
    """
    model.eval()
    acc = {}
    for kind in kinds:
        batch = collate(processor, [generate_sample(kind, split, i, seed) for i in range(n)])
        cells = batch.pop("cells")
        batch.pop("sup")
        if oracle is not None:
            oracle["cells"] = cells
        labels = batch.pop("labels")
        logits = model(**batch).logits[:, :-1]
        tgt = labels[:, 1:]
        ok = ((logits.argmax(-1) == tgt) | (tgt == -100)).all(-1)
        acc[kind] = ok.float().mean().item()
    model.train()
    return acc


def main(argv=None):
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument("--out", default="harness/assets/toy")
    ap.add_argument("--work", default="/tmp/toy_train")
    ap.add_argument("--seed", type=int, default=0)
    ap.add_argument("--data-seed", type=int, default=0)
    ap.add_argument("--threads", type=int, default=2)
    ap.add_argument("--batch", type=int, default=32)
    ap.add_argument("--dense-steps", type=int, default=5000)
    ap.add_argument("--prune-steps", type=int, default=2500)
    ap.add_argument("--lr", type=float, default=2e-3)
    ap.add_argument("--prune-lr", type=float, default=1e-3)
    ap.add_argument("--lam", type=float, default=3e-3)
    ap.add_argument("--aux", type=float, default=1.0)
    ap.add_argument("--hidden", type=int, default=128)
    ap.add_argument("--layers", type=int, default=4)
    ap.add_argument("--heads", type=int, default=8)
    ap.add_argument("--ffn", type=int, default=3, help="decoder FFN width / hidden")
    ap.add_argument("--vision-hidden", type=int, default=64)
    ap.add_argument("--vision-layers", type=int, default=2)
    ap.add_argument("--eval-every", type=int, default=500)
    ap.add_argument("--ckpt-every", type=int, default=250)
    ap.add_argument("--max-minutes", type=float, default=1e9)
    ap.add_argument("--stop-at", type=int, default=None, help="end here (exports to --out)")
    ap.add_argument("--image-boost", type=float, default=1.0, help="early single-image weight")
    ap.add_argument("--boost-steps", type=int, default=0)
    # Without smoothing the probe drives image-feature norms to ~500 (vs ~0.5 for text
    # embeddings), which drowns every decoder update on image tokens.
    ap.add_argument("--aux-smoothing", type=float, default=0.0)
    ap.add_argument("--aux-factored", action="store_true", help="colour + shape aux heads")
    # Pull each object token's projector output towards embed(colour) + embed(shape): image and
    # text tokens then share one space, so matching a question to an image token is the same
    # circuit as matching two words.
    ap.add_argument("--aux-embed", type=float, default=0.0, help="embedding-alignment weight")
    ap.add_argument("--aux-pos", action="store_true", help="probe also predicts row and column")
    # Frames/pages: a vision token knows its image only through the "image k" marker before it;
    # this probe on a decoder layer's output makes the layer copy k into every vision token.
    ap.add_argument("--aux-frame", type=float, default=0.0, help="image-index probe weight")
    ap.add_argument("--frame-layer", type=int, default=0)
    ap.add_argument("--aux-evidence", type=float, default=0.0, help="noun evidence-probe weight")
    ap.add_argument("--oracle-steps", type=int, default=0, help="steps fed oracle image features")
    ap.add_argument(
        "--init-from", default=None, help="ckpt.pt or exported model dir to take weights from"
    )
    # Fresh probes on a trained model push large gradients into it (every kind fell back for
    # ~500 steps in runs M1/M4); fitting the probes first on the frozen model avoids that.
    ap.add_argument("--probe-warmup", type=int, default=0, help="first steps: probes only")
    ap.add_argument("--attn-sup", type=float, default=0.0, help="evidence-attention loss weight")
    ap.add_argument("--sup-layer", type=int, default=1)
    # A retrieval bottleneck: only the --readers heads may move image content into the text
    # positions after the images; every other head pays --read-penalty × its attention mass there.
    ap.add_argument("--readers", default="", help="heads allowed to read the image: '1.0,1.1'")
    ap.add_argument("--read-penalty", type=float, default=0.0)
    # DropHead on every head but the readers: the rest of the network learns redundancy (as
    # large models have), retrieval does not.
    ap.add_argument("--head-drop", type=float, default=0.0, help="per-head dropout, not readers")
    ap.add_argument(
        "--sup-at",
        choices=("noun", "final"),
        default="noun",
        help="supervise attention from the question's object noun or the last token",
    )
    ap.add_argument("--sup-page", action="store_true", help="no object named: the page number")
    ap.add_argument("--kinds", default=",".join(KINDS), help="comma-separated kinds to train")
    ap.add_argument("--kind-weights", default="", help="sampling weights, e.g. 'vidstg=3,pope=0.5'")
    ap.add_argument("--export-only", action="store_true", help="save --work's checkpoint to --out")
    args = ap.parse_args(argv)
    kinds = args.kinds.split(",")
    try:
        kind_weight = {
            k: float(w) for k, w in (x.split("=") for x in args.kind_weights.split(",") if x)
        }
    except ValueError:
        ap.error(f"--kind-weights {args.kind_weights!r}: expected 'kind=weight,...'")
    if not 0 <= args.probe_warmup < args.dense_steps:
        ap.error(f"--probe-warmup {args.probe_warmup}: must be in [0, --dense-steps)")
    if unknown := sorted((set(kinds) | set(kind_weight)) - set(KINDS)):
        ap.error(f"unknown kinds {unknown}; expected some of {', '.join(KINDS)}")
    torch.set_num_threads(args.threads)
    torch.manual_seed(args.seed)
    work = Path(args.work)
    work.mkdir(parents=True, exist_ok=True)
    processor = build_processor(build_tokenizer(build_vocab()))
    model = build_model(processor.tokenizer, args)
    probe = torch.nn.Linear(args.hidden, probe_width(args.aux_factored, args.aux_pos))
    frame_probe = torch.nn.Linear(args.hidden, 8)  # up to 8 images per sample
    evidence_probe = torch.nn.Linear(args.hidden, 2 * GRID + 8)
    img_id = processor.image_token_id
    words = processor.tokenizer.convert_tokens_to_ids
    # Per cell class (empty, text, colour×shape), the two word ids it should look like.
    class_words = torch.tensor([[0, 0], [0, 0]] + [[words(c), words(s)] for c, s in ALL_TYPES])
    if args.init_from:  # warm start: decoder/vision weights only, fresh probe and optimiser
        if Path(args.init_from).is_dir():  # an exported model (e.g. a run's --work/dense)
            src = type(model).from_pretrained(args.init_from).state_dict()
        else:
            src = torch.load(args.init_from, weights_only=False)["model"]
        model.load_state_dict(src)
    params = [*model.parameters(), *probe.parameters()]
    params += list(frame_probe.parameters()) if args.aux_frame > 0 else []
    params += list(evidence_probe.parameters()) if args.aux_evidence > 0 else []
    opt = torch.optim.AdamW(params, lr=args.lr, weight_decay=0.01, betas=(0.9, 0.98))
    step = 0
    ckpt = work / "ckpt.pt"
    if ckpt.exists():
        state = torch.load(ckpt, weights_only=False)
        model.load_state_dict(state["model"]), probe.load_state_dict(state["probe"])
        for name, extra in (("frame_probe", frame_probe), ("evidence_probe", evidence_probe)):
            if name in state:  # checkpoints from before these probes existed lack them
                extra.load_state_dict(state[name])
        opt.load_state_dict(state["opt"])
        step = state["step"]
        torch.set_rng_state(state["rng"])
        print(f"resumed at step {step}", flush=True)
    if args.export_only:
        model.save_pretrained(args.out), processor.save_pretrained(args.out)
        print(f"exported step {step} to {args.out}")
        return
    captured = {}
    try:
        readers = parse_heads(args.readers, args.layers, args.heads)
    except ValueError as err:
        ap.error(f"--readers: {err}")
    if args.attn_sup > 0 or args.read_penalty > 0:
        model.set_attn_implementation("eager")
        for li, layer in enumerate(model.model.language_model.layers):
            layer.self_attn.register_forward_hook(
                lambda m, i, o, li=li: captured.__setitem__(li, o[1])
            )
    sup_heads = [h for la, h in readers if la == args.sup_layer] or list(range(args.heads))
    penalised = torch.ones(args.layers, args.heads, dtype=torch.bool)  # every head but readers
    for la, h in readers:
        penalised[la, h] = False
    if args.head_drop > 0:
        add_head_dropout(model, args.head_drop, spared=readers)
    feats = {}
    oracle = {}

    def grab_projection(module, inputs, output):
        feats["proj"] = output
        if "cells" not in oracle:
            return None
        # --oracle-steps: the decoder sees "perfect vision" (each object token is the sum of its
        # two word embeddings, other cells zero). It did not shorten the decoder's plateau
        # (TRAINING.md, runs O1-O4); kept to reproduce that finding.
        emb = model.get_input_embeddings().weight
        cells = oracle["cells"]
        fake = emb[class_words[cells]].sum(-2) * (cells >= 2).unsqueeze(-1)
        return fake.to(output.dtype)

    model.model.multi_modal_projector.register_forward_hook(grab_projection)
    model.model.language_model.layers[args.frame_layer].register_forward_hook(
        lambda m, i, o: feats.__setitem__("frame", o)
    )
    model.model.language_model.layers[args.sup_layer].register_forward_hook(
        lambda m, i, o: feats.__setitem__("read", o)
    )
    total = args.dense_steps + args.prune_steps
    log = open(work / "log.jsonl", "a")
    t0 = time.time()
    model.train()
    bar = tqdm(total=total, initial=step, mininterval=20, desc="train_toy")
    while step < total:
        rng = random.Random(f"{args.data_seed}|{step}")
        # Curriculum: single-image kinds (3x cheaper) are over-sampled early on.
        boost = args.image_boost if step < args.boost_steps else 1.0
        weights = [
            (boost if k in ("pope", "refcocog", "mmmu") else 1.0) * kind_weight.get(k, 1.0)
            for k in kinds
        ]
        kind = rng.choices(kinds, weights)[0]
        first = step * args.batch  # each step owns a disjoint index range of every kind
        samples = [
            generate_sample(kind, "train", first + i, args.data_seed) for i in range(args.batch)
        ]
        batch = collate(processor, samples, page_query=args.sup_page)
        cells, sup = batch.pop("cells"), batch.pop("sup")
        oracle.clear()
        if step < args.oracle_steps:
            oracle["cells"] = cells
        for g in opt.param_groups:
            g["lr"] = lr_at(step, args)
        model.requires_grad_(step >= args.probe_warmup)
        out = model(**batch)
        cells = cells.flatten()
        aux = content_probe_loss(
            probe(feats["proj"]).flatten(0, 1), cells, factored=args.aux_factored,
            smoothing=args.aux_smoothing, with_position=args.aux_pos,
        )  # fmt: skip
        if args.aux_embed > 0:  # object tokens only: empty cells and decoys have no words
            obj = cells >= 2
            emb = model.get_input_embeddings().weight.detach()
            target = emb[class_words[cells[obj]]].sum(1)
            got = feats["proj"].flatten(0, 1)[obj]
            aux = (
                aux
                + args.aux_embed * (got - target).pow(2).sum(-1).div(target.pow(2).sum(-1)).mean()
            )
        if args.aux_frame > 0:
            term = image_index_loss(frame_probe, feats["frame"], batch["input_ids"], img_id)
            aux = aux + args.aux_frame * term
        if args.aux_evidence > 0:
            ids = batch["input_ids"]
            term = evidence_probe_loss(evidence_probe, feats["read"], ids, img_id, sup)
            aux = aux + args.aux_evidence * term
        if args.attn_sup > 0:  # one of the supervised heads reads the evidence
            where = [(noun if args.sup_at == "noun" else q, ev) for q, ev, noun in sup]
            term = evidence_attention_loss(captured[args.sup_layer], where, sup_heads)
            aux = aux + args.attn_sup * term
        if args.read_penalty > 0:
            image_mass = read_mass(captured, batch["input_ids"], batch["attention_mask"], img_id)
            aux = aux + args.read_penalty * image_mass[penalised].sum()
        lam = lam_at(step, args)
        pen = head_groups(model).sum() if lam > 0 else torch.zeros(())
        loss = out.loss + args.aux * aux + lam * pen
        opt.zero_grad(set_to_none=True)
        loss.backward()
        torch.nn.utils.clip_grad_norm_(params, 1.0)
        opt.step()
        step += 1
        bar.update(1)
        bar.set_postfix(
            kind=kind, loss=f"{out.loss.item():.3f}", aux=f"{aux.item():.3f}", refresh=False
        )
        rec = {"step": step, "kind": kind, "loss": out.loss.item(), "aux": aux.item()}
        if lam > 0:
            rec["pen"] = pen.item()
        out_of_time = (time.time() - t0) / 60 > args.max_minutes
        if step % args.ckpt_every == 0 or step in (total, args.stop_at) or out_of_time:
            torch.save(
                dict(model=model.state_dict(), probe=probe.state_dict(), opt=opt.state_dict(),
                     frame_probe=frame_probe.state_dict(),
                     evidence_probe=evidence_probe.state_dict(),
                     step=step, rng=torch.get_rng_state(), args=vars(args)),
                work / "ckpt.tmp",
            )  # fmt: skip
            (work / "ckpt.tmp").replace(ckpt)
        if step % args.eval_every == 0 or step in (total, args.dense_steps, args.stop_at):
            oracle.clear()
            rec["val"] = quick_eval(model, processor, "validation", 64, args.data_seed, kinds)
            if step < args.oracle_steps:
                rec["val_oracle"] = quick_eval(
                    model, processor, "validation", 64, args.data_seed, kinds, oracle
                )
                oracle.clear()
            rec["head_norms"] = head_groups(model).detach().round(decimals=3).tolist()
            print(json.dumps(rec), flush=True)
        log.write(json.dumps(rec) + "\n")
        if step in (total, args.dense_steps, args.stop_at):
            # --stop-at ends a run early for good (its export); a time budget does not.
            final = step in (total, args.stop_at)
            dest = Path(args.out) if final else work / "dense"
            model.save_pretrained(dest)
            processor.save_pretrained(dest)
            print(f"saved {dest} at step {step}", flush=True)
        if step == args.stop_at:
            break
        if out_of_time:
            print(f"time budget reached at step {step}; rerun the command to continue", flush=True)
            break
    bar.close()


if __name__ == "__main__":
    main()
