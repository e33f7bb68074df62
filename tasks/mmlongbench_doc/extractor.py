"""Answer extractors for MMLongBench-Doc's official scoring (chosen explicitly, recorded).

The release (mayubo2333/MMLongBench-Doc ``eval/extract_answer.py::extract_answer``) asks
GPT-4o to turn a free-form reply into "Extracted answer: … Answer format: …", then scores
the extracted answer. Two extractors, one of which is named in the task's settings; neither
ever stands in for the other:

- :class:`RuleExtractor` (``extractor="rules"``): no model; headscope's own rule (the release
  has none: GPT-4o extracts). Markdown and a leading "Answer:" are dropped, surrounding
  whitespace and one final "." removed — unless the "." ends an abbreviation ("10:30 a.m.",
  "U.S.", "J.", "Apple Inc.", "Jr."), where the release's ``eval_score`` compares exactly
  (``is_exact_match``: "a.m." / "p.m.") or by ANLS; the "." after a decimal ("3.14.",
  "1,200.50.", "0.5.") is removed (``eval_score``'s ``float`` fails with it); a reply
  that says the question cannot be answered ("not answerable", "unanswerable", "cannot be
  answered", "not mentioned", "no information", or just "N/A") becomes "Not answerable".
- :class:`EndpointExtractor` (``extractor="openai"``): any OpenAI-compatible
  ``/chat/completions`` endpoint, by base URL and model name, sent the release's request
  (the prompt file as the user turn, then an assistant turn of two newlines,
  "Question:" and the question, a newline, "Analysis:" and the reply, a newline;
  temperature 0, max_tokens 256, top_p 1). The prompt file is the release's
  ``eval/prompt_for_answer_extraction.md``, passed by path (not shipped here); its SHA-256
  is recorded. The key, if the endpoint needs one, is read from the environment variable
  named by ``api_key_env``. A failed call raises (the sample is counted as failed), never
  falling back to the rules.
- :class:`~tasks.mmlongbench_doc.hf_extractor.HFExtractor` (``extractor="hf:PATH"``): the
  same request answered by a local chat model that transformers loads from ``PATH``.
"""

from __future__ import annotations

import difflib
import json
import os
import re
from typing import TYPE_CHECKING, Any

from harness.api.errors import UsageError
from tasks.mmlongbench_doc.official import (
    extraction_messages,
    parse_extraction,
    read_extraction_prompt,
)

if TYPE_CHECKING:
    from tasks.mmlongbench_doc.hf_extractor import HFExtractor

__all__ = ["RuleExtractor", "EndpointExtractor", "make_extractor", "NOT_ANSWERABLE"]

NOT_ANSWERABLE = "Not answerable"
_SAYS_NA = re.compile(
    r"not answerable|unanswerable|cannot be answered|can't be answered|not mentioned|"
    r"no information|does not (?:contain|provide|mention|specify)",
    re.I,
)
_SAYS_NA_WHOLE = re.compile(r"n/a", re.I)  # the whole reply, "." allowed after it
# A final "." that belongs to the last word: "a.m.", "U.S.", "e.g." (letters around a dot
# inside the word), an initial ("J.") or a common title / company abbreviation ("Inc.",
# "Jr."). Digits are not letters here: the "." after a decimal ("3.14.", "1,200.50.", "0.5.")
# ends the sentence and is removed, since eval_score's float() fails on "3.14.".
_ABBREVIATION = re.compile(
    r"(?:\b[^\W\d_]+\.[^\W\d_]+\.|\b[A-Za-z]\.|"
    r"\b(?:inc|ltd|co|corp|jr|sr|st|dr|mr|mrs|ms|prof|etc|vs)\.)$",
    re.I,
)
_MARKUP = re.compile(r"[*_`#]+")
_LEAD = re.compile(r"^\s*(?:final\s+)?answer\s*[:：]\s*", re.I)


class RuleExtractor:
    """The reply itself, tidied (see the module docstring)."""

    name = "rules"

    def __call__(self, question: str, reply: str) -> str:
        """The extracted answer of one reply."""
        text = _LEAD.sub("", _MARKUP.sub("", str(reply))).strip()
        if _SAYS_NA.search(text) or _SAYS_NA_WHOLE.fullmatch(text.removesuffix(".")):
            return NOT_ANSWERABLE
        if text.endswith(".") and not _ABBREVIATION.search(text):
            return text[:-1].strip()
        return text

    def settings(self) -> dict[str, Any]:
        """What to record."""
        return {"extractor": self.name}


