"""Training batches of the toy model: answer-only labels, evidence and noun positions."""

from __future__ import annotations

import pytest

from harness.toy.scenes import KINDS, generate_sample
from harness.toy.training.batches import collate, noun_position


@pytest.fixture(scope="module")
def processor():
    from harness.toy.vocab import build_processor, build_tokenizer, build_vocab

    return build_processor(build_tokenizer(build_vocab()))


def _evidence_object(sample):
    idx, (x1, y1, _, _) = sample.evidence[0]
    return next(o for o in sample.layout[idx] if o.cell == (y1 // 16, x1 // 16))


@pytest.mark.parametrize("kind", KINDS)
def test_labels_cover_exactly_the_answer(processor, kind):
    samples = [generate_sample(kind, "train", i) for i in range(4)]
    batch = collate(processor, samples)
    for row, sample in enumerate(samples):
        ids = batch["input_ids"][row][batch["labels"][row] != -100].tolist()
        assert processor.tokenizer.decode(ids, skip_special_tokens=False).split() == [
            *processor.tokenizer.decode(
                processor.tokenizer(sample.answer, add_special_tokens=False)["input_ids"]
            ).split(),
            "</s>",
        ]


@pytest.mark.parametrize("kind", KINDS)
def test_evidence_positions_are_the_object_tokens(processor, kind):
    samples = [generate_sample(kind, "train", i) for i in range(6)]
    batch = collate(processor, samples)
    image_id = processor.image_token_id
    image_rows = iter(batch["cells"].tolist())
    for row, (sample, (final, evidence, _)) in enumerate(zip(samples, batch["sup"])):
        ids = batch["input_ids"][row].tolist()
        assert len(evidence) == len(sample.evidence)
        assert all(ids[p] == image_id for p in evidence)
        assert ids[final + 1 : final + 2] != [image_id]  # the answer follows the prompt
        starts = [p for p in range(len(ids)) if ids[p] == image_id][::16]
        cells = [next(image_rows) for _ in sample.images]
        for (idx, _), pos in zip(sample.evidence, evidence):
            # The content class at the evidence token is an object (not empty, not text).
            assert cells[idx][pos - starts[idx]] >= 2


@pytest.mark.parametrize("kind", KINDS)
def test_noun_position_is_the_evidence_objects_shape_word(processor, kind):
    tok = processor.tokenizer
    named = 0
    for i in range(20):
        sample = generate_sample(kind, "train", i)
        batch = collate(processor, [sample])
        final, _, noun = batch["sup"][0]
        ids = batch["input_ids"][0].tolist()
        if noun is None:
            # Only questions that do not name the object: a POPE "no", "what is on page k".
            assert not sample.evidence or (kind == "mmlongbench" and "page" in sample.question)
            continue
        named += 1
        obj = _evidence_object(sample)
        assert tok.convert_ids_to_tokens(ids[noun]) == obj.shape
        assert noun < final - 1  # inside the question, before "ASSISTANT :"
        if f"{obj.color} {obj.shape}" in sample.question:
            assert tok.convert_ids_to_tokens(ids[noun - 1]) == obj.color
    assert named > 0


def test_noun_position_none_without_evidence(processor):
    sample = next(
        s for s in (generate_sample("pope", "train", i) for i in range(20)) if s.answer == "no"
    )
    assert noun_position(processor.tokenizer, sample, final=40) is None


@pytest.mark.parametrize("kind", ["pope", "mlvu", "videomme", "mmdocir"])
def test_image_index_follows_the_image_markers(processor, kind):
    from harness.toy.training.batches import image_index

    samples = [generate_sample(kind, "train", i) for i in range(4)]
    batch = collate(processor, samples)
    index = image_index(batch["input_ids"], processor.image_token_id)
    tok = processor.tokenizer
    for row, sample in enumerate(samples):
        ids = batch["input_ids"][row].tolist()
        got = index[row].tolist()
        assert [p for p, k in enumerate(got) if k >= 0] == [
            p for p, t in enumerate(ids) if t == processor.image_token_id
        ]
        # Each image's 16 tokens carry the number of the "image k" marker just before them.
        for k in range(len(sample.images)):
            first = got.index(k)
            assert got[first : first + 16] == [k] * 16
            assert tok.convert_ids_to_tokens(ids[first - 2 : first]) == ["image", str(k + 1)]
        assert max(got) == len(sample.images) - 1


def test_page_query_supervises_the_page_number_of_object_free_questions(processor):
    tok = processor.tokenizer
    samples = [generate_sample("mmlongbench", "train", i) for i in range(12)]
    plain = collate(processor, samples)["sup"]
    paged = collate(processor, samples, page_query=True)
    seen = 0
    for row, sample in enumerate(samples):
        ids = paged["input_ids"][row].tolist()
        noun = paged["sup"][row][2]
        if plain[row][2] is not None:  # questions naming an object keep their noun
            assert noun == plain[row][2]
            continue
        seen += 1
        page = sample.evidence[0][0] + 1  # the question asks about the evidence's page
        assert tok.convert_ids_to_tokens(ids[noun - 1 : noun + 1]) == ["page", str(page)]
    assert seen > 0
    pope_no = next(
        s for s in (generate_sample("pope", "train", i) for i in range(20)) if not s.evidence
    )
    assert collate(processor, [pope_no], page_query=True)["sup"][0][2] is None
