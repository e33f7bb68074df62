"""LLaVA-1.5 adapter (``LlavaForConditionalGeneration``), base of the LLaVA-family adapters.

Visual tokens: each ``<image>`` expands to one token per vision-tower patch, row-major, in
feature order. The image processor resizes the short side to ``size["shortest_edge"]`` (336)
and center-crops ``crop_size`` (336²), so parts of a non-square image are cut off and have no
token: a box partly outside the crop maps only to the tokens that exist, a box entirely
outside raises :class:`~harness.api.payloads.EvidenceError`. With ``do_pad`` the image is first
padded to a square (nothing is cut). CLIP's CLS token is dropped (``default`` strategy):
24×24 = 576 tokens (8×8 in the tiny test model). LLaVA-1.5 has no video input: video frames
are shown as consecutive images.

Answer coordinates: LLaVA models write boxes as ``[x1, y1, x2, y2]`` in [0, 1] relative to
the image (``normalized``); that is how LLaVA-1.5 was trained on RefCOCO-style data.

Evidence → tokens: :meth:`LlavaAdapter.layout` gives every visual token's footprint in
original pixels (:mod:`harness.models._layout`); Ω(V*) is what the one evidence rule
(:func:`harness.models.hf.overlapping`) selects from them. Subclasses only describe their
geometry (:meth:`add_image`, :meth:`add_video`).
"""

from __future__ import annotations

from typing import TYPE_CHECKING, Any, ClassVar

from harness.api.model import TokenSpans
from harness.api.registry import model_family
from harness.models._layout import (
    FRAME,
    Axis,
    Footprints,
    Layout,
    View,
    patch_spans,
    select_tokens,
)
from harness.models.hf import HFAdapter, instruction_positions

if TYPE_CHECKING:
    from harness.api.payloads import Evidence, Request

__all__ = ["LlavaAdapter", "crop_view"]


def crop_view(
    width: int,
    height: int,
    *,
    size: dict[str, int],
    crop: dict[str, int] | None,
    pad_to_square: bool = False,
) -> tuple[View, int, int]:
    """LLaVA-1.5 preprocessing as a view: [pad to square], resize, [center crop].

    Args:
        width: Original width.
        height: Original height.
        size: The image processor's ``size`` (``shortest_edge`` or ``height``/``width``).
        crop: The center-crop size (``height``/``width``), None when not cropping.
        pad_to_square: Whether the processor pads to a centred square first (``do_pad``).

    Returns:
        The view and the canvas (width, height) the vision tower sees.
    """
    pre_x = pre_y = 0
    cw, ch = width, height
    if pad_to_square and width != height:  # pad_to_square: pasted at (side − size) // 2
        side = max(width, height)
        pre_x, pre_y, cw, ch = (side - width) // 2, (side - height) // 2, side, side
    if size.get("shortest_edge"):  # image_transforms.get_resize_output_image_size
        short, long = sorted((cw, ch))
        new_short, new_long = size["shortest_edge"], int(size["shortest_edge"] * long / short)
        nw, nh = (new_short, new_long) if cw <= ch else (new_long, new_short)
    else:
        nw, nh = size["width"], size["height"]
    post_x = post_y = 0
    cx, cy = nw, nh
    if crop:  # image_transforms.center_crop starts at (H − h) // 2
        post_x, post_y = -((nw - crop["width"]) // 2), -((nh - crop["height"]) // 2)
        cx, cy = crop["width"], crop["height"]
    view = View(Axis(cw, nw, pre_x, post_x), Axis(ch, nh, pre_y, post_y))
    return view, cx, cy


@model_family("llava")
class LlavaAdapter(HFAdapter):
    """LLaVA-1.5 (``llava-hf/llava-1.5-*-hf``); boxes normalised to [0, 1]."""

    box_convention = "normalized"
    default_pretrained = "llava-hf/llava-1.5-7b-hf"
    model_class: ClassVar[str] = "LlavaForConditionalGeneration"
    video_as = "images"

    # -- token spans ---------------------------------------------------------------------
    def token_spans(self, request: Request, evidence: Evidence | None = None) -> TokenSpans:
        """Ω(V*) (tokens whose footprint overlaps the evidence), instruction, visual tokens.

        Raises:
            EvidenceError: evidence empty, degenerate, outside the media the model sees.
        """
        inputs = self.encode([request])
        ids = inputs["input_ids"][0].tolist()
        visual = self.visual_positions(ids)
        layout = Footprints.of(visual, self.layout(request)).layout  # checks the counts agree
        instruction = instruction_positions(self.tokenizer, self.render(request), request.text, ids)
        covered: tuple[int, ...] = ()
        if evidence is not None:
            covered = tuple(visual[i] for i in select_tokens(layout, request, evidence))
        return TokenSpans(
            evidence=covered, instruction=instruction, visual=tuple(visual), seq_len=len(ids)
        )

    def token_footprints(self, request: Request) -> Footprints:
        """Every visual token's position and footprint in original pixels (see ``layout``)."""
        ids = self.encode([request])["input_ids"][0].tolist()
        return Footprints.of(self.visual_positions(ids), self.layout(request))

    def visual_token_ids(self) -> tuple[int, ...]:
        """Ids of the tokens that carry visual features."""
        return (int(self.processor.image_token_id),)

    def visual_positions(self, ids: list[int]) -> list[int]:
        """Positions of the visual tokens (feature order = position order)."""
        wanted = set(self.visual_token_ids())
        return [i for i, t in enumerate(ids) if t in wanted]

    # -- geometry --------------------------------------------------------------------------
    def layout(self, request: Request) -> Layout:
        """Footprints of all visual tokens of ``request``, in feature order."""
        layout = Layout.empty()
        stills = request.visual_inputs()
        frames = tuple(request.video.frames) if request.video is not None else ()
        shown = len(stills) + (len(frames) if self.video_as == "images" else 0)
        for index, image in enumerate(stills):
            self.add_image(layout, index, image.size, shown)
        if frames:
            self.add_video(layout, frames, shown)
        return layout

    def add_video(self, layout: Layout, frames: tuple[Any, ...], shown: int) -> None:
        """Append a video's tokens (default: each frame as an image, source ``FRAME + f``)."""
        for position, frame in enumerate(frames):
            self.add_image(layout, FRAME + position, frame.size, shown)

    def add_image(self, layout: Layout, source: int, size: tuple[int, int], shown: int) -> None:
        """Append one image's tokens: a patch grid over the resized, center-cropped image."""
        proc = self.processor.image_processor
        crop = dict(proc.crop_size) if proc.do_center_crop and proc.crop_size else None
        view, cw, ch = crop_view(
            size[0], size[1], size=dict(proc.size), crop=crop, pad_to_square=bool(proc.do_pad)
        )
        patch = int(self.model.config.vision_config.patch_size)
        extra = int(getattr(self.processor, "num_additional_image_tokens", 0) or 0)
        if self.model.config.vision_feature_select_strategy == "full" and extra:
            layout.add_blank(source, extra)  # CLS kept: it is not a spatial patch
        layout.add(source, view.grid(patch_spans(1, ch, patch), patch_spans(1, cw, patch)), size)
