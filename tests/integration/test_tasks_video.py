"""Video tasks end to end: fixtures in the real schemas → real loaders → evaluator → metrics.

Expected metric values are derived by hand from the fixtures (see each test's comments).
"""

import hashlib
import json

import pytest

from harness.api.payloads import Box, EvidenceError
from harness.api.specs import RunSpec, TaskSpec
from harness.api.task import SampleError, TaskLoadError, build_task
from harness.media.video import sample_frames, sample_frames_for_processor
from harness.run.evaluator import BadDataError, run_grid
from harness.testing.mock import ScriptedAdapter
from tests.fixtures import make_video_fixtures as fx

pytest.importorskip("av")


@pytest.fixture(scope="module")
def data(tmp_path_factory):
    root = tmp_path_factory.mktemp("video")
    return {
        "vidstg": fx.make_vidstg(root / "vidstg"),
        "mlvu": fx.make_mlvu(root / "mlvu"),
        "videomme": fx.make_videomme(root / "videomme"),
        "root": root,
    }


def run(tmp_path, name, args, responder, convention="pixels", **kw):
    spec = RunSpec(tasks=(TaskSpec(name, args=args),), output=str(tmp_path / "out"), **kw)
    res = run_grid(spec, ScriptedAdapter(responder, box_convention=convention))
    entry = res.entries[0]
    rows = [json.loads(x) for x in (tmp_path / "out" / entry.samples_file).read_text().splitlines()]
    return entry, {m.name: m for m in entry.metrics}, rows


# -- frame sampling -------------------------------------------------------------------------
def test_sample_frames_decodes_the_recorded_indices(data):
    path = fx.Path(data["vidstg"]["video_root"]) / "0000" / "2401075277.mp4"
    video = sample_frames(path, 5, start=3, end=46)
    assert video.frame_indices == (7, 15, 24, 33, 41)  # 3 + (2i + 1)·43 // 10
    assert [fx.frame_code(f) for f in video.frames] == list(video.frame_indices)
    assert video.fps == pytest.approx(30000 / 1001) and video.path == str(path)


@pytest.mark.parametrize("gap", [0, 3])
def test_seeking_equals_reference_decoding(data, gap):
    path = fx.Path(data["vidstg"]["video_root"]) / "0000" / "2401075277.mp4"
    ref = sample_frames(path, 9, seek_gap=None)
    fast = sample_frames(path, 9, seek_gap=gap)
    assert fast.frame_indices == ref.frame_indices
    assert [f.tobytes() for f in fast.frames] == [f.tobytes() for f in ref.frames]


def test_bad_media_errors_name_the_file(data, tmp_path):
    with pytest.raises(SampleError, match="nothere.mp4"):
        sample_frames(tmp_path / "nothere.mp4", 4)
    junk = tmp_path / "junk.mp4"
    junk.write_bytes(b"not a video at all")
    with pytest.raises(SampleError, match="junk.mp4"):
        sample_frames(junk, 4)
    path = fx.Path(data["videomme"]["video_root"]) / "data" / "fixture1.mp4"
    with pytest.raises(SampleError, match="outside its 12 frames"):
        sample_frames(path, 4, start=5, end=40)


# -- VidSTG ---------------------------------------------------------------------------------
# num_frames=4: entry 0 shows frames (6, 18, 30, 42), gt [12, 30) → position 1 only, where the
# red square is moving_box(18, 6) = (16, 8, 32, 24); entry 1 shows (23, 29, 35, 41), gt
# [24, 40) → positions 1, 2 with the static toy box (44, 4, 60, 20); entry 2 shows
# (3, 11, 18, 26) and its gt [5, 7) holds none → not evaluable.
PERFECT = {
    "a red child moves towards a blue toy.": "1-1 [16, 8, 32, 24]",
    "who moves towards the blue toy?": "1-1 [16, 8, 32, 24]",
    "there is a blue toy beside a red child.": "1-2 [44, 4, 60, 20]",
    "a red child appears briefly.": "0-0 [0, 0, 8, 8]",
}


def _by_sentence(answers):
    return lambda req: next(a for s, a in answers.items() if f'"{s}"' in req.text)


