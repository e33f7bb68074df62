"""Shared machinery of the Hugging Face model adapters (every VLM family uses it).

:class:`HFAdapter` is a :class:`~harness.api.model.ModelAdapter` that wraps a HF model and
processor: it loads both with ``from_pretrained`` (or wraps an already-built pair, for tests),
switches the text decoder to headscope's attention dispatch, renders a
:class:`~harness.api.payloads.Request` with the family's chat template, batches with left padding
and generates greedily, decoding only the new tokens. A family subclass sets ``model_class`` and
``default_pretrained`` and implements :meth:`~harness.api.model.ModelAdapter.token_spans`;
it may override :meth:`HFAdapter.build_messages` and :meth:`HFAdapter.processor_kwargs`.

Token positions everywhere are indices into the *unpadded* ``input_ids`` of one request; in a
left-padded batch, row ``b``'s position ``p`` sits at column ``p + pad_b``.

Evidence → tokens: every family describes where each visual token looks (a footprint in
original pixels, from its processor's and vision tower's own geometry) and selects Ω(V*) with
the one rule :func:`overlapping`: any positive-area overlap with the evidence, x2/y2
exclusive, float round-off tolerated. A whole page is the box of the page.
"""

from __future__ import annotations

from collections.abc import Iterator, Sequence
from contextlib import contextmanager
from typing import TYPE_CHECKING, Any, ClassVar, Literal

from harness.api.model import ModelAdapter
from harness.api.payloads import Generation, Request
from harness.models.generation import generate_greedy
from harness.models.layouts.tokens import EVIDENCE_RULE, OVERLAP_TOL, overlapping
from harness.models.loading import is_tiny, load_pretrained, load_tiny, torch_dtype

if TYPE_CHECKING:
    from harness.api.model import TokenSpans
    from harness.api.payloads import Evidence
    from harness.api.specs import ModelSpec
    from harness.models.layouts.tokens import Footprints, Layout
    from harness.models.unit import FamilyUnit

__all__ = [
    "HFAdapter",
    "chat_messages",
    "media_of",
    "load_pretrained",
    "torch_dtype",
    "positions_of",
    "instruction_positions",
    "generate_greedy",
    "EVIDENCE_RULE",
    "OVERLAP_TOL",
    "overlapping",
]


def media_of(request: Request) -> tuple[list[Any], list[Any]]:
    """(still images in display order — images then pages —, video clips as frame lists)."""
    images = list(request.visual_inputs())
    videos = [list(request.video.frames)] if request.video is not None else []
    return images, videos


def chat_messages(
    request: Request,
    *,
    video_as: Literal["video", "images"] = "video",
    system: str | None = None,
) -> list[dict[str, Any]]:
    """One user turn in HF's multimodal chat format: media first, then the instruction.

    Args:
        request: The request.
        video_as: ``"video"`` gives one ``{"type": "video"}`` item; ``"images"`` one
            ``{"type": "image"}`` item per frame (families without a video path).
        system: Optional system message text (None: the template's default, if any).

    Returns:
        ``[{"role": "user", "content": [...]}]`` (plus a leading system message if given).
        Media come before the text on purpose: placeholder expansion then never shifts the
        tokens that follow the instruction (see :func:`instruction_positions`).
    """
    content: list[dict[str, Any]] = [{"type": "image"} for _ in request.visual_inputs()]
    if request.video is not None:
        if video_as == "video":
            content.append({"type": "video"})
        else:
            content.extend({"type": "image"} for _ in request.video.frames)
    content.append({"type": "text", "text": request.text})
    messages: list[dict[str, Any]] = []
    if system is not None:
        messages.append({"role": "system", "content": [{"type": "text", "text": system}]})
    messages.append({"role": "user", "content": content})
    return messages


def _ready(model: Any) -> Any:
    from harness.attention.dispatch import use_dispatch

    return use_dispatch(model.eval())


def positions_of(input_ids: Sequence[int], token_id: int) -> list[int]:
    """Positions of ``token_id`` in ``input_ids``, in order."""
    return [i for i, t in enumerate(input_ids) if t == token_id]


def instruction_positions(
    tokenizer: Any, prompt: str, instruction: str, input_ids: Sequence[int]
) -> tuple[int, ...]:
    """Positions of the instruction's tokens in a request's (expanded, unpadded) ``input_ids``.

    ``prompt`` is the rendered chat template *before* placeholder expansion. The instruction is
    found in it by character offsets (its last occurrence), and since every media placeholder
    precedes the instruction (:func:`chat_messages`), the tokens from the instruction to the end
    are the same before and after expansion: positions are counted from the end, and that
    identity is checked.

    Raises:
        ValueError: the instruction is empty or not found, or the tail does not match.
    """
    if not instruction.strip():
        raise ValueError("empty instruction text")
    start = prompt.rfind(instruction)
    if start < 0:
        raise ValueError("instruction text not found in the rendered prompt")
    end = start + len(instruction)
    enc = tokenizer(prompt, add_special_tokens=False, return_offsets_mapping=True)
    ids, offsets = list(enc["input_ids"]), enc["offset_mapping"]
    hits = [i for i, (a, b) in enumerate(offsets) if b > a and a < end and b > start]
    if not hits:
        raise ValueError("instruction has no tokens")
    tail = ids[hits[0] :]
    shift = len(input_ids) - len(ids)
    if shift < 0 or list(input_ids[len(input_ids) - len(tail) :]) != tail:
        raise ValueError("prompt tail differs after placeholder expansion (media after the text?)")
    return tuple(range(hits[0] + shift, hits[-1] + 1 + shift))


