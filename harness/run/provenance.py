"""Provenance recorded in every results file: versions, git state, device, settings."""

from __future__ import annotations

import datetime as _dt
import platform
import subprocess
import sys
from pathlib import Path
from typing import Any

__all__ = ["collect_provenance", "git_state", "package_version"]


def package_version() -> str:
    """The installed headscope version (falls back to the source tree's)."""
    from harness import __version__

    return __version__


def git_state(root: Path | None = None) -> dict[str, Any]:
    """``{"commit", "dirty"}`` of the checkout holding headscope (None when not a git tree)."""
    root = root or Path(__file__).resolve().parent.parent
    try:
        commit = subprocess.run(
            ["git", "-C", str(root), "rev-parse", "HEAD"],
            capture_output=True,
            text=True,
            timeout=10,
            check=True,
        ).stdout.strip()
        status = subprocess.run(
            ["git", "-C", str(root), "status", "--porcelain", "--untracked-files=no"],
            capture_output=True,
            text=True,
            timeout=10,
            check=True,
        ).stdout
        return {"commit": commit, "dirty": bool(status.strip())}
    except (OSError, subprocess.SubprocessError):
        return {"commit": None, "dirty": None}


def _environment(adapter: Any) -> dict[str, Any]:
    env: dict[str, Any] = {
        "python": sys.version.split()[0],
        "platform": platform.platform(),
    }
    for name in ("torch", "transformers"):
        module = sys.modules.get(name)
        env[name] = getattr(module, "__version__", None) if module else None
    model = getattr(adapter, "model", None)
    device = None
    if model is not None and hasattr(model, "parameters"):
        try:
            device = str(next(model.parameters()).device)
        except StopIteration:
            device = None
    env["device"] = device
    if env["torch"]:
        from harness.api.threads import record

        env.update(record())  # CPU threads and OpenMP wait policy (speed, not numbers)
    return env


def _window_kernel(adapter: Any) -> dict[str, Any]:
    from harness.attention.dispatch import resolved_window_kernel, window_kernel

    device = _environment(adapter)["device"] or "cpu"
    return {"selected": window_kernel(), "prefill": resolved_window_kernel(device)}


def _layer_kinds(adapter: Any) -> list[str] | None:
    """Each decoder layer's kind, when the decoder is not all full attention, else None.

    E.g. ``sliding_attention(1024)`` or ``linear_attention``
    (:func:`harness.api.anatomy.layer_kinds`); None too for a model without an HF config.
    """
    from harness.api.anatomy import layer_kinds

    model = getattr(adapter, "model", None)
    try:
        kinds = [str(k) for k in layer_kinds(model)]
    except AttributeError:  # mock and rule-based adapters have no HF text config
        return None
    return None if set(kinds) == {"full_attention"} else kinds


def collect_provenance(adapter: Any) -> dict[str, Any]:
    """Everything ``RunResults`` needs besides the spec and the entries."""
    settings = dict(adapter.settings())
    try:
        geometry = adapter.geometry
        settings["geometry"] = {
            k: getattr(geometry, k)
            for k in ("num_layers", "num_heads", "num_kv_heads", "head_dim", "hidden_size")
        }
    except Exception:  # noqa: BLE001 - mock adapters have no geometry
        settings["geometry"] = None
    kinds = _layer_kinds(adapter)
    if kinds is not None:
        settings["layer_kinds"] = kinds
    return {
        "headscope_version": package_version(),
        "git": git_state(),
        "environment": _environment(adapter),
        "model": settings,
        "settings": {
            "dtype": settings.get("dtype"),
            "attn_implementation": settings.get("attn_implementation"),
            "dispatch": "headscope",
            # windowed heads: the selected kernel, and what it means on the model's device
            # (flex falls back to chunked where it cannot run; entries record what ran)
            "window_kernel": _window_kernel(adapter),
        },
        "created": _dt.datetime.now(_dt.timezone.utc).isoformat(timespec="seconds"),
    }
