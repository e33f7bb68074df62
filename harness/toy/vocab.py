"""Word-level vocabulary, tokenizer, chat template and processor of the ``toy`` model.

Used by ``scripts/train_toy.py`` to build what ships in ``harness/assets/toy``; at run time the
files are loaded with ``AutoProcessor.from_pretrained`` and nothing here is needed.

Tokenisation: split on whitespace, then into numbers (``0.53``), words and single punctuation
marks. Decoding joins tokens with single spaces, so the model's answers decode as e.g.
``"[ 0.53 , 0.28 , 0.72 , 0.47 ]"`` and ``"1 - 3 [ ... ]"``; letters, ``"yes"``/``"no"``,
page numbers and ``"red circle"`` decode unchanged.
"""

from __future__ import annotations

import re
from typing import Any

from harness.toy.scenes import KINDS, SPLITS, generate_samples
from harness.toy.world import IMAGE_SIZE

__all__ = [
    "SPECIALS",
    "IMAGE_TOKEN",
    "PATCH",
    "CHAT_TEMPLATE",
    "PIECE_RE",
    "build_vocab",
    "build_tokenizer",
    "build_processor",
]

IMAGE_TOKEN = "<image>"
SPECIALS = ("<pad>", "<s>", "</s>", "<unk>", IMAGE_TOKEN)
PATCH = 16
PIECE_RE = r"\d+\.\d+|\w+|[^\w\s]"

# One "image k" marker before each image gives frames/pages an explicit index the decoder can
# read (RoPE alone makes "which frame" hard for a 4-layer model). Images always precede the
# text; the assistant turn ends with </s>.
CHAT_TEMPLATE = (
    "{%- set ns = namespace(k=0) -%}"
    "{%- for message in messages -%}"
    "{%- if message['content'] is string -%}{%- set parts = [{'type': 'text', "
    "'text': message['content']}] -%}{%- else -%}{%- set parts = message['content'] -%}"
    "{%- endif -%}"
    "{%- if message['role'] == 'user' -%}{{ 'USER:' }}"
    "{%- for item in parts if item['type'] == 'image' -%}{%- set ns.k = ns.k + 1 -%}"
    "{{ ' image ' ~ ns.k ~ ' <image>' }}{%- endfor -%}"
    "{%- for item in parts if item['type'] == 'text' -%}{{ ' ' ~ item['text'] }}{%- endfor -%}"
    "{%- elif message['role'] == 'assistant' -%}{{ ' ASSISTANT:' }}"
    "{%- for item in parts if item['type'] == 'text' -%}{{ ' ' ~ item['text'] }}{%- endfor -%}"
    "{{ '</s>' }}{%- endif -%}"
    "{%- endfor -%}"
    "{%- if add_generation_prompt -%}{{ ' ASSISTANT:' }}{%- endif -%}"
)


def build_vocab(per_kind: int = 400) -> list[str]:
    """Every word the template and the generator can produce, specials first, then sorted.

    The text space is small and closed, so sampling each kind/split covers it; the coordinate
    and index tokens are added explicitly so no held-out answer can be out of vocabulary.
    """
    words = set("USER ASSISTANT image : , . - [ ] ? ' \n".split())
    words |= {str(i) for i in range(10)}
    words |= {f"{v / IMAGE_SIZE:.2f}" for v in range(IMAGE_SIZE + 1)}
    for kind in KINDS:
        for split in SPLITS:
            for s in generate_samples(kind, split, per_kind, seed=12345):
                words |= set(re.findall(PIECE_RE, s.question + " " + s.answer))
    return list(SPECIALS) + sorted(words - set(SPECIALS))


def build_tokenizer(vocab: list[str]) -> Any:
    """A ``PreTrainedTokenizerFast`` (word level) with ``<image>`` registered as special."""
    from tokenizers import Regex, Tokenizer, models, pre_tokenizers, processors
    from transformers import PreTrainedTokenizerFast

    tok = Tokenizer(models.WordLevel({w: i for i, w in enumerate(vocab)}, unk_token="<unk>"))
    tok.pre_tokenizer = pre_tokenizers.Sequence(
        [
            pre_tokenizers.WhitespaceSplit(),
            pre_tokenizers.Split(Regex(PIECE_RE), behavior="isolated"),
        ]
    )
    tok.post_processor = processors.TemplateProcessing(
        single="<s> $A", pair="<s> $A $B", special_tokens=[("<s>", vocab.index("<s>"))]
    )
    tok.add_special_tokens(list(SPECIALS))
    return PreTrainedTokenizerFast(
        tokenizer_object=tok,
        bos_token="<s>",
        eos_token="</s>",
        unk_token="<unk>",
        pad_token="<pad>",
        extra_special_tokens={"image_token": IMAGE_TOKEN},
        clean_up_tokenization_spaces=False,
        padding_side="left",
        model_max_length=512,
    )


def build_processor(tokenizer: Any) -> Any:
    """``LlavaProcessor`` with a PIL-backend CLIP image processor (no torchvision needed)."""
    from transformers import LlavaProcessor
    from transformers.models.clip.image_processing_pil_clip import CLIPImageProcessorPil

    image_processor = CLIPImageProcessorPil(
        size={"shortest_edge": IMAGE_SIZE}, crop_size={"height": IMAGE_SIZE, "width": IMAGE_SIZE}
    )
    return LlavaProcessor(
        image_processor=image_processor,
        tokenizer=tokenizer,
        patch_size=PATCH,
        vision_feature_select_strategy="default",
        num_additional_image_tokens=1,  # CLIP's CLS, dropped by the "default" strategy
        chat_template=CHAT_TEMPLATE,
    )
