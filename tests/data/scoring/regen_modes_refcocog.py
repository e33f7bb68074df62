"""Regenerate tests/data/scoring/modes_refcocog.json: RefCOCOg ``official`` per family rule.

The replies are written below; every expected value comes from running the released code:

- ``internvl``: the scoring loop of OpenGVLab/InternVL ``internvl_chat/eval/refcoco/
  evaluate_grounding.py`` (``evaluate_chat_model``'s ``for i, output in
  enumerate(merged_outputs)`` loop, its ``box_iou`` and its ``PATTERN``), executed as written.
- ``qwen_vl``: the same loop of QwenLM/Qwen-VL ``eval_mm/evaluate_grounding.py`` (module body).
- ``lmms_eval`` (LLaVA-NeXT / OneVision): lmms-eval 0.7.3's own
  ``tasks/refcocog/utils_rec.py`` functions (``refcoco_bbox_rec_process_result``,
  ``compute_iou``, ``compute_accuracy``, ``compute_center_accuracy``).

torchvision cannot be installed here, so ``box_area`` (imported by both evaluators from
``torchvision.ops.boxes``) is supplied as torchvision defines it (pytorch/vision @ 01b12c6
``torchvision/ops/boxes.py::box_area``: float32 boxes are not upcast, area = (x2 - x1) *
(y2 - y1)); everything else runs on real torch (float32 tensors). To observe ``parse_rate``
the loop's ``(0., 0., 0., 0.)`` fallback assignments are prefixed with ``_fallback = True``
(nothing else is changed). Neither file is vendored. Usage:

    git --git-dir=<InternVL mirror> show 2410d1d:internvl_chat/eval/refcoco/\\
        evaluate_grounding.py > DIR/internvl_evaluate_grounding.py
    git --git-dir=<Qwen-VL mirror> show aa00ed0:eval_mm/evaluate_grounding.py \\
        > DIR/qwen_vl_evaluate_grounding.py
    python tests/data/scoring/regen_modes_refcocog.py --refs DIR   # needs torch, lmms_eval
"""

from __future__ import annotations

import argparse
import ast
import json
import re
from pathlib import Path

HERE = Path(__file__).resolve().parent
REFS = {
    "internvl": (
        "OpenGVLab/InternVL",
        "2410d1dbf208f0e799459aff9376e5747dbf41a2",
        "internvl_chat/eval/refcoco/evaluate_grounding.py",
        "internvl_evaluate_grounding.py",
    ),
    "qwen_vl": (
        "QwenLM/Qwen-VL",
        "aa00ed04091eea5fcdd32985e7915f1c53e7d599",
        "eval_mm/evaluate_grounding.py",
        "qwen_vl_evaluate_grounding.py",
    ),
}
TORCHVISION = "pytorch/vision@01b12c69834e344157469cea63cc74dd88cafd71 torchvision/ops/boxes.py"
LMMS = "lmms_eval 0.7.3 tasks/refcocog/utils_rec.py"
FAMILY = {"internvl": "internvl", "qwen_vl": "qwen2_vl", "lmms_eval": "llava_next"}
# Image (width, height) and gold [x, y, w, h] (RefCOCOg's form) of the cases.
SETUPS = {
    "A": ((640, 427), [128.4, 96.2, 256.0, 192.5]),  # grid 1000: ≈ [200.6, 225.3, 600.6, 676.1]
    "B": ((1000, 1000), [100.0, 100.0, 400.0, 400.0]),  # integer box: exact-0.5 cases
    "C": ((500, 375), [0.0, 300.5, 120.25, 74.5]),  # touches the left and bottom edges
}

