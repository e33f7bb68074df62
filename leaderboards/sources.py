"""Find, load and group the result files of several runs.

``headscope leaderboard A B C`` accepts run directories, single files, or folders holding
several runs (searched recursively; ``samples/`` folders and hidden files are skipped).
Every ``*.json`` found is recognised by its schema tag, never by guessing from its content:

- ``{"schema": "headscope.results", ...}`` → a run (:class:`harness.schema.results.RunResults`);
- ``{"format": "headscope.ranking", ...}`` → a RAM ranking (:mod:`harness.schema.ranking`);
- ``{"format": "headscope.heads", ...}`` → a head set (:mod:`harness.schema.headsets`,
  compared by :mod:`leaderboards.headsets`);
- ``{"schema": "headscope.diagnostics", ...}`` → a diagnose file
  (:mod:`harness.schema.diagnostics`, shown by :mod:`leaderboards.diagnostics`);
- ``{"schema": "headscope.bench_<kind>", ...}`` → a bench file (:mod:`harness.schema.bench`):
  ``hybrid`` and ``ram`` rows are shown; ``masks``, ``adaptive`` and ``ttft`` files are
  skipped with a warning. Untagged files of an older headscope that carry ``"bench":
  "hybrid"`` / ``"ram"`` are read, with a warning; untagged ``{"rows": [...]}`` is skipped
  (refused when passed by name) with a hint to rerun the bench;
- an untagged lmms-eval ``*_results.json`` (``results`` + ``config`` + ``n-samples``) → a run
  converted by :mod:`leaderboards.lmms_eval_source` (scoring ``lmms_eval``, source
  ``lmms-eval``): the one foreign format, recognised by its keys;
- anything else (``run_spec.json``, ``profile.json``, leaderboard outputs) is ignored.

Only what lies inside the given folders is read: a file found in a folder that is a link to
a file elsewhere is skipped (with a warning; pass it explicitly to read it), and folders
reached through links are not searched.

Rescored results: ``headscope rescore`` writes ``results.scoring-MODE.json`` beside a run's
``results.json``; both hold the same run. From a folder one results file per run is read, in
the mode the user declares: with ``scoring=MODE`` (``--scoring MODE``) its
``results.scoring-MODE.json`` where there is one, else the run's own ``results.json`` (refused
if it was scored in another mode); without it, a run folder that holds rescored copies is
refused naming them (it used to read ``results.json`` with a warning, easily missed). Files
passed explicitly are always read.

Grouping: numbers are compared only under the same *settings*: everything recorded as
changing numbers (model adapter settings minus identity, ``RunResults.settings``, task
settings / arguments / split, a ranking's or bench file's settings), flattened, plus the
fields of the run's identity the model's display name leaves out (:func:`run_identity`:
seed, model family, revision, device type...). Results under different settings are kept
apart (differing keys become columns), never averaged. Results of one task scored under
different modes are refused (:func:`leaderboards.settings.check_scoring`).
"""

from __future__ import annotations

import json
import re
from collections.abc import Sequence
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

from harness.api.errors import UsageError
from leaderboards.run_checks import check_definitions, check_mode, run_identity, separate_models
from leaderboards.settings import (
    MergeError,
    check_scoring,
    combine,
    flatten,
    model_label,
    model_settings,
)

__all__ = ["Run", "RankingFile", "Sources", "load_sources", "classify", "run_identity"]


@dataclass(frozen=True)
class Run:
    """One loaded run: its results and the settings its numbers depend on."""

    path: Path
    results: Any  # harness.schema.results.RunResults
    model: str
    config: dict[str, Any]


@dataclass(frozen=True)
class RankingFile:
    """One loaded ranking (:class:`harness.schema.ranking.Ranking`)."""

    path: Path
    ranking: Any
    model: str
    config: dict[str, Any]


@dataclass(frozen=True)
class HeadSetFile:
    """One loaded head-set file (:class:`harness.schema.headsets.HeadSet`)."""

    path: Path
    head_set: Any


@dataclass
class Sources:
    """Everything found in the leaderboard's inputs."""

    runs: list[Run] = field(default_factory=list)
    rankings: list[RankingFile] = field(default_factory=list)
    bench_hybrid: list[Any] = field(default_factory=list)  # leaderboards.bench.BenchFile
    bench_ram: list[Any] = field(default_factory=list)
    bench_decode: list[Any] = field(default_factory=list)
    diagnostics: list[Any] = field(default_factory=list)
    head_sets: list[HeadSetFile] = field(default_factory=list)
    warnings: list[str] = field(default_factory=list)

    def empty(self) -> bool:
        """True when no input of any kind was found."""
        kinds = (self.runs, self.rankings, self.bench_hybrid, self.bench_ram, self.diagnostics)
        kinds += (self.head_sets, self.bench_decode)
        return not any(kinds)


