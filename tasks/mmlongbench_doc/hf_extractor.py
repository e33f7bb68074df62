r"""A local answer extractor for MMLongBench-Doc: any chat model transformers can load.

The release (mayubo2333/MMLongBench-Doc ``eval/extract_answer.py::extract_answer``) asks GPT-4o
to extract the answer; ``extractor="hf:PATH"`` asks a local chat model the same request, so
the official metric can be reproduced offline (on a GPU for a useful model):

- the messages are the release's: its ``prompt_for_answer_extraction.md`` as the user turn,
  then an assistant turn "\n\nQuestion:{question}\nAnalysis:{reply}\n"; the model's chat
  template renders them with a generation prompt, so the model writes the next assistant turn,
  as the API model does;
- decoding is greedy (the release sends temperature 0, top_p 1) with at most 256 new tokens
  (its max_tokens); the answer is read from "Extracted answer: … Answer format: …" by
  :func:`~tasks.mmlongbench_doc.official.parse_extraction`, as the release reads GPT-4o's;
- replies are extracted in batches (left padding) through :meth:`HFExtractor.prefetch`, which
  the task calls once per batch of scored replies, and cached per (model, prompt, question,
  reply): a reply is never extracted twice, and with ``extractor_cache=FILE`` (JSON lines,
  appended) not even across runs or ``headscope rescore``.

What changes numbers is recorded in the task settings: the model path and a hash of its
``config.json``, the prompt's SHA-256, dtype, decoding, batch size (padding can move a
low-precision model's greedy choice).
"""

from __future__ import annotations

import hashlib
import json
import os
from collections.abc import Iterable, Sequence
from pathlib import Path
from typing import Any

from harness.api.errors import UsageError
from tasks.mmlongbench_doc.official import (
    extraction_messages,
    parse_extraction,
    read_extraction_prompt,
)

__all__ = ["HFExtractor", "MAX_NEW_TOKENS"]

MAX_NEW_TOKENS = 256  # the release's max_tokens


def _sha256(data: bytes) -> str:
    return hashlib.sha256(data).hexdigest()


# A tokenizer transformers can load offline has one of these (tokenizer.json: fast tokenizers;
# tokenizer_config.json: every tokenizer saved by save_pretrained).
_TOKENIZER_FILES = ("tokenizer.json", "tokenizer_config.json")


def _check_checkpoint(model: str) -> None:
    """Refuse a folder that holds no model config or no tokenizer (e.g. an empty one)."""
    folder = Path(model)
    missing = [] if (folder / "config.json").is_file() else ["config.json"]
    if not any((folder / name).is_file() for name in _TOKENIZER_FILES):
        missing.append(" or ".join(_TOKENIZER_FILES))
    if missing:
        raise UsageError(
            f"extractor 'hf:{model}': no {' and no '.join(missing)} in that folder, so it holds "
            "no chat model transformers can load",
            hint="give the local folder of a downloaded chat model: config, weights, tokenizer",
        )


def _check_cache_file(path: str) -> None:
    """Refuse an ``extractor_cache`` that is a folder, or whose folder cannot be written."""
    from harness.api.paths import why_unwritable

    target = Path(path)
    problem = None
    if target.exists() and not target.is_file():
        problem = f"extractor_cache {path!r} is not a regular file"
    elif target.exists() and not os.access(target, os.W_OK):
        problem = f"extractor_cache {path!r} is not writable"
    else:
        problem = why_unwritable(target.parent, f"extractor_cache {path!r}: folder")
    if problem is not None:
        raise UsageError(problem, hint="give a file path where the cache can be written")


