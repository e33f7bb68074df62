"""Write the static site: Jinja2 pages, the package's CSS/JS, figures, media and data files.

Layout of the output folder::

    index.html  heads.html  samples.html  sample.html     the pages (Jinja2 templates)
    assets/     viewer.css and the page scripts (copied from the package)
    figures/    the leaderboard figures (PNG, written once)
    media/      the attention maps' images, pages and frames (copied once), and
                docs/<task>/<doc>/ every sample's media (:mod:`viewer.media`)
    data/       index.js, heads.js, maps/<ranking>/<task>.js,
                samples/<task>/table.js and chunk-<i>.js

Data files are JavaScript (``HS.put("data/…", {...});``) loaded by ``<script>`` tags, so the
site opens from ``file://`` with no server and no network; each page loads only the files it
shows (the samples list one table per task, a sample page one chunk).
"""

from __future__ import annotations

import copy
import json
import math
import shutil
from pathlib import Path
from typing import Any

from harness.api.errors import UsageError
from viewer.confine import slug
from viewer.stamp import STAMP

__all__ = ["build_site", "write_data", "PAGES", "slug"]

PAGES = ("index", "heads", "samples", "sample")
#: Marks a folder as a site this module wrote (so a rebuild may replace its files).
MARKER = ".headscope-view"
_OWN = ("assets", "data", "figures", "media")
_PACKAGE = Path(__file__).resolve().parent


def _finite(value: Any) -> Any:
    """``value`` with each non-finite float as its name: ``"NaN"``, ``"Infinity"``, ``"-Infinity"``.

    JSON has no such numbers; the pages print these strings as they are (a NaN score is shown
    as NaN, never as a missing one).
    """
    if isinstance(value, float) and not math.isfinite(value):
        return "NaN" if value != value else ("Infinity" if value > 0 else "-Infinity")
    if isinstance(value, dict):
        return {k: _finite(v) for k, v in value.items()}
    if isinstance(value, list | tuple):
        return [_finite(v) for v in value]
    return value


def write_data(out: Path, rel: str, value: Any) -> Path:
    """Write ``value`` as ``out/rel``: one ``HS.put(rel, value);`` statement.

    Non-finite floats are written as strings (:func:`_finite`).
    """
    path = out / rel
    path.parent.mkdir(parents=True, exist_ok=True)
    body = json.dumps(_finite(value), ensure_ascii=True, separators=(",", ":"), allow_nan=False)
    path.write_text(f"HS.put({json.dumps(rel)},{body});\n", encoding="utf-8")
    return path


def _environment() -> Any:
    import jinja2

    return jinja2.Environment(
        loader=jinja2.FileSystemLoader(str(_PACKAGE / "templates")),
        autoescape=jinja2.select_autoescape(["html", "jinja"]),
        undefined=jinja2.StrictUndefined,
        trim_blocks=True,
        lstrip_blocks=True,
    )


def _figures(data: Any, out: Path) -> list[dict[str, str]]:
    """Write the leaderboard figures as PNG (matplotlib), else copy the runs' own PNGs."""
    from leaderboards.figures import build_figures, matplotlib_available

    target = out / "figures"
    target.mkdir(parents=True, exist_ok=True)
    shown = []
    if matplotlib_available():
        import matplotlib.pyplot as plt

        for stem, fig in build_figures(data.sources):
            fig.savefig(target / f"{stem}.png", dpi=110)
            plt.close(fig)
            shown.append({"src": f"figures/{stem}.png", "title": stem.replace("__", " · ")})
        return shown
    from viewer.confine import Refused, copy_bounded, inside

    for raw in data.inputs:
        for png in sorted(Path(raw).glob("**/leaderboards/figures/*.png")):
            try:
                copy_bounded(inside(raw, png.relative_to(raw)), target / png.name)
            except Refused as exc:
                data.warnings.append(f"{raw}: figure left out: {exc}")
                continue
            shown.append({"src": f"figures/{png.name}", "title": png.stem.replace("__", " · ")})
    return shown