class HFAdapter(ModelAdapter):
    """A model adapter over a HF ``*ForConditionalGeneration`` and its processor.

    A family subclass registers with ``@model_family`` and declares its
    :class:`~harness.models.unit.FamilyUnit` as ``unit``: ``model_class``,
    ``default_pretrained``, ``box_convention`` and ``video_as`` are taken from it, and
    :meth:`token_spans` / :meth:`token_footprints` come from the unit's layout kind.

    Args:
        spec: Model spec; ``spec.args`` go to ``AutoProcessor.from_pretrained`` as keyword
            arguments unless a subclass consumes them in :meth:`processor_load_kwargs`.
            ``tiny=true`` builds the unit's tiny random instance at real processor geometry
            instead of loading a checkpoint (:mod:`harness.models.tiny`).
    """

    unit: ClassVar[FamilyUnit | None] = None
    model_class: ClassVar[str] = ""
    video_as: ClassVar[Literal["video", "images"]] = "video"
    nest_images: ClassVar[bool] = False
    """Pass images to the processor as one list per request (Gemma 3, PaliGemma)."""
    last_output_ids: list[list[int]] = []
    """New token ids of each row of the last :meth:`generate` call (for tests and logs)."""

    def __init_subclass__(cls, **kwargs: Any) -> None:
        super().__init_subclass__(**kwargs)
        unit = vars(cls).get("unit")
        if unit is not None:
            cls.model_class = unit.model_class
            cls.default_pretrained = unit.default_pretrained
            cls.box_convention = unit.box_convention
            cls.video_as = unit.video_as

    def __init__(self, spec: ModelSpec) -> None:
        super().__init__(spec)
        if is_tiny(spec):
            self.model, self.processor = load_tiny(spec, self.registry_name)
        else:
            self.model, self.processor = load_pretrained(
                spec,
                self.model_class,
                self.default_pretrained,
                processor_kwargs=self.processor_load_kwargs(),
                consumed_args=set(self.spec.args) - set(self.processor_load_kwargs()),
            )
        self._set_left_padding()

    @classmethod
    def from_parts(cls, model: Any, processor: Any, spec: ModelSpec | None = None) -> HFAdapter:
        """Wrap an already-built ``(model, processor)`` pair (tests, custom loading).

        The model is put in eval mode and its text decoder switched to the dispatch.
        """
        from harness.api.specs import ModelSpec

        self = cls.__new__(cls)
        ModelAdapter.__init__(self, spec or ModelSpec(name=cls.registry_name or "hf"))
        self.model = _ready(model)
        self.processor = processor
        self._set_left_padding()
        return self

    def _set_left_padding(self) -> None:
        tokenizer = getattr(self.processor, "tokenizer", self.processor)
        tokenizer.padding_side = "left"

    @property
    def tokenizer(self) -> Any:
        """The processor's tokenizer."""
        return getattr(self.processor, "tokenizer", self.processor)

    # -- hooks for families ----------------------------------------------------------
    def processor_load_kwargs(self) -> dict[str, Any]:
        """Kwargs for ``AutoProcessor.from_pretrained`` (default: ``spec.args``)."""
        return dict(self.spec.args)

    # -- evidence maps, from the unit's layout kind -------------------------------------
    def visual_token_ids(self) -> tuple[int, ...]:
        """Ids of the tokens that carry visual features (the unit's ``visual_tokens``)."""
        from operator import attrgetter

        names = self.unit.visual_tokens if self.unit is not None else ("image_token_id",)
        return tuple(int(attrgetter(name)(self.processor)) for name in names)

    @property
    def gives_footprints(self) -> bool:
        """Whether :meth:`token_footprints` can answer: a unit, or a family's own method."""
        own = type(self).token_footprints is not HFAdapter.token_footprints
        return self.unit is not None or own

    def token_footprints(self, request: Request) -> Footprints:
        """Every visual token's position and footprint in original pixels (the layout kind's)."""
        if self.unit is None:
            raise NotImplementedError(f"{type(self).__name__} declares no FamilyUnit")
        return self.unit.layout.footprints(self, request, self.encode([request]))

    def layout(self, request: Request) -> Layout:
        """Footprints of all visual tokens of ``request``, in position order."""
        return self.token_footprints(request).layout

    def token_spans(self, request: Request, evidence: Evidence | None = None) -> TokenSpans:
        """Ω(V*) (tokens whose footprint overlaps the evidence), instruction, visual tokens.

        Raises:
            EvidenceError: evidence empty, degenerate, outside the media the model sees.
        """
        from harness.api.model import TokenSpans
        from harness.models.layouts.tokens import select_tokens

        if self.unit is None:
            raise NotImplementedError(f"{type(self).__name__} declares no FamilyUnit")
        inputs = self.encode([request])
        ids = inputs["input_ids"][0].tolist()
        found = self.unit.layout.footprints(self, request, inputs)
        visual = [int(p) for p in found.positions]
        instruction = instruction_positions(self.tokenizer, self.render(request), request.text, ids)
        covered: tuple[int, ...] = ()
        if evidence is not None:
            chosen = select_tokens(found.layout, request, evidence, found.frames_per_token)
            covered = tuple(visual[i] for i in chosen)
        return TokenSpans(
            evidence=covered, instruction=instruction, visual=tuple(visual), seq_len=len(ids)
        )

    def build_messages(self, request: Request) -> list[dict[str, Any]]:
        """The chat messages of ``request`` (default: :func:`chat_messages`)."""
        return chat_messages(request, video_as=self.video_as)

    def processor_kwargs(self, requests: list[Request]) -> dict[str, Any]:
        """Extra keyword arguments for the processor call (e.g. video metadata)."""
        return {}

    # -- inputs ------------------------------------------------------------------------
    def render(self, request: Request) -> str:
        """The chat-template prompt of ``request`` (before placeholder expansion)."""
        return self.processor.apply_chat_template(
            self.build_messages(request), tokenize=False, add_generation_prompt=True
        )

    def processor_text(self, request: Request) -> str:
        """The text given to the processor (default: :meth:`render`).

        PaliGemma's lacks the ``<bos>`` and newline its processor adds itself.
        """
        return self.render(request)

    def encode(self, requests: list[Request]) -> Any:
        """Processor output for a batch (left padded, CPU tensors)."""
        if self.unit is not None and "video" not in self.unit.capabilities:
            if any(r.video is not None for r in requests):
                from harness.api.errors import UsageError

                raise UsageError(
                    f"model family {self.registry_name!r} takes no video (its unit's "
                    f"capabilities: {', '.join(sorted(self.unit.capabilities))})",
                    hint="run its image and document tasks, or a family with video",
                )
        texts = [self.processor_text(r) for r in requests]
        images, videos, nested = [], [], []
        for request in requests:
            still, clips = media_of(request)
            if self.video_as == "images":
                still = still + [frame for clip in clips for frame in clip]
            else:
                videos.extend(clips)
            images.extend(still)
            nested.append(still)
        kwargs = dict(self.processor_kwargs(requests))
        if images:
            kwargs["images"] = nested if self.nest_images else images
        if videos:
            kwargs["videos"] = videos
        return self.processor(text=texts, padding=True, return_tensors="pt", **kwargs)

    def prepare(self, requests: list[Request]) -> dict[str, Any]:
        """Model inputs for a batch (left padded) on the model's device; pixels in its dtype."""
        inputs = self.encode(requests).to(self.model.device)
        for key, value in inputs.items():
            # only pixels follow the model dtype: e.g. Qwen2.5's second_per_grid_ts stays fp32
            if key.startswith("pixel_values") and hasattr(value, "to"):
                inputs[key] = value.to(self.model.dtype)
        return inputs

    def shared_inputs(self, requests: list[Request]) -> Any:
        """:meth:`prepare`'s inputs, built once per batch and reused by every cell."""
        return self.prepare(requests) if requests else None

    @contextmanager
    def reuse_vision(self, check: bool = False) -> Iterator[Any]:
        """A :class:`~harness.models.vision_memo.VisionMemo` over this model for one batch.

        Args:
            check: Recompute every reused pass and compare (the memo's check switch).
        """
        from harness.models.vision_memo import VisionMemo

        with VisionMemo(self.model, check=check).installed() as memo:
            yield memo

    # -- outputs -------------------------------------------------------------------------
    def generate(self, requests: list[Request], inputs: Any = None) -> list[Generation]:
        """Generation for a batch (left padded; each row cut to its budget).

        Greedy unless the run's :attr:`gen_kwargs` say otherwise; their ``max_new_tokens``
        replaces every request's own budget.

        Args:
            requests: The batch.
            inputs: Its :meth:`shared_inputs` (built once for every cell), or None: built here.
        """
        if not requests:
            return []
        if inputs is None:
            inputs = self.prepare(requests)
        fixed = self.gen_kwargs.get("max_new_tokens")
        budgets = [fixed or r.max_new_tokens for r in requests]
        ids: list[list[int]] = []
        out = generate_greedy(self.model, self.tokenizer, inputs, budgets, ids_out=ids,
                              gen_kwargs=self.gen_kwargs, seed=self.gen_seed)  # fmt: skip
        self.last_output_ids = ids
        return out

    def settings(self) -> dict[str, Any]:
        """Base settings plus processor resolution options (``spec.args``)."""
        out = super().settings()
        if is_tiny(self.spec):  # random weights: never merge with a checkpoint's numbers
            seed = int(self.spec.args.get("seed", 0))
            out["pretrained"] = f"tiny-random:{self.registry_name}" + (f":seed={seed}" * bool(seed))
        out["model_class"] = self.model_class
        out["args"] = dict(self.spec.args)
        out["evidence_rule"] = EVIDENCE_RULE
        return out
