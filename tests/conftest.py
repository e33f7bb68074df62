"""Shared pytest setup: deterministic, single-threaded, offline."""

import os

os.environ.setdefault("HF_HUB_OFFLINE", "1")
os.environ.setdefault("HF_DATASETS_OFFLINE", "1")
os.environ.setdefault("TRANSFORMERS_OFFLINE", "1")
os.environ.setdefault("TOKENIZERS_PARALLELISM", "false")

# Tests needing Chromium or pdflatex: one summary line when they skip, a failure in CI.
from tests.system_skips import pytest_runtest_makereport, pytest_terminal_summary  # noqa: E402, F401