SHOWN_BENCH_KINDS = ("hybrid", "ram", "decode")
"""Bench kinds the leaderboard has tables for."""


def classify(doc: Any) -> str | None:
    """``results``, ``lmms_eval``, ``ranking``, ``heads``, ``diagnostics``, ``bench_<kind>``, None.

    Decided by the document's schema tag (``schema``, or ``format`` for rankings); an
    untagged document is an lmms-eval results file, an older headscope bench file
    (:func:`harness.schema.bench.bench_kind`) or nothing. ``bench`` (no kind): a
    ``headscope.bench_*`` tag of an unknown kind, refused when loaded.
    """
    from harness.schema.bench import bench_kind, is_bench_tag
    from harness.schema.diagnostics import DIAGNOSTICS_SCHEMA
    from harness.schema.results import SCHEMA_NAME

    if not isinstance(doc, dict):
        return None
    tag = doc.get("schema", doc.get("format"))
    if tag is None:
        from leaderboards.lmms_eval_source import is_lmms_eval_results

        if is_lmms_eval_results(doc):
            return "lmms_eval"
    kind = bench_kind(doc)
    if kind is not None:
        return f"bench_{kind}"
    tags = {SCHEMA_NAME: "results", "headscope.ranking": "ranking", "headscope.heads": "heads"}
    tags[DIAGNOSTICS_SCHEMA] = "diagnostics"
    return "bench" if is_bench_tag(doc) else tags.get(tag)


def _files(path: Path, sources: Sources) -> list[Path]:
    """``path`` itself, or the ``*.json`` files inside the folder ``path`` (not behind links)."""
    if path.is_file():
        return [path]
    if not path.is_dir():
        raise UsageError(f"no such results file or directory: {str(path)!r}")
    skip = lambda parts: any(x == "samples" or x.startswith(".") for x in parts)  # noqa: E731
    top = path.resolve()
    found = []
    for file in sorted(path.rglob("*.json")):
        if skip(file.relative_to(path).parts):
            continue
        if not file.resolve().is_relative_to(top):
            sources.warnings.append(
                f"{file}: skipped, a link to {str(file.resolve())!r} outside {str(path)!r} "
                "(pass that file itself to read it)"
            )
            continue
        found.append(file)
    return found


#: ``<stem>.scoring-<mode>.json``: a copy of ``<stem>.json`` rescored by ``headscope rescore``.
_RESCORED = re.compile(r"^(?P<stem>.+)\.scoring-(?P<mode>[^/]+)\.json$")


def _pick_results(files: list[Path], scoring: str | None) -> list[Path]:
    """One results file per run folder: the run's own, or its copy rescored under ``scoring``.

    Raises:
        MergeError: ``scoring`` is None and a run folder holds rescored copies.
    """
    copies: dict[Path, dict[str, Path]] = {}  # the run's own file -> {mode: rescored copy}
    for file in files:
        match = _RESCORED.match(file.name)
        own = file.with_name(f"{match['stem']}.json") if match else None
        if own is not None and own in files:
            copies.setdefault(own, {})[match["mode"]] = file
    left_out: set[Path] = set()
    for own, modes in copies.items():
        if scoring is None:  # two modes of one run: which one is read is the user's to say
            names = ", ".join(modes[m].name for m in sorted(modes))
            raise MergeError(
                f"{own.parent} holds {own.name} and its rescored {names}: the leaderboard "
                "reads one scoring mode per run",
                hint=f"choose it with --scoring {'|'.join(sorted(modes))} (or the mode "
                f"{own.name} was scored in), or pass the results file itself",
            )
        chosen = modes.get(scoring)
        left_out.update(copy for copy in modes.values() if copy != chosen)
        if chosen is not None:
            left_out.add(own)
    return [f for f in files if f not in left_out]


#: Run settings that are records, not settings: which file a rescored copy came from.
_NOT_RUN_SETTINGS = ("rescored_from",)


