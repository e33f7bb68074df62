"""CUDA suite: every test here carries the ``cuda`` marker and is skipped without a GPU.

Run it with ``python -m pytest -q tests/gpu`` (or ``scripts/device_check.sh``, which also runs
the GPU benchmarks and writes a JSON report). CI has no GPU: the suite is collected and
skipped there.

``HEADSCOPE_GPU_TESTS_DEVICE=cpu`` runs the suite on the CPU instead (a dry run of the test
code for machines without a GPU; compiled kernels then run eagerly and CUDA-only checks are
skipped inside the tests). Results of a dry run say nothing about CUDA.
"""

import os

import pytest


def _cuda_available() -> bool:
    if os.environ.get("HEADSCOPE_GPU_TESTS_DEVICE", "cuda") != "cuda":
        return True  # dry run on another device
    try:
        import torch
    except ImportError:
        return False
    return bool(torch.cuda.is_available())


def pytest_collection_modifyitems(config, items):
    skip = pytest.mark.skip(reason="needs a CUDA device")
    here = __file__.rsplit("/", 1)[0]
    for item in items:
        if str(item.fspath).startswith(here):
            item.add_marker(pytest.mark.cuda)
            if not _cuda_available():
                item.add_marker(skip)
