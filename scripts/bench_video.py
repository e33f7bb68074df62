"""Own PyAV frame sampling (harness.media.video.sample_frames) vs transformers.video_utils.

Measures, on generated H.264 files:
1. same frames: for the same source indices, transformers' pyav reader and headscope's
   decoder return pixel-identical frames (MP4, keyframe every 25 frames);
2. speed: 16 frames from a long video — headscope seeks, transformers decodes every frame
   up to the last wanted one;
3. a sub-span (VidSTG segments) and a Matroska file without a frame count in the stream
   header: what each path does;
4. the processor path (``sample_frames_for_processor``) returns the indices of
   ``transformers.video_utils.default_sample_indices_fn`` and the same pixels as
   headscope's decoder at those indices.

Run: PYTHONPATH=. python scripts/bench_video.py [--frames 3000]
"""

from __future__ import annotations

import argparse
import tempfile
import time
from fractions import Fraction
from pathlib import Path


def _write(path: Path, n: int, size=(320, 240), gop: int = 25, fmt: str | None = None) -> Path:
    import av
    import numpy as np

    w, h = size
    with av.open(str(path), mode="w", format=fmt) as container:
        stream = container.add_stream("libx264", rate=Fraction(25))
        stream.width, stream.height, stream.pix_fmt = w, h, "yuv420p"
        stream.options = {"g": str(gop), "keyint_min": str(gop), "sc_threshold": "0", "crf": "18"}
        yy, xx = np.mgrid[0:h, 0:w]
        for i in range(n):
            img = np.stack([(xx + i) % 256, (yy + 2 * i) % 256, (xx + yy + 3 * i) % 256], -1)
            frame = av.VideoFrame.from_ndarray(img.astype("uint8"), format="rgb24")
            for packet in stream.encode(frame):
                container.mux(packet)
        for packet in stream.encode():
            container.mux(packet)
    return path


def _hf(path: Path, indices):
    import numpy as np
    from transformers.video_utils import load_video

    frames, meta = load_video(
        str(path), backend="pyav", sample_indices_fn=lambda metadata, **_: np.asarray(indices)
    )
    return frames, meta


def main() -> None:
    import numpy as np

    from harness.media.video import sample_frames, uniform_indices

    parser = argparse.ArgumentParser()
    parser.add_argument("--frames", type=int, default=3000)
    parser.add_argument("--num", type=int, default=16)
    args = parser.parse_args()
    tmp = Path(tempfile.mkdtemp())
    long = _write(tmp / "long.mp4", args.frames)
    idx = uniform_indices(0, args.frames, args.num)

    t0 = time.perf_counter()
    ours = sample_frames(long, args.num)
    t1 = time.perf_counter()
    hf, meta = _hf(long, idx)
    t2 = time.perf_counter()
    ref = sample_frames(long, args.num, seek_gap=None)
    t3 = time.perf_counter()
    same = all(np.array_equal(np.asarray(a), b) for a, b in zip(ours.frames, hf))
    same_ref = all(
        np.array_equal(np.asarray(a), np.asarray(b)) for a, b in zip(ours.frames, ref.frames)
    )
    print(f"{args.frames}-frame 320x240 MP4, {args.num} frames at {list(idx)[:3]}...:")
    print(
        f"  pixel-identical to transformers pyav: {same} ({len(hf)} frames);"
        f" to own decode-all reference: {same_ref}"
    )
    print(
        f"  time: headscope (seek) {t1 - t0:.3f}s, transformers pyav {t2 - t1:.3f}s,"
        f" headscope decode-all {t3 - t2:.3f}s -> seek speedup {(t2 - t1) / (t1 - t0):.1f}x"
    )

    # Span in the middle (a VidSTG segment): transformers samples whole files only.
    span = uniform_indices(1200, 1400, 8)
    t0 = time.perf_counter()
    seg = sample_frames(long, 8, start=1200, end=1400)
    t1 = time.perf_counter()
    hf_seg, _ = _hf(long, span)
    t2 = time.perf_counter()
    same_seg = all(np.array_equal(np.asarray(a), b) for a, b in zip(seg.frames, hf_seg))
    print(
        f"  span [1200,1400) x8: identical {same_seg}; headscope {t1 - t0:.3f}s,"
        f" transformers {t2 - t1:.3f}s"
    )

    mkv = _write(tmp / "short.mkv", 120, fmt="matroska")
    import av

    with av.open(str(mkv)) as c:
        header = c.streams.video[0].frames
    ok_ours = sample_frames(mkv, 8)
    try:  # transformers' own sampling reads the frame count from the stream header
        from transformers.video_utils import load_video

        hf_mkv, meta_mkv = load_video(str(mkv), num_frames=8, backend="pyav")
        hf_res = f"{len(hf_mkv)} frames, total_num_frames={meta_mkv.total_num_frames}"
    except Exception as exc:  # noqa: BLE001
        hf_res = f"{type(exc).__name__}: {str(exc)[:90]}"
    print(
        f"  MKV (stream header frames={header}): headscope {len(ok_ours.frames)} frames at "
        f"{ok_ours.frame_indices}; transformers load_video(num_frames=8): {hf_res}"
    )

    from transformers.video_utils import VideoMetadata, default_sample_indices_fn

    from harness.media.video import sample_frames_for_processor

    t0 = time.perf_counter()
    proc = sample_frames_for_processor(long, num_frames=args.num)
    t1 = time.perf_counter()
    want = default_sample_indices_fn(
        VideoMetadata(total_num_frames=args.frames, fps=25.0), num_frames=args.num
    )
    same_proc = list(proc.frame_indices) == [int(i) for i in want]
    import av

    from harness.media.video import _decode  # own decoder at given indices (internal)

    with av.open(str(long)) as c:
        st = c.streams.video[0]
        got = _decode(c, st, list(proc.frame_indices), float(st.average_rate), 64)
    pix = [got[i] for i in proc.frame_indices]
    same_pix = all(np.array_equal(np.asarray(a), np.asarray(b)) for a, b in zip(proc.frames, pix))
    print(
        f"  processor path: indices == default_sample_indices_fn: {same_proc} "
        f"({list(proc.frame_indices)[:4]}...), pixels == own decoder: {same_pix}, {t1 - t0:.3f}s"
    )


if __name__ == "__main__":
    main()
