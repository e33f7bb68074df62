"""Training batches of the embedded ``toy`` model (used by ``scripts/train_toy.py``).

Every batch goes through the exact inference path (chat template, then the processor), with the
loss on the answer and ``</s>`` only, plus what the auxiliary losses need: each vision token's
content class and the token positions of the evidence and of the question's object noun.
torch is imported inside :func:`collate` so importing this module stays light.
"""

from __future__ import annotations

from harness.toy.builders import ALL_TYPES
from harness.toy.world import GRID, box_cell

__all__ = [
    "N_CELL_CLASSES",
    "prompt_of",
    "cell_labels",
    "noun_position",
    "page_position",
    "image_index",
    "collate",
]

N_CELL_CLASSES = 2 + len(ALL_TYPES)  # empty, text decoy, one per colour×shape


def prompt_of(processor, sample) -> str:
    """The chat-template prompt for ``sample`` (what the adapter will send)."""
    content = [{"type": "image"} for _ in sample.images]
    content.append({"type": "text", "text": sample.question})
    messages = [{"role": "user", "content": content}]
    return processor.apply_chat_template(messages, add_generation_prompt=True, tokenize=False)


def cell_labels(sample) -> list[list[int]]:
    """Per image, the class of each of its 16 vision tokens (row-major)."""
    out = []
    for objs in sample.layout:
        lab = [0] * (GRID * GRID)
        for o in objs:
            cls = 1 if o.shape == "text" else 2 + ALL_TYPES.index((o.color, o.shape))
            lab[o.cell[0] * GRID + o.cell[1]] = cls
        out.append(lab)
    return out


def _question_ids(tok, sample) -> list[int]:
    return tok(sample.question, add_special_tokens=False)["input_ids"]


def _in_prompt(final: int, question: list[int], i: int) -> int:
    # The question ends just before "ASSISTANT :", whose ":" is at ``final``.
    return final - 1 - len(question) + i


def page_position(tok, sample, final: int) -> int | None:
    """Token position of the page number in "... on page k?" (``None`` if the question has none).

    For questions that ask about a page instead of naming an object, the number is what the
    question uses to find the evidence (``collate(..., page_query=True)``).
    """
    q = _question_ids(tok, sample)
    page = tok.convert_tokens_to_ids("page")
    hits = [i + 1 for i in range(len(q) - 1) if q[i] == page]
    return _in_prompt(final, q, hits[-1]) if hits and sample.evidence else None


def noun_position(tok, sample, final: int) -> int | None:
    """Token position of the evidence object's noun in the question (``None`` if unnamed).

    The last occurrence of "colour shape" (e.g. the right option), else of the shape word alone
    ("What colour is the circle?"). Retrieval supervised there is what RAM measures: attention
    from question tokens to the evidence.

    Args:
        tok: The toy tokenizer.
        sample: The sample.
        final: Position of the prompt's last token (``":"`` of ``"ASSISTANT:"``).
    """
    if not sample.evidence:
        return None
    idx, box = sample.evidence[0]
    obj = next(o for o in sample.layout[idx] if o.cell == box_cell(box))
    q = _question_ids(tok, sample)
    colour, shape = tok.convert_tokens_to_ids([obj.color, obj.shape])
    hits = [i for i in range(1, len(q)) if q[i] == shape and q[i - 1] == colour]
    hits = hits or [i for i in range(len(q)) if q[i] == shape]
    if not hits:
        return None
    return _in_prompt(final, q, hits[-1])


def image_index(input_ids, image_id):
    """[batch, seq] 0-based index of the image each vision token belongs to (-1 elsewhere).

    The target of the ``--aux-frame`` probe: "which frame / page is this token on" must be in a
    vision token's residual stream before a reader head copies its content to the question.
    """
    import torch

    is_img = input_ids == image_id
    rank = torch.cumsum(is_img.long(), dim=-1) - 1
    return torch.where(is_img, rank // (GRID * GRID), torch.full_like(rank, -1))


def collate(processor, samples, page_query=False):
    """Tokenise prompt + answer + </s> through the processor; labels only on the answer.

    Args:
        processor: The toy ``LlavaProcessor`` (``harness.toy.vocab.build_processor``).
        samples: :class:`~harness.toy.scenes.MiniSample` list (any mix of kinds).
        page_query: Where a question names no object, use its page number as the "noun"
            (:func:`page_position`).

    Returns:
        Model inputs (right-padded ``input_ids``, ``attention_mask``, ``labels`` with -100
        outside the answer, ``pixel_values``) plus ``cells`` ([images, 16] content classes for
        the vision probe) and ``sup``: per sample (final prompt position, evidence token
        positions, question-noun position or ``None``).
    """
    import torch

    tok = processor.tokenizer
    ids, labels, pixels, cells, sup = [], [], [], [], []
    for s in samples:
        text = prompt_of(processor, s) + " " + s.answer + " </s>"
        enc = processor(images=list(s.images), text=text, return_tensors="pt")
        seq = enc["input_ids"][0]
        n_ans = len(tok(s.answer, add_special_tokens=False)["input_ids"]) + 1
        lab = torch.full_like(seq, -100)
        lab[-n_ans:] = seq[-n_ans:]
        ids.append(seq), labels.append(lab), pixels.append(torch.as_tensor(enc["pixel_values"]))
        cells += cell_labels(s)
        starts = (seq == processor.image_token_id).nonzero().flatten().tolist()[:: GRID * GRID]
        ev = []
        for i, box in s.evidence:
            row, col = box_cell(box)
            ev.append(starts[i] + row * GRID + col)
        final = len(seq) - n_ans - 1  # the prompt's last token (":" of "ASSISTANT:")
        noun = noun_position(tok, s, final)
        if noun is None and page_query:
            noun = page_position(tok, s, final)
        sup.append((final, ev, noun))
    width = max(len(x) for x in ids)
    pad = tok.pad_token_id
    input_ids = torch.full((len(ids), width), pad)
    lab = torch.full((len(ids), width), -100)
    mask = torch.zeros((len(ids), width), dtype=torch.long)
    for i, (x, y) in enumerate(zip(ids, labels)):  # right padding for training
        input_ids[i, : len(x)], lab[i, : len(x)], mask[i, : len(x)] = x, y, 1
    return dict(
        input_ids=input_ids, attention_mask=mask, labels=lab,
        pixel_values=torch.cat(pixels).float(), cells=torch.tensor(cells), sup=sup,
    )  # fmt: skip
