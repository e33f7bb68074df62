"""The toy mini-task generator: determinism, split disjointness, evidence, answer consistency."""

import re

import pytest

from harness.toy.builders import LETTERS, MC_SUFFIX
from harness.toy.scenes import (
    CANVAS_RGB,
    COLORS,
    GRID,
    IMAGE_SIZE,
    KINDS,
    SPLITS,
    _content_bucket,
    box_cell,
    cell_box,
    generate_samples,
    normalised_box_text,
)

N = 40


def _key(s):
    return (s.question, s.answer, s.options, s.layout)


@pytest.mark.parametrize("kind", KINDS)
def test_deterministic_and_seeded(kind):
    a = generate_samples(kind, "validation", 6, seed=3)
    b = generate_samples(kind, "validation", 6, seed=3)
    c = generate_samples(kind, "validation", 6, seed=4)
    assert [_key(s) for s in a] == [_key(s) for s in b]
    assert all(
        x.tobytes() == y.tobytes() for sa, sb in zip(a, b) for x, y in zip(sa.images, sb.images)
    )
    assert [_key(s) for s in a] != [_key(s) for s in c]
    assert len({s.doc_id for s in a + c}) == 12


@pytest.mark.parametrize("kind", KINDS)
def test_splits_disjoint(kind):
    by_split = {sp: generate_samples(kind, sp, 150) for sp in SPLITS}
    buckets = {sp: {_content_bucket(kind, _spec(s)) for s in by_split[sp]} for sp in SPLITS}
    # Each split lives in its own content-hash partition, so no overlap is possible at any size.
    assert buckets["train"] <= set(range(8))
    assert buckets["validation"] == {8}
    assert buckets["test"] == {9}
    train = {_key(s) for s in by_split["train"]}
    assert not train & {_key(s) for s in by_split["validation"] + by_split["test"]}


def _spec(s):
    return {"question": s.question, "answer": s.answer, "options": s.options, "layout": s.layout}


