"""The layout-kind contract, and the base of the kinds that need no processor outputs.

A :class:`LayoutKind` turns one request (and its processor output) into
:class:`~harness.models.layouts.tokens.Footprints`: the positions of its visual tokens in the
unpadded ``input_ids`` and, in the same order, each token's source (image ``i``, video frame
``FRAME + f``) and footprint in original pixels. :class:`~harness.models.hf.HFAdapter` derives
both evidence maps from it (``token_footprints`` and ``token_spans``), so a kind is written
once and every family that declares it gets both.
"""

from __future__ import annotations

from dataclasses import dataclass
from typing import TYPE_CHECKING, Any, ClassVar

from harness.models.layouts.tokens import FRAME, Footprints, Layout

if TYPE_CHECKING:
    from harness.api.payloads import Request

__all__ = ["LayoutKind", "SpatialKind", "config_int"]


def config_int(value: Any) -> int:
    """An int from a config value that may be a ``[h, w]`` pair (InternVL's ``patch_size``)."""
    return int(value[0] if isinstance(value, list | tuple) else value)


@dataclass(frozen=True)
class LayoutKind:
    """A way visual tokens are laid out (subclasses are frozen dataclasses of parameters).

    Attributes:
        kind: The kind's name (``grid_thw``, ``fixed_grid``, ``anyres``, ``tiles``,
            ``row_break``), shown in docs and test ids.
    """

    kind: ClassVar[str] = ""

    def footprints(self, adapter: Any, request: Request, inputs: Any) -> Footprints:
        """Every visual token of ``request``: position, source and footprint.

        Args:
            adapter: The family's :class:`~harness.models.hf.HFAdapter` (its ``processor``
                and ``model.config`` hold the geometry; ``visual_token_ids()`` the ids).
            request: One request.
            inputs: ``adapter.encode([request])`` (unpadded: a batch of one).

        Raises:
            RuntimeError: the processor made a different number of visual tokens than the
                kind predicts (processor settings the kind does not replay).
        """
        raise NotImplementedError


@dataclass(frozen=True)
class SpatialKind(LayoutKind):
    """A kind whose footprints follow from the media sizes alone (no processor outputs).

    Visual tokens are the positions of ``adapter.visual_token_ids()`` in ``input_ids``, in
    feature order; :meth:`layout` lists their footprints in the same order, image by image
    (images, then pages), then the video. Subclasses implement :meth:`add_image` and, when
    a video is not shown frame by frame as images, :meth:`add_video`.
    """

    def footprints(self, adapter: Any, request: Request, inputs: Any) -> Footprints:
        """Footprints of the placeholder positions, in feature order (see :meth:`layout`)."""
        ids = inputs["input_ids"][0].tolist()
        wanted = set(adapter.visual_token_ids())
        positions = [i for i, t in enumerate(ids) if t in wanted]
        return Footprints.of(positions, self.layout(adapter, request))

    def layout(self, adapter: Any, request: Request) -> Layout:
        """Footprints of all visual tokens of ``request``, in feature order."""
        layout = Layout.empty()
        stills = request.visual_inputs()
        frames = tuple(request.video.frames) if request.video is not None else ()
        shown = len(stills) + (len(frames) if adapter.video_as == "images" else 0)
        for index, image in enumerate(stills):
            self.add_image(adapter, layout, index, image.size, shown)
        if frames:
            self.add_video(adapter, layout, frames, shown)
        return layout

    def add_image(
        self, adapter: Any, layout: Layout, source: int, size: tuple[int, int], shown: int
    ) -> None:
        """Append one image's tokens to ``layout`` (``shown``: images the request shows)."""
        raise NotImplementedError

    def add_video(self, adapter: Any, layout: Layout, frames: tuple[Any, ...], shown: int) -> None:
        """Append a video's tokens (default: each frame as an image, source ``FRAME + f``)."""
        for position, frame in enumerate(frames):
            self.add_image(adapter, layout, FRAME + position, frame.size, shown)
