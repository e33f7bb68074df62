"""The video decoder seeks only forward past the next keyframe (never back over decoded frames)."""

import pytest

from harness.media import video
from tests.fixtures import make_video_fixtures as fx

av = pytest.importorskip("av")


@pytest.fixture(scope="module")
def clip(tmp_path_factory):
    path = tmp_path_factory.mktemp("seek") / "gop8.mp4"
    return fx.write_video(path, [fx._frame(i) for i in range(48)], fps=10, gop=8)


def decode(path, wanted, gap):
    stats = {}
    with av.open(str(path)) as container:
        stream = container.streams.video[0]
        fps = float(stream.average_rate)
        got = video._decode(container, stream, wanted, fps, gap, stats)
    return {i: fx.frame_code(img) for i, img in got.items()}, stats


def test_no_seek_back_when_no_keyframe_lies_between(clip):
    # keyframes every 8 frames: 1 → 6 has none in between (decoding on), 6 → 12 has 8,
    # 12 → 40 has 40. The old rule (gap alone) also sought 1 → 6, back to keyframe 0.
    wanted = [1, 6, 12, 40]
    frames, stats = decode(clip, wanted, gap=3)
    assert frames == {i: i for i in wanted}
    assert stats == {"decoded": 7 + 5 + 1, "seeks": 3}  # 0..6, 8..12, 40; seeks: 1, 8, 40
    reference, ref_stats = decode(clip, wanted, gap=None)
    assert reference == frames and ref_stats == {"decoded": 41, "seeks": 0}


@pytest.mark.parametrize("gap", [0, 3, 64])
def test_every_gap_decodes_the_reference_frames(clip, gap):
    wanted = list(video.uniform_indices(0, 48, 9))
    assert decode(clip, wanted, gap)[0] == decode(clip, wanted, None)[0]