@pytest.mark.parametrize("kind", KINDS)
def test_images_match_layout_and_evidence_inside(kind):
    for s in generate_samples(kind, "test", N):
        assert len(s.images) == len(s.layout)
        for img, objs in zip(s.images, s.layout):
            assert img.size == (IMAGE_SIZE, IMAGE_SIZE) and img.mode == "RGB"
            assert img.getpixel((0, 0)) == CANVAS_RGB
            for o in objs:
                x1, y1, x2, y2 = o.box
                assert 0 <= x1 < x2 <= IMAGE_SIZE and 0 <= y1 < y2 <= IMAGE_SIZE
                if o.shape != "text":
                    centre = ((x1 + x2) // 2, (y1 + y2) // 2)
                    assert img.getpixel(centre) == COLORS[o.color]
        for idx, box in s.evidence:
            assert 0 <= idx < len(s.images)
            assert box in [o.box for o in s.layout[idx]]
        if s.box is not None:
            page = s.evidence_page or 0
            assert box_in_layout(s, page, s.box)


def box_in_layout(s, idx, box):
    return any(o.box == box for o in s.layout[idx])


def _named(objs, name):
    return [o for o in objs if o.name == name]


def _option_answer(s):
    assert s.question.endswith(MC_SUFFIX)
    for i, opt in enumerate(s.options):
        assert f"\n{LETTERS[i]}. {opt}\n" in s.question
    return s.options[LETTERS.index(s.answer)]


def _frames_with(s, name):
    return [f for f, objs in enumerate(s.layout) if _named(objs, name)]


def _check(s):  # noqa: C901 - one independent re-derivation per kind
    q = s.question
    if s.kind == "pope":
        name = re.fullmatch(r"Is there a (\w+ \w+) in the image\?", q).group(1)
        assert s.answer == ("yes" if _named(s.layout[0], name) else "no")
    elif s.kind == "refcocog":
        name = re.search(r"describes: the (\w+ \w+)\.$", q).group(1)
        (obj,) = _named(s.layout[0], name)
        assert s.answer == normalised_box_text(obj.box) and s.box == obj.box
    elif s.kind == "mmmu":
        chosen = _option_answer(s)
        if s.task_type == "colour":
            shape = re.match(r"What colour is the (\w+) in", q).group(1)
            (obj,) = [o for o in s.layout[0] if o.shape == shape]
            assert chosen == obj.color
        else:
            present = [o for o in s.options if _named(s.layout[0], o)]
            assert present == [chosen]
    elif s.kind == "vidstg":
        name = re.search(r"the (\w+ \w+)(?: in time|\?)", q).group(1)
        frames = _frames_with(s, name)
        assert frames == list(range(frames[0], frames[-1] + 1)) == list(range(*s.span))
        box = _named(s.layout[frames[0]], name)[0].box
        assert s.answer == f"{frames[0]}-{frames[-1]} {normalised_box_text(box)}"
        assert s.frame_boxes == {f: box for f in frames}
    elif s.kind in ("mlvu", "videomme"):
        chosen = _option_answer(s)
        if s.task_type == "needle":
            name = re.match(r"In which frame does the (\w+ \w+) appear", q).group(1)
            assert [f"frame {f + 1}" for f in _frames_with(s, name)] == [chosen]
        elif s.task_type == "count":
            name = re.match(r"In how many frames does the (\w+ \w+) appear", q).group(1)
            assert str(len(_frames_with(s, name))) == chosen
        elif s.task_type == "order":
            frame = 0 if "first" in q else len(s.layout) - 1
            assert s.layout[frame][0].name == chosen
            assert all(len(_frames_with(s, o)) == 1 for o in s.options)
        elif s.task_type == "Object Recognition":
            assert [o for o in s.options if _frames_with(s, o)] == [chosen]
        else:
            shape = re.match(r"What colour is the (\w+) in", q).group(1)
            colours = {o.color for objs in s.layout for o in objs if o.shape == shape}
            assert colours == {chosen}
        if s.kind == "videomme":
            assert len(s.images) == {"short": 2, "medium": 4}[s.duration]
    elif s.kind == "mmlongbench":
        page = s.evidence_page
        if s.task_type == "object":
            assert q == f"What object is shown on page {page + 1}?"
            (obj,) = [o for o in s.layout[page] if o.shape != "text"]
            assert s.answer == obj.name
        else:
            shape = re.match(r"What colour is the (\w+) in", q).group(1)
            objs = [(p, o) for p, os in enumerate(s.layout) for o in os if o.shape == shape]
            assert [(p, o.color) for p, o in objs] == [(page, s.answer)]
    elif s.kind == "mmdocir":
        name = re.fullmatch(r"Which page shows the (\w+ \w+)\?", q).group(1)
        assert [str(f + 1) for f in _frames_with(s, name)] == [s.answer]
        assert s.evidence_page == int(s.answer) - 1
    else:  # pragma: no cover
        raise AssertionError(s.kind)


@pytest.mark.parametrize("kind", KINDS)
def test_answers_consistent_with_scenes(kind):
    samples = generate_samples(kind, "train", N) + generate_samples(kind, "test", N)
    for s in samples:
        _check(s)
    if kind == "pope":
        assert {s.answer for s in samples} == {"yes", "no"}
    if kind in ("mmmu", "mlvu", "videomme"):
        assert len({s.answer for s in samples}) == 4  # the letter is not constant


def test_box_cell_inverts_cell_box():
    cells = [(r, c) for r in range(GRID) for c in range(GRID)]
    assert [box_cell(cell_box(r, c)) for r, c in cells] == cells
    assert box_cell((34, 50, 46, 62)) == (3, 2)  # x1 34 → column 2, y1 50 → row 3


def test_answer_format_examples():
    assert normalised_box_text((2, 18, 14, 30)) == "[0.03, 0.28, 0.22, 0.47]"
    s = generate_samples("vidstg", "test", 1)[0]
    assert re.fullmatch(r"\d-\d \[(0\.\d\d, ){3}0\.\d\d\]", s.answer)
    assert generate_samples("mmdocir", "test", 1)[0].answer in {"1", "2", "3"}


def test_unknown_kind_and_split():
    with pytest.raises(ValueError, match="unknown toy kind"):
        generate_samples("nope", "test", 1)
    with pytest.raises(ValueError, match="unknown split"):
        generate_samples("pope", "dev", 1)
