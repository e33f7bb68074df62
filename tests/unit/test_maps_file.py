"""The maps file: example round trip, validation errors, interrupted writes, media PNGs."""

import json

import numpy as np
import pytest
from PIL import Image

from harness.schema.maps import (
    MAPS_JSON,
    MAPS_NPZ,
    MapsFormatError,
    load_maps,
    save_maps,
)
from harness.testing.maps import write_example_maps


def test_example_round_trip(tmp_path):
    path = write_example_maps(tmp_path, tasks=("a", "b"), num_layers=3, num_heads=2)
    maps = load_maps(tmp_path)
    assert path == tmp_path / MAPS_JSON
    assert list(maps.tasks) == ["a", "b"] and (maps.num_layers, maps.num_heads) == (3, 2)
    task = maps.tasks["a"]
    assert [h.why for h in task.heads] == ["top", "bottom", "random"]
    assert [h.rank for h in task.heads][:2] == [1, 6]
    kinds = [s.evidence_kind for s in task.samples]
    assert kinds == ["box", "tube", "page"]
    for s in task.samples:
        assert s.attn.dtype == np.float32 and s.attn.shape == (3, len(s.positions))
        assert s.evidence.any() and s.evidence.dtype == bool
        # the stored RAM is the attention summed over the evidence tokens
        np.testing.assert_allclose(
            s.attn[:, s.evidence].astype(np.float64).sum(1), s.ram, rtol=2e-3, atol=1e-4
        )
        for m in s.media:
            with Image.open(tmp_path / m.path) as img:
                assert img.size == (m.stored_width, m.stored_height)
        blank = np.isnan(s.rects).all(1)
        assert (s.token_media[blank] == -1).all() and (s.token_media[~blank] >= 0).all()
    tube = task.samples[1]
    assert tube.frames_per_token == 2 and {m.kind for m in tube.media} == {"frame"}
    assert set(tube.token_media[tube.token_media >= 0].tolist()) == {0}  # pairs: first frame
    page = task.samples[2]
    assert page.regions[0].box is None and page.regions[0].media == 1
    # save again from what was read: the same document
    doc = json.loads(path.read_text())
    save_maps(tmp_path / "again", maps)
    again = json.loads((tmp_path / "again" / MAPS_JSON).read_text())
    assert again["tasks"] == doc["tasks"] and again["settings"] == doc["settings"]


def test_interrupted_rewrite_is_detected(tmp_path):
    write_example_maps(tmp_path)
    npz = tmp_path / MAPS_NPZ
    with np.load(npz) as data:
        arrays = {k: data[k] for k in data.files}
    arrays["t0s0.attn"] = arrays["t0s0.attn"] * 0  # an npz written, its JSON not yet
    np.savez(npz, **arrays)
    with pytest.raises(MapsFormatError, match="does not match"):
        load_maps(tmp_path)
    npz.unlink()
    with pytest.raises(MapsFormatError, match="missing"):
        load_maps(tmp_path / MAPS_JSON)


def _doc(tmp_path):
    write_example_maps(tmp_path)
    return json.loads((tmp_path / MAPS_JSON).read_text())


@pytest.mark.parametrize(
    ("edit", "message"),
    [
        (lambda d: d.update(format="headscope.ranking"), "not a headscope maps"),
        (lambda d: d.update(version=2), "unsupported maps version 2"),
        (lambda d: d["settings"].pop("seed"), "settings lack"),
        (lambda d: d["tasks"]["example_task"]["heads"][0].update(layer=9), "outside the model"),
        (lambda d: d["tasks"]["example_task"]["heads"][0].update(why="best"), "why="),
        (
            lambda d: d["tasks"]["example_task"]["heads"].pop(),
            "attn has shape \\(3, \\d+\\), expected \\(2,",
        ),
        (lambda d: d["tasks"]["example_task"]["samples"][0].update(key="t0s1"), "used twice"),
        (lambda d: d["tasks"]["example_task"]["samples"][0].update(key="zz"), "not in the npz"),
        (
            lambda d: d["tasks"]["example_task"]["samples"][0]["evidence"]["regions"][0].update(
                media=5
            ),
            "evidence on a medium outside",
        ),
        (lambda d: d["tasks"]["example_task"]["samples"][0].pop("prompt"), "malformed"),
    ],
)
def test_bad_documents_fail_with_the_reason(tmp_path, edit, message):
    doc = _doc(tmp_path)
    edit(doc)
    (tmp_path / MAPS_JSON).write_text(json.dumps(doc))
    with pytest.raises(MapsFormatError, match=message):
        load_maps(tmp_path)


def test_not_json(tmp_path):
    (tmp_path / MAPS_JSON).write_text("{")
    with pytest.raises(MapsFormatError, match="cannot read"):
        load_maps(tmp_path)


def _replace_npz(root, data: bytes) -> None:
    """Put ``data`` in place of the arrays, its hash recorded (the index cannot tell)."""
    import hashlib

    (root / MAPS_NPZ).write_bytes(data)
    doc = json.loads((root / MAPS_JSON).read_text())
    doc["arrays"]["sha256"] = hashlib.sha256(data).hexdigest()
    (root / MAPS_JSON).write_text(json.dumps(doc))


@pytest.mark.parametrize(
    ("data", "message"),
    [
        (lambda npz: b"PK\x03\x04 not a zip after all", "BadZipFile"),
        (lambda npz: npz[: len(npz) // 2], "BadZipFile"),
        (lambda npz: b"\x93NUMPY garbage", "malformed maps file"),
    ],
    ids=["zip-magic-only", "truncated", "npy-magic"],
)
def test_arrays_that_are_not_an_npz_are_a_format_error(tmp_path, data, message):
    write_example_maps(tmp_path)
    _replace_npz(tmp_path, data((tmp_path / MAPS_NPZ).read_bytes()))
    with pytest.raises(MapsFormatError, match=message):
        load_maps(tmp_path)