def _maps_files(data: Any, out: Path) -> list[dict[str, Any]]:
    """Copy every map's media into ``media/`` and write one maps data file per task.

    Media were checked when collected (:func:`viewer.maps.task_maps`); each copy checks again
    and stops at the size bound (:func:`viewer.confine.copy_bounded`). A sample whose copy
    is refused is shown without media, with a warning in ``data.warnings``.

    Returns:
        The heads views with each task's ``maps`` replaced by its data file's path (or None).
    """
    from viewer.confine import Refused, copy_bounded

    heads = copy.deepcopy(data.heads)
    for view in heads:
        for task, entry in view["tasks"].items():
            maps = entry.pop("maps", None)
            entry["maps"] = None
            if maps is None:
                continue
            for i, sample in enumerate(maps["samples"]):
                try:
                    for j, m in enumerate(sample["media"]):
                        m["src"] = f"media/{view['id']}/{slug(task)}/{i}_{j}.png"
                        copy_bounded(m.pop("file"), out / m["src"])
                except Refused as exc:
                    sample["media"], sample["media_note"] = [], f"media left out: {exc}"
                    data.warnings.append(f"{view['path']}: {task} doc {sample['doc_id']}: {exc}")
            entry["maps"] = (
                write_data(out, f"data/maps/{view['id']}/{slug(task)}.js", maps)
                .relative_to(out)
                .as_posix()
            )
    return heads


def _prepare(out: Path) -> Path:
    """Create ``out``, or empty the folders of an earlier build; refuse a foreign folder."""
    if out.is_dir() and any(out.iterdir()):
        if not (out / MARKER).is_file():
            raise UsageError(
                f"{str(out)!r} holds files headscope view did not write",
                hint="give an empty or new folder as --output",
            )
        (out / STAMP).unlink(missing_ok=True)  # written again once this build completes
        for name in _OWN:
            shutil.rmtree(out / name, ignore_errors=True)
    out.mkdir(parents=True, exist_ok=True)
    (out / MARKER).write_text("written by headscope view; rebuilt on the next run\n")
    return out


def build_site(
    data: Any,
    out: str | Path,
    title: str = "headscope view",
    figures: bool = True,
    media: bool = True,
    task_paths: bool = False,
) -> Path:
    """Write the whole site for ``data`` (:class:`viewer.collect.SiteData`) into ``out``.

    Args:
        data: What to show.
        out: The site folder (created; files of an earlier build are replaced).
        title: The pages' title.
        figures: Draw the leaderboard figures (matplotlib; else the runs' own PNGs are copied).
        media: Rebuild every sample's media with its task (:mod:`viewer.media`).
        task_paths: Let the tasks read data that the runs' task arguments name outside the
            run directories (else those tasks' samples show no media).

    Returns:
        The path of ``index.html``.
    """
    out = _prepare(Path(out))
    assets = out / "assets"
    assets.mkdir(exist_ok=True)
    for src in sorted((_PACKAGE / "static").iterdir()):
        if src.suffix in (".js", ".css"):
            shutil.copyfile(src, assets / src.name)
    shown = _figures(data, out) if figures else []
    heads = _maps_files(data, out)
    write_data(out, "data/heads.js", heads)
    tasks = []
    if media:
        from viewer.media import Budget, write_task_media

        budget = Budget()
        for ts in data.tasks:
            write_task_media(out, ts, data.warnings, budget, task_paths)
    else:
        for detail in (d for ts in data.tasks for c in ts.chunks for d in c["samples"]):
            detail["media"] = {"media": [], "note": "media left out (headscope view --no-media)"}
    for ts in data.tasks:
        base = f"data/samples/{slug(ts.task)}"
        write_data(out, f"{base}/table.js", ts.table)
        for i, chunk in enumerate(ts.chunks):
            write_data(out, f"{base}/chunk-{i}.js", chunk)
        tasks.append(
            {
                "name": ts.task,
                "table": f"{base}/table.js",
                "chunks": f"{base}/chunk-",
                "n_samples": len(ts.table["samples"]),
                "n_columns": len(ts.table["columns"]),
                "maps": [v["tasks"][ts.task]["maps"] for v in heads if ts.task in v["tasks"]],
            }
        )
    write_data(out, "data/index.js", {"title": title, "tasks": tasks, "inputs": data.inputs})
    env = _environment()
    context = {
        "title": title,
        "inputs": data.inputs,
        "tables": data.tables,
        "runs": data.runs,
        "figures": shown,
        "warnings": data.warnings,
        "tasks": tasks,
        "heads": heads,
    }
    for page in PAGES:
        html = env.get_template(f"{page}.html.jinja").render(page=page, **context)
        (out / f"{page}.html").write_text(html, encoding="utf-8")
    return out / "index.html"
