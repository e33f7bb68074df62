"""Counts, named groups and the Markdown table of scripts/scan_families.py's rows."""

from __future__ import annotations

from typing import Any


def families() -> dict[str, list[str]]:
    """transformers class → headscope families whose unit declares it."""
    from harness.models.unit import units

    out: dict[str, list[str]] = {}
    for name, unit in units().items():
        out.setdefault(unit.model_class, []).append(name)
    return out


def footprint_families() -> set[str]:
    """The families tests/integration/test_footprints.py parametrises over (its ALL)."""
    from harness.models.unit import unit_names

    return set(unit_names())


def summary(rows: list[dict[str, Any]]) -> dict[str, int]:
    """Counts over the rows (each a model type of the mapping)."""
    built = [r for r in rows if r.get("build") == "ok"]
    return {
        "model_types": len(rows),
        "classes": len({r["class"] for r in rows}),
        "tiny_build_ok": len(built),
        "forward_ok": sum(r.get("forward") is not None for r in built),
        "routed": sum(bool(r.get("routed")) for r in built),
        "routed_once_per_layer": sum(bool(r.get("once")) for r in built),
        "all_decoder_layers_called": sum(
            bool(r.get("routed")) and r["layers_called"] == r["decoder_layers"] for r in built
        ),
        "sliding_kwarg_seen": sum(bool(r.get("sliding")) for r in built),
        "config_sliding_or_chunked": sum(r["config_sliding"] for r in rows),
        "sliding_config_or_kwarg": sum(r["config_sliding"] or bool(r.get("sliding")) for r in rows),
        "config_layers_without_heads": sum(r["no_head_layers"] for r in rows),
        "refused_encoder_decoder": sum(r["refused"] == "encoder-decoder" for r in rows),
        "refused_cross_attention": sum(r["refused"] == "cross-attention" for r in rows),
        "grid_ok": sum(r.get("grid") == "ok" for r in rows),
        "with_family_unit": sum(bool(r["family"]) for r in rows),
        "footprints_tested": sum(bool(r["footprints"]) for r in rows),
    }


COLUMNS = (
    "model type",
    "class",
    "tiny build",
    "routed",
    "once",
    "layers called",
    "sliding",
    "layer kinds",
    "grid",
    "family",
    "footprints",
)


def groups(rows: list[dict[str, Any]]) -> dict[str, list[str]]:
    """The model types behind the counts that need names."""

    def names(test: Any) -> list[str]:
        return [r["model_type"] for r in rows if test(r)]

    built = lambda r: r.get("build") == "ok"  # noqa: E731
    return {
        "build_failed_default_builds": names(
            lambda r: not built(r) and r.get("default_build") == "ok"
        ),
        "build_failed_default_fails_too": names(
            lambda r: not built(r) and r.get("default_build") != "ok"
        ),
        "forward_failed": names(lambda r: built(r) and r.get("forward") is None),
        "not_routed": names(lambda r: r.get("forward") and not r.get("routed")),
        "layers_not_called": names(
            lambda r: r.get("routed") and r["layers_called"] != r["decoder_layers"]
        ),
        "sliding": names(lambda r: r["config_sliding"] or r.get("sliding")),
        "config_layers_without_heads": names(lambda r: r["no_head_layers"]),
        "refused": names(lambda r: r.get("refused")),
        "grid_failed": names(lambda r: r.get("routed") and r.get("grid") not in ("ok", "refused")),
    }


def _mark(value: Any) -> str:
    return {True: "yes", False: "no"}.get(value, "-") if value in (True, False, None) else value


def _cells(r: dict[str, Any]) -> list[str]:
    built = r.get("build") == "ok"
    if not built:
        return [r["model_type"], r["class"], r["build"], *["-"] * 5, *_tail(r)]
    routed = _mark(r.get("routed")) if r.get("forward") else r.get("forward_error") or "-"
    called = f"{r['layers_called']}/{r['decoder_layers']}" if "layers_called" in r else "-"
    once, sliding = _mark(r.get("once")), _mark(r.get("sliding"))
    return [r["model_type"], r["class"], "ok", routed, once, called, sliding, *_tail(r)]


def _tail(r: dict[str, Any]) -> list[str]:
    grid = r.get("grid", "-")
    if grid == "refused":
        grid = f"refused ({r['refused']})"
    family = ", ".join(r["family"]) or "-"
    return [", ".join(r["layer_types"]) or "-", grid, family, _mark(r["footprints"])]


def table(rows: list[dict[str, Any]]) -> str:
    """The Markdown table, one row per model type."""
    lines = ["| " + " | ".join(COLUMNS) + " |", "|" + "---|" * len(COLUMNS)]
    for r in rows:
        lines.append("| " + " | ".join(str(c).replace("|", "/") for c in _cells(r)) + " |")
    return "\n".join(lines)