# (kind, setup, reply)
INTERNVL = [
    ("short", "A", "[[201, 225, 601, 676]]"),
    ("native", "A", "<ref>the brown dog</ref><box>[[201, 225, 601, 676]]</box>"),
    ("brackets", "A", "[201, 225, 601, 676]"),
    ("brackets", "A", "[[[201, 225, 601, 676]]]"),
    ("spaces", "A", "[[ 201 , 225 , 601 , 676 ]]"),
    ("swapped", "A", "[[601, 676, 201, 225]]"),
    ("swapped", "A", "[[601, 225, 201, 676]]"),
    ("outside", "A", "[[150, 200, 1200, 700]]"),
    ("outside", "A", "[[1100, 1100, 1300, 1300]]"),
    ("outside", "A", "[[-50, 225, 601, 676]]"),
    ("no_box", "A", "The dog is on the left of the sofa."),
    ("empty", "A", ""),
    ("several", "A", "[[10, 10, 50, 50]] and [[201, 225, 601, 676]]"),
    ("several", "A", "[[201, 225, 601, 676]] and [[10, 10, 50, 50]]"),
    ("fractions", "A", "[[0.2, 0.23, 0.6, 0.68]]"),
    ("fractions", "A", "[0.3, 0.225, 0.6, 0.676]"),
    ("fractions", "A", "[[0, 0, 1, 2]]"),
    ("fractions", "A", "[[1, 1, 1, 1]]"),
    ("fractions", "A", "[[0.5, 0.5, 1.5, 1.5]]"),
    ("fractions", "A", "[[0, 0, 0, 0]]"),
    ("markdown", "A", "**[[201, 225, 601, 676]]**"),
    ("markdown", "A", "```\n[[201, 225, 601, 676]]\n```"),
    ("lowercase", "A", "box: [[201, 225, 601, 676]]"),
    ("uppercase", "A", "BOX: [[201, 225, 601, 676]]"),
    ("cot", "A", "The brown dog lies near the sofa, so its box is [[201, 225, 601, 676]]."),
    ("cot", "A", "Step [1]: find the dog. Box: [[201, 225, 601, 676]]"),
    ("cot", "A", "[[x1, y1, x2, y2]] = [[201, 225, 601, 676]]"),
    ("other_language", "A", "狗的位置是[[201, 225, 601, 676]]。"),
    ("other_language", "A", "[[２０１, ２２５, ６０１, ６７６]]"),
    ("other_language", "A", "[[201，225，601，676]]"),
    ("qwen_form", "A", "(201,225),(601,676)"),
    ("qwen_form", "A", "<|box_start|>(201,225),(601,676)<|box_end|>"),
    ("exponent", "A", "[[2.01e2, 2.25e2, 6.01e2, 6.76e2]]"),
    ("leading_dot", "A", "[[.2, .225, .6, .676]]"),
    ("underscore", "A", "[[201, 225, 601, 6_76]]"),
    ("five_numbers", "A", "[[201, 225, 601, 676, 1]]"),
    ("three_numbers", "A", "[[201, 225, 601]]"),
    ("words", "A", "[[a, b, c, d]]"),
    ("newline", "A", "[[201,\n225, 601, 676]]"),
    ("decimals", "A", "[[200.6, 225.3, 600.6, 676.1]]"),
    ("degenerate", "A", "[[201, 225, 201, 676]]"),
    ("nan", "A", "[[nan, 225, 601, 676]]"),
    ("inf", "A", "[[inf, 225, 601, 676]]"),
    ("whole_image", "A", "[[0, 0, 999, 999]]"),
    ("boundary", "A", "[[334, 225, 734, 676]]"),
    ("boundary", "A", "[[333, 225, 733, 676]]"),
    ("boundary", "B", "[[100, 100, 500, 300]]"),
    ("boundary", "B", "[[100, 100, 500, 299]]"),
    ("boundary", "B", "[[100, 100, 300, 500]]"),
    ("edge", "C", "[[0, 801, 240, 999]]"),
    ("edge", "C", "[[0, 801, 240, 1000]]"),
]

