"""The shipped toy LLaVA loads offline and answers held-out mini-task samples."""

import re

import pytest

from harness.toy import ASSET_DIR, KINDS, generate_samples
from harness.toy.scenes import IMAGE_SIZE

torch = pytest.importorskip("torch")
N, MIN_CORRECT = 16, 14
# The shipped weights say in TRAINING.md whether they are final; until then only the kinds listed
# on its "KINDS AT THE BAR:" line are checked and the others are skipped loudly (never passed
# silently). Remove the STATUS marker when the fully trained model ships.
_TRAINING = (ASSET_DIR / "TRAINING.md").read_text()
UNDERTRAINED = "STATUS: **UNDERTRAINED" in _TRAINING
_BAR = re.search(r"^KINDS AT THE BAR: (.*)$", _TRAINING, re.M)
KINDS_AT_BAR = set(KINDS) if not UNDERTRAINED else set(_BAR.group(1).split(", ") if _BAR else ())


def test_kinds_at_bar_are_known():
    assert KINDS_AT_BAR <= set(KINDS), KINDS_AT_BAR - set(KINDS)


@pytest.fixture(scope="module")
def toy():
    from transformers import AutoProcessor, LlavaForConditionalGeneration, LlavaProcessor

    torch.set_num_threads(1)
    model = LlavaForConditionalGeneration.from_pretrained(ASSET_DIR, local_files_only=True)
    processor = AutoProcessor.from_pretrained(ASSET_DIR, local_files_only=True)
    assert isinstance(processor, LlavaProcessor)
    assert type(LlavaProcessor.from_pretrained(ASSET_DIR)) is LlavaProcessor
    return model.eval(), processor


def _prompt(processor, s):
    content = [{"type": "image"} for _ in s.images] + [{"type": "text", "text": s.question}]
    messages = [{"role": "user", "content": content}]
    return processor.apply_chat_template(messages, add_generation_prompt=True, tokenize=False)


def _answers(model, processor, samples):
    processor.tokenizer.padding_side = "left"
    inputs = processor(
        images=[im for s in samples for im in s.images],
        text=[_prompt(processor, s) for s in samples],
        padding=True,
        return_tensors="pt",
    )
    with torch.no_grad():
        out = model.generate(**inputs, max_new_tokens=16, do_sample=False)
    return processor.batch_decode(out[:, inputs["input_ids"].shape[1] :], skip_special_tokens=True)


def _iou(a, b):
    ix = max(0.0, min(a[2], b[2]) - max(a[0], b[0]))
    iy = max(0.0, min(a[3], b[3]) - max(a[1], b[1]))
    area = lambda r: (r[2] - r[0]) * (r[3] - r[1])  # noqa: E731
    return ix * iy / (area(a) + area(b) - ix * iy)


def _correct(s, out):
    if s.kind not in ("refcocog", "vidstg"):
        return " ".join(out.split()) == s.answer
    nums = [float(x) for x in re.findall(r"\d+(?:\.\d+)?", out)]
    want = [float(x) for x in re.findall(r"\d+(?:\.\d+)?", s.answer)]
    if len(nums) != len(want) or nums[:-4] != want[:-4]:
        return False
    ref = s.box if s.kind == "refcocog" else s.frame_boxes[s.span[0]]
    return _iou([v * IMAGE_SIZE for v in nums[-4:]], ref) >= 0.5


def test_chat_template_and_offline_generate(toy):
    model, processor = toy
    s = generate_samples("mlvu", "test", 1)[0]
    prompt = _prompt(processor, s)
    assert prompt.startswith("USER: image 1 <image> image 2 <image>")
    assert prompt.endswith(s.question + " ASSISTANT:")
    (out,) = _answers(model, processor, [s])
    assert isinstance(out, str) and "<image>" not in out


def test_image_tokens_expand_to_patch_grid(toy):
    model, processor = toy
    s = generate_samples("mmdocir", "test", 1)[0]
    enc = processor(images=list(s.images), text=_prompt(processor, s), return_tensors="pt")
    n_img = (enc["input_ids"] == model.config.image_token_index).sum().item()
    assert n_img == len(s.images) * 16 == len(s.images) * model.config.image_seq_length
    assert tuple(enc["pixel_values"].shape) == (len(s.images), 3, IMAGE_SIZE, IMAGE_SIZE)


@pytest.mark.parametrize("kind", KINDS)
def test_answers_held_out(toy, kind):
    if kind not in KINDS_AT_BAR:
        pytest.skip(f"toy weights not trained to the bar on {kind} (TRAINING.md)")
    model, processor = toy
    samples = generate_samples(kind, "test", N, seed=7)
    outs = _answers(model, processor, samples)
    ok = [_correct(s, o) for s, o in zip(samples, outs)]
    bad = [(s.answer, o) for s, o, c in zip(samples, outs, ok) if not c]
    assert sum(ok) >= MIN_CORRECT, f"{kind}: {sum(ok)}/{N} correct; wrong: {bad[:4]}"


@pytest.mark.skipif("refcocog" not in KINDS_AT_BAR, reason="refcocog not at the bar (TRAINING.md)")
def test_decoded_box_format(toy):
    model, processor = toy
    s = generate_samples("refcocog", "test", 1, seed=7)[0]
    (out,) = _answers(model, processor, [s])
    # Word-level decode separates every token with one space.
    assert re.fullmatch(r"\[ (0\.\d\d , ){3}0\.\d\d \]", out), out