def test_vidstg_end_to_end_perfect(data, tmp_path):
    args = {**data["vidstg"], "num_frames": 4, "scoring": "lenient"}  # shown-frame metrics
    entry, m, rows = run(tmp_path, "vidstg", args, _by_sentence(PERFECT))
    assert m["m_tIoU"].value == pytest.approx(1.0) and m["m_tIoU"].n == 3
    assert m["m_vIoU"].value == pytest.approx(1.0) and m["vIoU@0.5"].value == 1.0
    assert m["evaluable"].value == pytest.approx(0.75) and m["evaluable"].n == 4
    assert rows[0]["frame_indices"] == [6, 18, 30, 42]
    assert rows[2]["frame_indices"] == [23, 29, 35, 41]
    assert rows[3]["scores"]["evaluable"] is False
    assert entry.task_settings["num_frames"] == 4


def test_vidstg_end_to_end_official_counts_every_sentence(data, tmp_path):
    # Default scoring: TubeDETR's evaluator (tIoU from frame numbers; no sentence left out).
    args = {**data["vidstg"], "num_frames": 4}
    entry, m, rows = run(tmp_path, "vidstg", args, _by_sentence(PERFECT))
    assert entry.task_settings["scoring"] == "official"
    assert m["m_tIoU"].n == 4 and m["evaluable"].value == pytest.approx(0.75)
    for row in rows:
        shown, (begin, end) = row["frame_indices"], row["target"]["span"]
        lo, hi = row["scores"]["pred_positions"]
        pred = (shown[lo], shown[hi] + 1)  # TubeDETR's post-processor: end excluded
        inter = max(0, min(end, pred[1]) - max(begin, pred[0]))
        want = inter / ((end - begin) + (pred[1] - pred[0]) - inter) if inter else 0.0
        assert row["scores"]["tIoU"] == pytest.approx(want)
    assert 0 < m["m_tIoU"].value < 1  # frame numbers, not shown positions: not the lenient 1.0


def test_vidstg_end_to_end_partial_and_normalised_boxes(data, tmp_path):
    # "0-3" on the toy: entry 0 → tIoU 1/4, vIoU 0 (toy vs child box disjoint); entry 1 →
    # tIoU 2/4, vIoU (1 + 1)/4. Normalised box [0.6875, 0.0833, 0.9375, 0.4167] = toy box.
    args = {**data["vidstg"], "num_frames": 4, "scoring": "lenient"}
    answer = "0-3 [0.6875, 0.083333, 0.9375, 0.416667]"
    _, m, _ = run(tmp_path, "vidstg", args, lambda r: answer, convention="normalized")
    assert m["m_tIoU"].value == pytest.approx((0.25 + 0.25 + 0.5) / 3)
    assert m["m_vIoU"].value == pytest.approx(0.5 / 3, abs=1e-4)
    assert m["vIoU@0.3"].value == pytest.approx(1 / 3)
    assert m["vIoU@0.5"].value == 0.0  # 0.5 is not > 0.5
    assert m["m_tIoU_declarative"].value == pytest.approx(0.375)
    assert m["m_tIoU_interrogative"].value == pytest.approx(0.25)


def test_vidstg_sentence_type_filter_and_evidence(data):
    task = build_task("vidstg", {**data["vidstg"], "num_frames": 4, "sentence_type": "declarative"})
    docs = task.load()
    assert [d.doc_id for d in docs] == ["2401075277:0:d0", "2401075277:1:d0", "5137563401:2:d0"]
    req = task.request(docs[1])
    assert task.evidence(docs[1], req).boxes == {1: Box(44, 4, 60, 20), 2: Box(44, 4, 60, 20)}
    with pytest.raises(EvidenceError, match="5137563401:2:d0"):
        task.evidence(docs[2], task.request(docs[2]))


@pytest.mark.parametrize(
    "mutate, match",
    [
        (lambda e: [dict(e[0], temporal_gt={"begin_fid": 30, "end_fid": 12})], "entry 0"),
        (lambda e: [{k: v for k, v in e[0].items() if k != "fps"}], "missing field"),
        (lambda e: [dict(e[0], vid="999")], "999.json"),
    ],
)
def test_vidstg_malformed_rows(tmp_path, mutate, match):
    args = fx.make_vidstg(tmp_path / "bad", mutate=mutate)
    with pytest.raises(SampleError, match=match):
        build_task("vidstg", args).load()
    with pytest.raises(BadDataError, match=match):
        run(tmp_path, "vidstg", args, lambda r: "")