QWEN_VL = [
    ("short", "A", "(201,225),(601,676)"),
    (
        "native",
        "A",
        "<|object_ref_start|>the brown dog<|object_ref_end|><|box_start|>(201,225),(601,676)"
        "<|box_end|>",
    ),
    ("native", "A", "<ref>the brown dog</ref><box>(201,225),(601,676)</box>"),
    ("native", "A", "the brown dog(201,225),(601,676)"),
    ("spaces", "A", "(201, 225),(601, 676)"),
    ("spaces", "A", "(201,225), (601,676)"),
    ("spaces", "A", "( 201 , 225 ),( 601 , 676 )"),
    ("swapped", "A", "(601,676),(201,225)"),
    ("swapped", "A", "(601,225),(201,676)"),
    ("outside", "A", "(150,200),(1200,700)"),
    ("outside", "A", "(1100,1100),(1300,1300)"),
    ("outside", "A", "(-50,225),(601,676)"),
    ("no_box", "A", "The dog is on the left of the sofa."),
    ("empty", "A", ""),
    ("several", "A", "(10,10),(50,50) and (201,225),(601,676)"),
    ("several", "A", "(201,225),(601,676),(700,700)"),
    ("brackets", "A", "[201, 225, 601, 676]"),
    ("brackets", "A", "[[201, 225, 601, 676]]"),
    ("json", "A", '{"bbox_2d": [201, 225, 601, 676], "label": "dog"}'),
    ("three_numbers", "A", "(201,225,3),(601,676)"),
    ("one_number", "A", "(201),(601,676)"),
    ("exponent", "A", "(2.01e2,2.25e2),(6.01e2,6.76e2)"),
    ("leading_dot", "A", "(.201,.225),(.601,.676)"),
    ("underscore", "A", "(2_01,225),(601,676)"),
    ("markdown", "A", "**(201,225),(601,676)**"),
    ("lowercase", "A", "box: (201,225),(601,676)"),
    ("cot", "A", "The brown dog lies near the sofa, so its box is (201,225),(601,676)."),
    ("cot", "A", "The dog (brown) is at (201,225),(601,676)"),
    ("cot", "A", "First (1), then: (201,225),(601,676)"),
    ("other_language", "A", "狗在(201,225),(601,676)。"),
    ("other_language", "A", "(２０１,２２５),(６０１,６７６)"),
    ("other_language", "A", "（201,225），（601,676）"),
    ("decimals", "A", "(200.6,225.3),(600.6,676.1)"),
    ("degenerate", "A", "(201,225),(201,676)"),
    ("whole_image", "A", "(0,0),(999,999)"),
    ("whole_image", "A", "(0,0),(1000,1000)"),
    ("nan", "A", "(nan,225),(601,676)"),
    ("newline", "A", "(201,225),\n(601,676)"),
    ("boundary", "A", "(334,225),(734,676)"),
    ("boundary", "A", "(333,225),(733,676)"),
    ("boundary", "B", "(100,100),(500,300)"),
    ("boundary", "B", "(100,100),(500,299)"),
    ("boundary", "B", "(100,100),(499,299)"),
    ("edge", "C", "(0,801),(240,999)"),
    ("edge", "C", "(0,801),(240,1000)"),
]