def _add(sources: Sources, path: Path, kind: str, doc: dict[str, Any]) -> None:
    if kind in ("results", "lmms_eval"):
        from harness.schema.results import RunResults
        from leaderboards.lmms_eval_source import to_run_results

        if kind == "results":
            res = RunResults.from_dict(doc, where=str(path))
        else:
            res, notes = to_run_results(doc, str(path))
            sources.warnings.extend(notes)
        settings = {k: v for k, v in res.settings.items() if k not in _NOT_RUN_SETTINGS}
        config = combine(model_settings(res.model), flatten(settings), run_identity(res))
        sources.runs.append(Run(path, res, model_label(res.model), config))
        if res.status != "complete":
            sources.warnings.append(f"{path}: run status is {res.status!r} (numbers may change)")
    elif kind == "ranking":
        from harness.schema.ranking import Ranking, RankingFormatError

        try:
            ranking = Ranking.from_dict(doc)
        except RankingFormatError as exc:
            raise MergeError(f"{path}: {exc}") from None
        config = combine(model_settings(ranking.model), flatten(ranking.settings))
        sources.rankings.append(RankingFile(path, ranking, model_label(ranking.model), config))
    elif kind == "heads":
        from harness.schema.headsets import HeadSetError, head_set_from_dict

        try:
            head_set = head_set_from_dict(doc, str(path))
        except HeadSetError as exc:
            raise MergeError(f"{path}: {exc}") from None
        sources.head_sets.append(HeadSetFile(path, head_set))
    elif kind == "diagnostics":
        from leaderboards.diagnostics import parse_diagnostics

        sources.diagnostics.append(parse_diagnostics(doc, path))
    elif kind.startswith("bench"):
        from harness.schema.bench import BenchDocument, BenchFormatError
        from leaderboards.bench import parse_bench

        try:
            bench = BenchDocument.from_dict(doc, str(path))
        except BenchFormatError as exc:
            raise MergeError(str(exc)) from None
        if bench.legacy:
            sources.warnings.append(
                f"{path}: untagged bench {bench.kind} file of an older headscope, read as such "
                "(rerun the bench, or the main job, to get a tagged file)"
            )
        if bench.kind not in SHOWN_BENCH_KINDS:
            sources.warnings.append(f"{path}: bench {bench.kind} rows have no leaderboard table")
            return
        getattr(sources, f"bench_{bench.kind}").append(parse_bench(bench, path))


def _json_like(file: Path) -> bool:
    """Whether ``file`` starts like a JSON object (a damaged headscope file may; others do not)."""
    try:
        with file.open("rb") as handle:
            head = handle.read(64).lstrip()
    except OSError:
        return True  # unreadable: reported as such
    return head.startswith(b"{")


#: File names headscope writes: one of these that does not parse is an error, not a skip.
OWN_FILES = ("results.json", "ranking.json", "spearman.json", "summary.json",
             "bench_hybrid.json", "bench_decode.json", "run_spec.json", "diagnostics_paper.json",
             "diagnostics_code.json")  # fmt: skip


def load_sources(paths: Sequence[str | Path], scoring: str | None = None) -> Sources:
    """Load every recognised file under ``paths`` (see the module docstring).

    Args:
        paths: Run directories, files, or folders of runs.
        scoring: Read each run's copy rescored under this mode where there is one, and
            refuse results of a task scored under another mode (None: the runs' own files).

    Raises:
        harness.api.errors.UsageError: A path does not exist.
        MergeError: A file passed explicitly is not a headscope output, or nothing was found.
        harness.schema.results.ResultsError: A results file does not follow its schema.
    """
    sources = Sources()
    seen: set[Path] = set()
    for raw in paths:
        path = Path(raw)
        found = _files(path, sources)
        for file in found if path.is_file() else _pick_results(found, scoring):
            real = file.resolve()
            if real in seen:
                continue
            seen.add(real)
            try:
                doc = json.loads(file.read_text(encoding="utf-8"))
            except (ValueError, OSError) as exc:  # JSON/Unicode errors, unreadable file
                why = exc.strerror if isinstance(exc, OSError) else f"not valid JSON: {exc}"
                if file == path and file.name not in OWN_FILES and not _json_like(file):
                    raise MergeError(
                        f"{file}: not a headscope file (the leaderboard reads run directories "
                        "and headscope's JSON results, ranking, bench and diagnose files)",
                        hint="leave it out",
                    ) from None
                if file == path or file.name in OWN_FILES:
                    raise MergeError(
                        f"{file}: {why} (a truncated or damaged headscope file: rerun the "
                        "command that wrote it, or leave it out)"
                    ) from None
                sources.warnings.append(f"{file}: skipped, {why}")
                continue
            kind = classify(doc)
            if kind is None:
                untagged_rows = isinstance(doc, dict) and "rows" in doc and "schema" not in doc
                hint = (
                    " (untagged bench rows? rerun the bench with --json: it tags its output "
                    '"schema": "headscope.bench_<kind>")'
                    if untagged_rows
                    else ""
                )
                if file == path:
                    raise MergeError(f"{file}: not a headscope results/ranking/bench file{hint}")
                if hint:
                    sources.warnings.append(f"{file}: skipped{hint}")
                continue
            try:
                _add(sources, file, kind, doc)
            except (KeyError, TypeError, AttributeError, IndexError) as exc:
                raise MergeError(
                    f"{file}: malformed {kind} file ({type(exc).__name__}: {exc})"
                ) from None
    sources.runs = separate_models(sources.runs)
    check_definitions(sources.runs)
    check_scoring(sources.runs)
    if scoring is not None:
        check_mode(sources.runs, scoring)
    if sources.empty():
        names = ", ".join(str(p) for p in paths)
        skipped = "; ".join(sources.warnings)
        raise MergeError(
            f"no headscope results found in {names}" + (f" ({skipped})" if skipped else "")
        )
    return sources