def test_vidstg_missing_video_is_a_counted_skip(data, tmp_path):
    args = {**data["vidstg"], "video_root": str(tmp_path / "empty"), "num_frames": 4}
    with pytest.raises(BadDataError, match="2401075277.mp4"):
        run(tmp_path / "a", "vidstg", args, lambda r: "")
    entry, _, _ = run(tmp_path / "b", "vidstg", args, lambda r: "", skip_bad_docs=True)
    assert entry.n_skipped == 4 and entry.n_samples == 0


def test_vidstg_without_annotations_says_how(tmp_path):
    with pytest.raises(TaskLoadError, match="annotation_dir"):
        build_task("vidstg", {}).load()


# -- MLVU -----------------------------------------------------------------------------------
def test_mlvu_end_to_end_macro_skips_absent_types(data, tmp_path):
    # Always "(A)": right on plotQA_0, needle_1, count_0, order_0, ego_0 → per type plotQA 1/2,
    # needle 1/2, count 1, order 1, ego 1; anomaly_reco and topic_reasoning absent.
    args = {**data["mlvu"], "num_frames": 3}
    _, m, rows = run(tmp_path, "mlvu", args, lambda r: "(A)")
    assert m["m_avg"].value == pytest.approx((0.5 + 0.5 + 1 + 1 + 1) / 5)  # not 4/7
    assert m["m_avg"].n == 7
    assert m["accuracy"].value == pytest.approx(5 / 7)
    assert m["accuracy_anomaly_reco"].n == 0 and m["accuracy_anomaly_reco"].value is None
    assert m["accuracy_plotQA"].value == pytest.approx(0.5)
    assert rows[0]["frame_indices"] == [3, 10, 16] and rows[0]["target"] == "A"
    assert "(A) red" in rows[0]["prompt"]
    assert rows[0]["prompt"].endswith("best option.\nBest option: (")


def test_mlvu_malformed_row_fails_load_naming_it(tmp_path):
    args = fx.make_mlvu(tmp_path, mutate=lambda rows: [rows[0], dict(rows[1], answer="hexagon")])
    with pytest.raises(SampleError, match=r"mlvu row 1 \(question_id='plotQA_1'\)"):
        build_task("mlvu", args).load()


# -- Video-MME --------------------------------------------------------------------------------
def test_videomme_end_to_end_per_duration(data, tmp_path):
    # Always "A": per video the answers are A, B, A → 2/3 each; overall 6/9.
    args = {**data["videomme"], "num_frames": 4}
    _, m, rows = run(tmp_path, "videomme", args, lambda r: "The best answer is A.")
    assert m["accuracy"].value == pytest.approx(6 / 9) and m["accuracy"].n == 9
    for d in ("short", "medium", "long"):
        assert m[f"accuracy_{d}"].value == pytest.approx(2 / 3) and m[f"accuracy_{d}"].n == 3
    assert rows[0]["frame_indices"] == [1, 4, 7, 10]  # 12-frame video
    assert rows[-1]["frame_indices"] == [4, 13, 22, 31]  # 36-frame video
    assert rows[0]["duration"] == "short"


def test_videomme_duration_filter(data):
    docs = build_task("videomme", {**data["videomme"], "duration": "medium"}).load()
    assert [d.doc_id for d in docs] == ["002-1", "002-2", "002-3"]


def test_videomme_missing_video_names_the_file(tmp_path):
    args = fx.make_videomme(tmp_path, mutate=lambda rows: [dict(rows[0], videoID="gone")])
    task = build_task("videomme", args)
    with pytest.raises(SampleError, match="'gone' not found"):
        task.request(task.load()[0])


def test_videomme_hub_ids_old_and_renamed_are_both_tried(monkeypatch):
    import datasets

    tried = []

    def fake(path, *a, **k):
        tried.append(path)
        raise FileNotFoundError(path)

    monkeypatch.setattr(datasets, "load_dataset", fake)
    with pytest.raises(TaskLoadError, match="lmms-eval/Video-MME"):
        build_task("videomme", {}).load()
    assert tried == ["lmms-lab/Video-MME", "lmms-eval/Video-MME"]


# -- mini variants ------------------------------------------------------------------------------
def _key(req):
    frames = b"".join(f.tobytes() for f in req.video.frames)
    return hashlib.sha1(req.text.encode() + frames).hexdigest()


def _gold(kind, n):
    from harness.api.payloads import Request, Video
    from harness.toy.scenes import generate_samples

    out = {}
    for ms in generate_samples(kind, "test", n):
        video = Video(tuple(ms.images), tuple(range(len(ms.images))))
        out[_key(Request(ms.question, video=video))] = ms
    return out


