"""Run transformers' own Qwen video processors for their geometry, without torchvision.

A script (run in a subprocess by ``test_video_box_qwen.py``, so nothing here leaks into the
test process): transformers is imported first (so it records torchvision as absent), then a
geometry-only stand-in for ``torchvision.transforms.v2.functional`` is installed whose
``resize`` returns a zero tensor of the requested size (no pixels are computed) and whose
``normalize`` is the identity. Everything that decides the size (``Qwen2VLVideoProcessor`` /
``Qwen3VLVideoProcessor`` ``__init__``, ``_preprocess``, ``resize`` with its frame cap,
``smart_resize``, ``patchify``) is transformers' own code.

stdin: ``[{"family": "qwen2" | "qwen3", "kwargs": {...}, "cases": [[w, h, n, mode], ...]}]``
with ``mode`` ``call`` (the processor called on one ``n``-frame video: ``video_grid_thw`` ×
``patch_size``) or ``resize`` (its ``resize`` method on the stacked video, as ``_preprocess``
calls it). stdout: per config ``{"record": video_resize_record(processor), "sizes": [...]}``,
each size ``[width, height]`` or ``"ValueError: ..."``.
"""

import json
import sys
import types

import torch
import transformers  # noqa: F401 - before the stand-in, so transformers sees no torchvision
import transformers.image_processing_backends as backends
import transformers.video_processing_utils as video_utils

from harness.models import qwen_resize

F = types.ModuleType("torchvision.transforms.v2.functional")
F.InterpolationMode = types.SimpleNamespace(
    **{m: m.lower() for m in ("BICUBIC", "BILINEAR", "NEAREST", "NEAREST_EXACT", "LANCZOS")}
)
F.resize = lambda image, size, **_: torch.zeros((), dtype=image.dtype).expand(
    *image.shape[:-2], *size
)
F.normalize = lambda image, mean, std, inplace=False: image
F.grayscale_to_rgb = lambda t: t.expand(*t.shape[:-3], 3, *t.shape[-2:])
for name in ("torchvision", "torchvision.transforms", "torchvision.transforms.v2"):
    sys.modules[name] = types.ModuleType(name)
sys.modules["torchvision.transforms.v2.functional"] = F
video_utils.tvF = backends.tvF = F
backends.pil_torch_interpolation_mapping = {k: "bicubic" for k in range(6)}

from transformers.models.qwen2_vl.video_processing_qwen2_vl import (  # noqa: E402
    Qwen2VLVideoProcessor,
)
from transformers.models.qwen3_vl.video_processing_qwen3_vl import (  # noqa: E402
    Qwen3VLVideoProcessor,
)

CLASSES = {
    "qwen2": (Qwen2VLVideoProcessor, qwen_resize.VIDEO_RESIZE_QWEN2),
    "qwen3": (Qwen3VLVideoProcessor, qwen_resize.VIDEO_RESIZE_QWEN3),
}


def sizes(proc, cases):
    out = []
    for w, h, n, mode in cases:
        video = torch.zeros((), dtype=torch.uint8).expand(n, 3, h, w)
        try:
            if mode == "call":
                got = proc(videos=[video], return_tensors="pt", do_sample_frames=False)
                _, gh, gw = got["video_grid_thw"][0].tolist()
                out.append([gw * proc.patch_size, gh * proc.patch_size])
            else:
                resized = proc.resize(
                    video[None],
                    size=proc.size,
                    resample=proc.resample,
                    factor=proc.patch_size * proc.merge_size,
                    temporal_factor=proc.temporal_patch_size,
                    cap_pixels_per_frame=proc.cap_pixels_per_frame,
                )
                out.append([int(resized.shape[-1]), int(resized.shape[-2])])
        except ValueError as exc:
            out.append(f"ValueError: {exc}")
    return out


results = []
for job in json.load(sys.stdin):
    cls, rule = CLASSES[job["family"]]
    proc = cls(**job["kwargs"])
    record = qwen_resize.video_resize_record(proc, rule)
    results.append({"record": record, "sizes": sizes(proc, job["cases"])})
print(json.dumps(results))
