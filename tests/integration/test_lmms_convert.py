"""The lmms-eval plugin's conversions (no lmms-eval needed): arguments, stops, visuals, and the
log-likelihood against an eager token-by-token reference on a tiny LLaVA."""

from __future__ import annotations

import pytest

torch = pytest.importorskip("torch")
from PIL import Image  # noqa: E402

from harness.api.payloads import Request  # noqa: E402
from harness.api.specs import SpecError  # noqa: E402
from harness.lmms._convert import (  # noqa: E402
    budget_of,
    continuation_logprob,
    cut_at_stops,
    intervention_spec,
    timed_prefill,
    to_request,
)
from harness.models.llava import LlavaAdapter  # noqa: E402
from harness.testing import tiny_processors as tp  # noqa: E402
from harness.testing.tiny import build_tiny_model  # noqa: E402

IMAGE = Image.new("RGB", (64, 48), (200, 30, 30))


@pytest.fixture(scope="module")
def adapter():
    torch.manual_seed(0)
    return LlavaAdapter.from_parts(build_tiny_model("llava"), tp.tiny_llava_processor())


@pytest.mark.parametrize(
    ("intervention", "args", "name", "want"),
    [
        ("none", None, "none", {}),
        ("ablate", '{"select": "random", "k": 0.5}', "ablate", {"select": "random", "k": 0.5}),
        ('{"name": "ablate", "args": {"k": 2}}', None, "ablate", {"k": 2}),
        ("hybrid", {"keep": 1}, "hybrid", {"keep": 1}),
    ],
)
def test_intervention_spec_from_model_args(intervention, args, name, want):
    spec = intervention_spec(intervention, args)
    assert (spec.name, spec.args) == (name, want)


@pytest.mark.parametrize(
    ("intervention", "args", "message"),
    [
        ("ablate:k=2", None, "short form"),
        ("ablate", "[1, 2]", "JSON object"),
        ("ablate", "{not json", "not valid JSON"),
        ('{"name": "ablate"}', '{"k": 2}', "either inside"),
    ],
)
def test_malformed_intervention_args_are_usage_errors(intervention, args, message):
    with pytest.raises(SpecError, match=message):
        intervention_spec(intervention, args)


@pytest.mark.parametrize(
    ("text", "until", "want"),
    [
        ("yes\nno", ["\n"], "yes"),
        ("yes\nno", "\n", "yes"),
        ("a. b; c", [";", "."], "a"),  # the earliest stop wins, whatever the list order
        ("abc", ["x"], "abc"),
        ("abc", None, "abc"),
        ("abc", ["", "c"], "ab"),  # an empty stop string is ignored
        ("\nabc", ["\n"], ""),
    ],
)
def test_cut_at_stops(text, until, want):
    assert cut_at_stops(text, until) == want


def test_budget_of_prefers_the_task_setting():
    assert budget_of({"max_new_tokens": 5}, 99) == 5
    assert budget_of({"max_gen_toks": 7}, 99) == 7
    assert budget_of({"max_new_tokens": None}, 99) == 99


def test_to_request_flattens_images_and_opens_paths(tmp_path):
    path = tmp_path / "im.png"
    IMAGE.save(path)
    request = to_request("Q?", [[IMAGE], str(path)], 4, video_frames=3)
    assert request.text == "Q?" and request.max_new_tokens == 4 and request.video is None
    assert [im.size for im in request.images] == [IMAGE.size, IMAGE.size]
    assert list(request.images[1].getdata()) == list(IMAGE.getdata())
    with pytest.raises(TypeError, match="unsupported visual"):
        to_request("Q?", [{"array": [0.0]}], 4, video_frames=3)


def test_to_request_samples_a_video_file(tmp_path):
    pytest.importorskip("av")
    from tests.fixtures.make_video_fixtures import _frame, frame_code, write_video

    path = write_video(tmp_path / "clip.mp4", [_frame(i) for i in range(12)])
    request = to_request("What happens?", [str(path)], 4, video_frames=3)
    assert request.images == ()
    # As an HF processor samples by default (transformers.video_utils.default_sample_indices_fn,
    # i * total // n), not the tasks' segment centres (2, 6, 10).
    assert request.video.frame_indices == (0, 4, 8)
    assert [frame_code(f) for f in request.video.frames] == [0, 4, 8]
    with pytest.raises(ValueError, match="one video"):
        to_request("Q?", [str(path), IMAGE], 4, video_frames=3)