@pytest.mark.parametrize("name, kind", [("mlvu_mini", "mlvu"), ("videomme_mini", "videomme")])
def test_choice_minis_end_to_end(tmp_path, name, kind):
    gold = _gold(kind, 24)
    _, m, rows = run(tmp_path / "a", name, {"n": 24}, lambda r: gold[_key(r)].answer)
    assert m["accuracy"].value == 1.0 and m["accuracy"].n == 24
    _, m, _ = run(tmp_path / "b", name, {"n": 24}, lambda r: "A")
    share_a = sum(ms.answer == "A" for ms in gold.values()) / 24
    assert m["accuracy"].value == pytest.approx(share_a)
    assert rows[0]["frame_indices"] == list(range(len(rows[0]["frame_indices"])))


def test_vidstg_mini_end_to_end_and_evidence(tmp_path):
    gold = _gold("vidstg", 16)
    _, m, _ = run(tmp_path, "vidstg_mini", {"n": 16}, lambda r: gold[_key(r)].answer, "normalized")
    assert m["m_tIoU"].value == 1.0 and m["evaluable"].value == 1.0
    assert m["vIoU@0.5"].value == 1.0 and m["m_vIoU"].value > 0.9  # 2-decimal boxes
    task = build_task("vidstg_mini", {"n": 16})
    for doc in task.load():
        ms = next(g for g in gold.values() if g.doc_id == doc.doc_id)
        req = task.request(doc)
        assert req.text == ms.question
        want = {f: Box(*b) for f, b in ms.frame_boxes.items()}
        assert task.evidence(doc, req).boxes == want


def test_minis_refuse_the_training_split():
    with pytest.raises(TaskLoadError, match="not held out"):
        build_task("mlvu_mini", {"n": 2}).load(split="train")


@pytest.mark.parametrize("gap", [None, 0])
def test_container_without_frame_count_mkv(tmp_path, gap):
    # Matroska stores no frame count (stream.frames == 0): frames are counted from packets and
    # indices come from millisecond timestamps.
    frames = [fx._frame(f, (None, fx.RED)) for f in range(20)]
    path = fx.write_video(tmp_path / "clip.mkv", frames, fps=10, gop=4)
    video = sample_frames(path, 5, seek_gap=gap)
    assert video.frame_indices == (2, 6, 10, 14, 18)
    assert [fx.frame_code(f) for f in video.frames] == [2, 6, 10, 14, 18]


def test_processor_path_matches_transformers_rule_and_own_decoder(tmp_path):
    from transformers.video_utils import VideoMetadata, default_sample_indices_fn

    path = fx.write_video(tmp_path / "long.mp4", [fx._frame(i) for i in range(100)], gop=8)
    clip = sample_frames_for_processor(path, num_frames=7)
    want = default_sample_indices_fn(VideoMetadata(total_num_frames=100), num_frames=7)
    assert clip.frame_indices == tuple(int(i) for i in want) == (0, 14, 28, 42, 57, 71, 85)
    assert [fx.frame_code(f) for f in clip.frames] == list(clip.frame_indices)
    assert clip.fps == 10.0 and clip.path == str(path)
    # Same pixels as headscope's own decoder at the same indices (seeking path).
    own = sample_frames(path, 100)
    for index, frame in zip(clip.frame_indices, clip.frames):
        assert list(frame.getdata()) == list(own.frames[index].getdata())


def test_processor_path_refuses_what_it_cannot_read(tmp_path):
    import av

    with pytest.raises(SampleError, match="not found"):
        sample_frames_for_processor(tmp_path / "nope.mp4", num_frames=4)
    mkv = tmp_path / "clip.mkv"  # Matroska: no frame count in the stream header
    with av.open(str(mkv), mode="w", format="matroska") as container:
        stream = container.add_stream("libx264", rate=10)
        stream.width, stream.height, stream.pix_fmt = fx.W, fx.H, "yuv420p"
        for i in range(20):
            for packet in stream.encode(av.VideoFrame.from_image(fx._frame(i))):
                container.mux(packet)
        for packet in stream.encode():
            container.mux(packet)
    with pytest.raises(SampleError, match="clip.mkv"):
        sample_frames_for_processor(mkv, num_frames=4)
    assert sample_frames(mkv, 4).frame_indices == (2, 7, 12, 17)  # the tasks' reader copes