class HFExtractor:
    """The release's extraction request, answered by a local transformers chat model.

    Args:
        model: Local directory of a causal chat model with a chat template.
        prompt_file: The release's ``eval/prompt_for_answer_extraction.md``.
        device: "auto" (CUDA when available, else CPU), "cpu", "cuda", "cuda:N".
        dtype: "auto" (the checkpoint's), "float32", "bfloat16" or "float16".
        batch_size: Replies per generate call.
        cache_file: JSON-lines cache of extractions, read at start and appended to.
    """

    name = "hf"

    def __init__(
        self,
        model: str,
        prompt_file: str,
        device: str = "auto",
        dtype: str = "auto",
        batch_size: int = 8,
        cache_file: str | None = None,
    ) -> None:
        if not model:
            raise UsageError("extractor 'hf:PATH' needs the model's PATH after 'hf:'")
        if not Path(model).is_dir():
            raise UsageError(
                f"extractor 'hf:{model}': not a directory; download the chat model first "
                "(e.g. `huggingface-cli download Qwen/Qwen2.5-7B-Instruct --local-dir DIR`) "
                "and give its local folder"
            )
        _check_checkpoint(model)
        if device != "auto":
            from harness.models.loading import missing_device

            problem = missing_device(device)
            if problem is not None:
                raise UsageError(
                    f"extractor_device: {problem}", hint='use "auto", "cpu" or a device it has'
                )
        if cache_file:
            _check_cache_file(cache_file)
        if dtype not in ("auto", "float32", "bfloat16", "float16"):
            raise UsageError(
                f"extractor_dtype must be auto/float32/bfloat16/float16, not {dtype!r}"
            )
        if batch_size < 1:
            raise UsageError(f"extractor_batch_size must be ≥ 1, got {batch_size}")
        self.prompt, self.prompt_sha256 = read_extraction_prompt(prompt_file, f"hf:{model}")
        self.model_path, self.device, self.dtype = model, device, dtype
        self.batch_size = batch_size
        config = Path(model) / "config.json"
        self.config_sha256 = _sha256(config.read_bytes()) if config.is_file() else None
        self.cache_file = Path(cache_file) if cache_file else None
        self._cache: dict[str, str] = self._read_cache()
        self._loaded: tuple[Any, Any] | None = None
        self.generate_calls = 0

    # -- the request -------------------------------------------------------------------------
    def messages(self, question: str, reply: str) -> list[dict[str, str]]:
        """The release's two messages for one reply."""
        return extraction_messages(self.prompt, question, reply)

    def key(self, question: str, reply: str) -> str:
        """Cache key: what decides the extraction (model, prompt, dtype, question, reply)."""
        ident = [self.model_path, self.config_sha256, self.prompt_sha256, self.dtype]
        return _sha256(json.dumps([*ident, question, reply], ensure_ascii=False).encode())

    # -- extraction --------------------------------------------------------------------------
    def __call__(self, question: str, reply: str) -> str:
        """The extracted answer of one reply (from the cache, else extracted now)."""
        key = self.key(question, reply)
        if key not in self._cache:
            self.prefetch([(question, reply)])
        return self._cache[key]

    def prefetch(self, pairs: Iterable[tuple[str, str]]) -> None:
        """Extract every (question, reply) not cached yet, ``batch_size`` at a time."""
        todo: dict[str, tuple[str, str]] = {}
        for question, reply in pairs:
            key = self.key(question, reply)
            if key not in self._cache:
                todo.setdefault(key, (question, reply))
        keys = list(todo)
        for start in range(0, len(keys), self.batch_size):
            chunk = keys[start : start + self.batch_size]
            outputs = self._generate([todo[k] for k in chunk])
            found = {k: parse_extraction(text) for k, text in zip(chunk, outputs, strict=True)}
            self._cache.update(found)
            self._append_cache(found)

    def _generate(self, pairs: Sequence[tuple[str, str]]) -> list[str]:
        import torch

        model, tokenizer = self._load()
        texts = [
            tokenizer.apply_chat_template(
                self.messages(q, r), tokenize=False, add_generation_prompt=True
            )
            for q, r in pairs
        ]
        batch = tokenizer(texts, return_tensors="pt", padding=True, add_special_tokens=False)
        batch = batch.to(model.device)
        with torch.inference_mode():
            out = model.generate(
                **batch,
                do_sample=False,
                max_new_tokens=MAX_NEW_TOKENS,
                pad_token_id=tokenizer.pad_token_id,
            )
        self.generate_calls += 1
        new = out[:, batch["input_ids"].shape[1] :]
        return tokenizer.batch_decode(new, skip_special_tokens=True)

    def _load(self) -> tuple[Any, Any]:
        if self._loaded is not None:
            return self._loaded
        import torch
        from transformers import AutoModelForCausalLM, AutoTokenizer

        try:
            tokenizer = AutoTokenizer.from_pretrained(self.model_path, local_files_only=True)
            dtype = "auto" if self.dtype == "auto" else getattr(torch, self.dtype)
            model = AutoModelForCausalLM.from_pretrained(
                self.model_path, dtype=dtype, local_files_only=True
            )
        except Exception as exc:
            from harness.models.loading import damaged_weights

            if not (isinstance(exc, OSError) or damaged_weights(exc)):
                raise
            raise UsageError(
                f"extractor 'hf:{self.model_path}': no loadable chat model there "
                f"(give a local directory with config, weights and tokenizer): {exc}"
            ) from None
        if tokenizer.chat_template is None:
            raise UsageError(
                f"extractor 'hf:{self.model_path}': the tokenizer has no chat template"
            )
        tokenizer.padding_side = "left"
        if tokenizer.pad_token_id is None:
            tokenizer.pad_token = tokenizer.eos_token
        device = self.device
        if device == "auto":
            device = "cuda" if torch.cuda.is_available() else "cpu"
        self._loaded = (model.to(device).eval(), tokenizer)
        return self._loaded

    # -- cache file --------------------------------------------------------------------------
    def _read_cache(self) -> dict[str, str]:
        if self.cache_file is None or not self.cache_file.is_file():
            return {}
        text = self.cache_file.read_text(encoding="utf-8")
        cache = {}
        for line in text.splitlines():
            try:
                row = json.loads(line)
                cache[str(row["key"])] = str(row["extracted"])
            except (ValueError, KeyError, TypeError):
                continue  # a torn last line (killed mid-write) is extracted again
        return cache

    def _append_cache(self, found: dict[str, str]) -> None:
        if self.cache_file is None or not found:
            return
        self.cache_file.parent.mkdir(parents=True, exist_ok=True)
        lines = "".join(json.dumps({"key": k, "extracted": v}) + "\n" for k, v in found.items())
        with self.cache_file.open("a+", encoding="utf-8") as fh:
            fh.seek(0, 2)
            if fh.tell():  # after a torn last line, start on a fresh one
                fh.seek(fh.tell() - 1)
                if fh.read(1) != "\n":
                    lines = "\n" + lines
            fh.write(lines)

    def settings(self) -> dict[str, Any]:
        """What to record."""
        return {
            "extractor": self.name,
            "extractor_model": self.model_path,
            "extractor_model_config_sha256": self.config_sha256,
            "extractor_prompt_sha256": self.prompt_sha256,
            "extractor_dtype": self.dtype,
            "extractor_decoding": f"greedy, max_new_tokens={MAX_NEW_TOKENS}",
            "extractor_batch_size": self.batch_size,
        }