def test_to_request_uses_the_processors_own_sampling(tmp_path):
    pytest.importorskip("av")
    from types import SimpleNamespace

    import numpy as np

    from harness.lmms._convert import processor_frame_sampler
    from tests.fixtures.make_video_fixtures import _frame, frame_code, write_video

    class LastFrames:  # a video processor whose rule is nothing like the default
        def sample_frames(self, metadata, num_frames=None, **kwargs):
            return np.arange(metadata.total_num_frames - num_frames, metadata.total_num_frames)

    path = write_video(tmp_path / "clip.mp4", [_frame(i) for i in range(12)])
    adapter = SimpleNamespace(processor=SimpleNamespace(video_processor=LastFrames()))
    sampler = processor_frame_sampler(adapter, 3)
    request = to_request("Q?", [str(path)], 4, video_frames=3, frame_indices=sampler)
    assert request.video.frame_indices == (9, 10, 11)
    assert [frame_code(f) for f in request.video.frames] == [9, 10, 11]
    assert processor_frame_sampler(SimpleNamespace(processor=object()), 3) is None


def _reference_logprob(adapter, request, continuation):
    """Token by token: each continuation token scored by a fresh forward over its prefix."""
    tok = adapter.tokenizer
    prompt = adapter.render(request)
    prompt_ids = tok(prompt, add_special_tokens=False)["input_ids"]
    full_ids = tok(prompt + continuation, add_special_tokens=False)["input_ids"]
    assert full_ids[: len(prompt_ids)] == prompt_ids
    ctx = adapter.prepare([request])
    n_ctx = ctx["input_ids"].shape[1]
    ids = ctx["input_ids"][0].tolist() + full_ids[len(prompt_ids) :]
    total, greedy = 0.0, True
    for i in range(n_ctx, len(ids)):
        inputs = dict(ctx)
        inputs["input_ids"] = torch.tensor([ids[:i]])
        inputs["attention_mask"] = torch.ones(1, i, dtype=torch.long)
        with torch.inference_mode():
            logits = adapter.model(**inputs).logits[0, -1].double()
        total += torch.log_softmax(logits, -1)[ids[i]].item()
        greedy &= int(logits.argmax()) == ids[i]
    return total, greedy


def test_loglikelihood_matches_eager_reference(adapter):
    request = Request("Is there a red square?", images=(IMAGE,))
    adapter.generate([Request(request.text, images=(IMAGE,), max_new_tokens=4)])
    greedy_ids = adapter.last_output_ids[0]
    # the longest prefix of the greedy answer that survives decode → encode
    for k in range(len(greedy_ids), 0, -1):
        text = adapter.tokenizer.decode(greedy_ids[:k])
        if adapter.tokenizer(text, add_special_tokens=False)["input_ids"] == greedy_ids[:k]:
            break
    else:
        pytest.fail("no greedy token round-trips through the tokenizer")
    other = next(t for t in ("yes", "no", "z") if not text.startswith(t))
    for continuation, want_greedy in ((text, True), (other, False)):
        logprob, greedy = continuation_logprob(adapter, request, continuation)
        ref, ref_greedy = _reference_logprob(adapter, request, continuation)
        assert logprob == pytest.approx(ref, rel=1e-4, abs=1e-4)
        assert greedy == ref_greedy == want_greedy
        assert logprob < 0


def test_loglikelihood_rejects_an_empty_continuation(adapter):
    with pytest.raises(ValueError, match="does not tokenise"):
        continuation_logprob(adapter, Request("Q?", images=(IMAGE,)), "")


def test_timed_prefill_leaves_the_model_usable(adapter):
    request = Request("Is there a red square?", images=(IMAGE,), max_new_tokens=3)
    before = adapter.generate([request])[0].text
    assert timed_prefill(adapter.model, adapter.prepare([request])) > 0
    assert adapter.generate([request])[0].text == before


@pytest.mark.parametrize(
    ("text", "field", "want"),
    [
        ("family=toy,revision=1.10,device=cpu", "revision", "1.10"),
        ("family=toy,revision=123e456,device=cpu", "revision", "123e456"),
        ("family=toy,revision='2.0',device=cpu", "revision", "2.0"),
    ],
)
def test_lmms_model_args_keep_string_settings_as_typed(text, field, want):
    """Before: lmms-eval's parser made revision=1.10 the number 1.1 (then the text "1.1")."""
    pytest.importorskip("lmms_eval")
    from harness.lmms.model import HeadscopeLMM

    model = HeadscopeLMM.create_from_arg_string(text)
    assert getattr(model.adapter.spec, field) == want
    assert model.batch_size == 1