LMMS_EVAL = [
    ("short", "A", "[0.2, 0.225, 0.6, 0.676]"),
    ("short", "A", "[0.20, 0.23, 0.60, 0.68]"),
    ("nospaces", "A", "[0.2,0.225,0.6,0.676]"),
    ("spaces", "A", "[ 0.2 , 0.225, 0.6, 0.676 ]"),
    ("spaces", "A", "[0.2 ,0.225, 0.6, 0.676]"),
    ("brackets", "A", "[[0.2, 0.225, 0.6, 0.676]]"),
    ("swapped", "A", "[0.6, 0.676, 0.2, 0.225]"),
    ("swapped", "A", "[0.6, 0.225, 0.2, 0.676]"),
    ("outside", "A", "[0.15, 0.2, 1.2, 0.7]"),
    ("outside", "A", "[1.1, 1.1, 1.3, 1.3]"),
    ("outside", "A", "[-0.1, 0.225, 0.6, 0.676]"),
    ("no_box", "A", "The dog is on the left of the sofa."),
    ("empty", "A", ""),
    ("several", "A", "[0.01, 0.01, 0.05, 0.05] and [0.2, 0.225, 0.6, 0.676]"),
    ("several", "A", "[0.2, 0.225, 0.6, 0.676] and [0.01, 0.01, 0.05, 0.05]"),
    ("integers", "A", "[201, 225, 601, 676]"),
    ("integers", "A", "[0, 0, 1, 1]"),
    ("leading_dot", "A", "[.2, .225, .6, .676]"),
    ("exponent", "A", "[2e-1, 0.225, 0.6, 0.676]"),
    ("plus", "A", "[+0.2, 0.225, 0.6, 0.676]"),
    ("qwen_form", "A", "(0.2,0.225),(0.6,0.676)"),
    ("qwen_form", "A", "<|box_start|>(201,225),(601,676)<|box_end|>"),
    ("three_numbers", "A", "[0.2, 0.225, 0.6]"),
    ("five_numbers", "A", "[0.2, 0.225, 0.6, 0.676, 0.9]"),
    ("markdown", "A", "**[0.2, 0.225, 0.6, 0.676]**"),
    ("lowercase", "A", "bounding box: [0.2, 0.225, 0.6, 0.676]"),
    ("cot", "A", "The brown dog lies near the sofa, so its box is [0.2, 0.225, 0.6, 0.676]."),
    ("cot", "A", "Step [1]: find the dog. Box: [0.2, 0.225, 0.6, 0.676]"),
    ("other_language", "A", "狗的位置是[0.2, 0.225, 0.6, 0.676]。"),
    ("other_language", "A", "[０.２, ０.２２５, ０.６, ０.６７６]"),
    ("other_language", "A", "[0,2, 0,225, 0,6, 0,676]"),
    ("decimals", "A", "[0.2006, 0.2253, 0.6006, 0.6761]"),
    ("degenerate", "A", "[0.2, 0.225, 0.2, 0.676]"),
    ("whole_image", "A", "[0.0, 0.0, 1.0, 1.0]"),
    ("newline", "A", "[0.2,\n0.225, 0.6, 0.676]"),
    ("boundary", "A", "[0.334, 0.225, 0.734, 0.676]"),
    ("boundary", "A", "[0.333, 0.225, 0.733, 0.676]"),
    ("boundary", "B", "[0.1, 0.1, 0.5, 0.3]"),
    ("boundary", "B", "[0.1, 0.1, 0.5, 0.299]"),
    ("boundary", "B", "[0.1, 0.1, 0.3, 0.5]"),
    ("edge", "C", "[0.0, 0.801, 0.2405, 1.0]"),
    ("edge", "C", "[0.0, 0.801, 0.24, 0.999]"),
]


def xyxy(xywh: list[float]) -> list[float]:
    x, y, w, h = xywh
    return [x, y, x + w, y + h]  # RefCOCOg's [x, y, w, h] as both evaluators' jsonl stores it


class Released:
    """One released evaluator's scoring loop, run on one reply at a time."""

    def __init__(self, path: Path) -> None:
        import torch

        tree = ast.parse(path.read_text(encoding="utf-8"))
        defs = [n for n in tree.body if isinstance(n, ast.FunctionDef) and n.name == "box_iou"]
        assigns = [n for n in ast.walk(tree) if isinstance(n, ast.Assign)]
        pattern = next(
            n for n in assigns if [getattr(t, "id", "") for t in n.targets] == ["PATTERN"]
        )
        loop = next(
            n
            for n in ast.walk(tree)
            if isinstance(n, ast.For) and ast.unparse(n.iter) == "enumerate(merged_outputs)"
        )
        _mark_fallbacks(loop)

        def box_area(boxes):  # torchvision.ops.boxes.box_area (float32 is not upcast)
            return (boxes[:, 2] - boxes[:, 0]) * (boxes[:, 3] - boxes[:, 1])

        self.ns: dict = {"torch": torch, "re": re, "box_area": box_area}
        module = ast.Module(body=[*defs, pattern], type_ignores=[])
        exec(compile(module, str(path), "exec"), self.ns)
        self.loop = compile(ast.fix_missing_locations(ast.Module([loop], [])), str(path), "exec")

    def run(self, reply: str, gold: list[float], size: tuple[int, int]) -> dict:
        ns = dict(self.ns)
        width, height = size
        output = {"answer": reply, "gt_bbox": gold, "hw": (height, width)}
        ns.update(merged_outputs=[output], correct=0, total_cnt=0, _fallback=False)
        exec(self.loop, ns)
        box = [float(v) for v in ns["predict_bbox"].view(-1).tolist()]
        g = [float(v) for v in ns["torch"].tensor(gold, dtype=ns["torch"].float32).tolist()]
        cx, cy = (box[0] + box[2]) / 2, (box[1] + box[3]) / 2
        return {
            "iou": ns["iou"],
            "acc@0.5": float(ns["correct"]),
            "box": box,
            "center_acc": float(g[0] <= cx <= g[2] and g[1] <= cy <= g[3]),
            "parse_rate": 0.0 if ns["_fallback"] else 1.0,
        }