class EndpointExtractor:
    """An OpenAI-compatible chat endpoint asked as the release asks GPT-4o.

    Args:
        url: Base URL (``…/v1``); ``/chat/completions`` is appended.
        model: Model name sent in the request.
        prompt_file: The release's ``prompt_for_answer_extraction.md``.
        api_key_env: Environment variable holding a bearer key (unset: no header).
        timeout: Seconds per request.
    """

    name = "openai"

    def __init__(
        self,
        url: str,
        model: str,
        prompt_file: str,
        api_key_env: str = "OPENAI_API_KEY",
        timeout: float = 60.0,
    ) -> None:
        if not url or not model:
            raise UsageError("extractor 'openai' needs extractor_url and extractor_model")
        self.prompt, self.prompt_sha256 = read_extraction_prompt(prompt_file, "openai")
        self.url = url.rstrip("/") + "/chat/completions"
        self.model, self.timeout, self.api_key_env = model, timeout, api_key_env

    def request_body(self, question: str, reply: str) -> dict[str, Any]:
        """The JSON body of one request."""
        return {
            "model": self.model,
            "messages": extraction_messages(self.prompt, question, reply),
            "temperature": 0.0,
            "max_tokens": 256,
            "top_p": 1,
            "frequency_penalty": 0,
            "presence_penalty": 0,
        }

    def __call__(self, question: str, reply: str) -> str:
        """The extracted answer of the endpoint's reply (:func:`parse_extraction`).

        Raises:
            RuntimeError: naming the URL when the call fails (no fallback to the rules).
        """
        import urllib.error
        import urllib.request

        headers = {"Content-Type": "application/json"}
        key = os.environ.get(self.api_key_env)
        if key:
            headers["Authorization"] = f"Bearer {key}"
        body = json.dumps(self.request_body(question, reply)).encode()
        req = urllib.request.Request(self.url, data=body, headers=headers, method="POST")
        try:
            with urllib.request.urlopen(req, timeout=self.timeout) as resp:  # noqa: S310
                data = json.loads(resp.read().decode("utf-8"))
            content = str(data["choices"][0]["message"]["content"])
        except (urllib.error.URLError, OSError, ValueError, KeyError, IndexError) as exc:
            raise RuntimeError(
                f"answer extractor at {self.url}: {type(exc).__name__}: {exc}"
            ) from None
        return parse_extraction(content)

    def settings(self) -> dict[str, Any]:
        """What to record (URL, model, prompt hash; never the key)."""
        return {
            "extractor": self.name,
            "extractor_endpoint": self.url,
            "extractor_model": self.model,
            "extractor_prompt_sha256": self.prompt_sha256,
        }


def make_extractor(
    kind: str,
    url: str | None,
    model: str | None,
    prompt: str | None,
    **hf_options: Any,
) -> RuleExtractor | EndpointExtractor | HFExtractor:
    """The extractor named by ``kind``: "rules", "openai" or "hf:PATH" (a local chat model).

    Args:
        kind: The extractor.
        url: Endpoint base URL ("openai").
        model: Model name at the endpoint ("openai").
        prompt: The release's prompt file ("openai", "hf:PATH").
        **hf_options: ``device``, ``dtype``, ``batch_size``, ``cache_file`` of "hf:PATH".
    """
    if kind == "rules":
        if url or model or prompt:
            raise UsageError(
                "extractor_url/model/prompt only apply to extractor='openai' or 'hf:PATH'"
            )
        return RuleExtractor()
    if kind == "openai":
        return EndpointExtractor(url or "", model or "", prompt or "")
    if kind.startswith("hf:"):
        if url or model:
            raise UsageError("extractor_url/extractor_model only apply to extractor='openai'")
        from tasks.mmlongbench_doc.hf_extractor import HFExtractor

        return HFExtractor(kind[3:], prompt or "", **hf_options)
    close = difflib.get_close_matches(kind, ["rules", "openai"], n=1, cutoff=0.5)
    if kind.lower().startswith("hf"):
        close = ["hf:PATH"]
    hint = f"; did you mean {close[0]!r}?" if close else ""
    raise UsageError(f"extractor must be 'rules', 'openai' or 'hf:PATH', not {kind!r}{hint}")