def _mark_fallbacks(loop: ast.For) -> None:
    """Prefix each ``predict_bbox = (0., 0., 0., 0.)`` with ``_fallback = True``."""
    for node in ast.walk(loop):
        for field in ("body", "orelse", "handlers", "finalbody"):
            block = getattr(node, field, None)
            if not isinstance(block, list):
                continue
            out = []
            for stmt in block:
                if isinstance(stmt, ast.Assign) and ast.unparse(stmt) == (
                    "predict_bbox = (0.0, 0.0, 0.0, 0.0)"
                ):
                    out.append(ast.parse("_fallback = True").body[0])
                out.append(stmt)
            setattr(node, field, out)


def lmms_case(reply: str, gold: list[float], size: tuple[int, int]) -> dict:
    from lmms_eval.tasks.refcocog import utils_rec as ref

    w, h = size
    norm = [gold[0] / w, gold[1] / h, gold[2] / w, gold[3] / h]  # its preprocess_dataset
    got = ref.refcoco_bbox_rec_process_result(
        {"answer": "x", "question_id": 1, "bbox": norm}, [reply]
    )["refcoco_IoU"]
    return {
        "iou": ref.compute_iou(got["bbox"], got["pred"]),
        "acc@0.5": float(ref.compute_accuracy(got["bbox"], got["pred"], 0.5)),
        "box": [float(v) for v in got["pred"]],
        "center_acc": float(ref.compute_center_accuracy(got["bbox"], got["pred"])),
        # its fallback is the int list [0, 0, 0, 0]; a parsed box holds floats
        "parse_rate": 0.0 if all(type(v) is int for v in got["pred"]) else 1.0,
    }


def main() -> None:
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument("--refs", required=True, type=Path)
    refs = ap.parse_args().refs
    runners = {rule: Released(refs / REFS[rule][3]) for rule in REFS}
    cite = {
        rule: f"{repo}@{commit[:7]} {path} (scoring loop, box_iou, PATTERN; run as released)"
        for rule, (repo, commit, path, _) in REFS.items()
    }
    cite["lmms_eval"] = f"{LMMS}::refcoco_bbox_rec_process_result, compute_iou (its own code)"
    cases = []
    for rule, replies in (("internvl", INTERNVL), ("qwen_vl", QWEN_VL), ("lmms_eval", LMMS_EVAL)):
        for kind, setup, reply in replies:
            size, xywh = SETUPS[setup]
            gold = xyxy(xywh)
            got = lmms_case(reply, gold, size) if rule == "lmms_eval" else None
            got = got or runners[rule].run(reply, gold, size)
            cases.append(
                {
                    "family": FAMILY[rule],
                    "rule": rule,
                    "kind": kind,
                    "output": reply,
                    "size": list(size),
                    "target": xywh,
                    "expected": got,
                    "provenance": cite[rule],
                }
            )
    data = {
        "provenance": cite
        | {
            "box_area": f"{TORCHVISION}::box_area, reimplemented (torchvision not installable)",
            "extensions": "center_acc (centre of the evaluator's pixel box in the float32 gold "
            "box) and parse_rate (the loop did not take its (0, 0, 0, 0) fallback) are "
            "headscope's, observed on the released code's own box",
        },
        "regenerate": "python tests/data/scoring/regen_modes_refcocog.py --refs DIR "
        "(see its docstring)",
        "setups": {k: {"size": list(s), "target": t} for k, (s, t) in SETUPS.items()},
        "cases": cases,
    }
    out = HERE / "modes_refcocog.json"
    out.write_text(json.dumps(data, indent=1, ensure_ascii=False) + "\n", encoding="utf-8")
    print(f"wrote {out} ({len(cases)} cases)")


if __name__ == "__main__":
    main()
