"""Run files: a YAML or JSON file holding a :class:`~harness.api.specs.RunSpec`.

Read strictly (:mod:`harness.api.strict_yaml`: no aliases, no key given twice) and checked
field by field when the mapping becomes a spec; every problem is a one-line
:class:`~harness.api.specs.SpecError`.
"""

from __future__ import annotations

from pathlib import Path
from typing import Any

from harness.api.specs import RunSpec, SpecError

__all__ = ["read_run_file", "load_run_file"]


def read_run_file(path: str | Path) -> dict[str, Any]:
    """The mapping a YAML or JSON run file holds (checked to be a mapping, nothing more).

    ``headscope run --config`` takes a top-level ``scoring: MODE`` from it (as ``--scoring``)
    before the rest becomes a :class:`RunSpec`.
    """
    from harness.api.checks import one_line

    path = Path(path)
    if not path.is_file():
        raise SpecError(f"run file {str(path)!r} does not exist")
    try:
        text = path.read_text(encoding="utf-8")
    except (OSError, UnicodeDecodeError) as exc:
        raise SpecError(f"run file {str(path)!r} cannot be read: {exc}") from None
    from harness.api.strict_yaml import RunFileError, load_json, load_yaml

    try:
        data = load_json(text) if path.suffix.lower() == ".json" else load_yaml(text)
    except RunFileError as exc:
        raise SpecError(f"run file {str(path)!r}: {exc}") from None
    except Exception as exc:  # noqa: BLE001 - any parser error is a usage error here
        raise SpecError(f"run file {str(path)!r} is malformed: {one_line(exc)}") from exc
    if not isinstance(data, dict):
        raise SpecError(f"run file {path.name}: expected a mapping at the top level")
    return data


def load_run_file(path: str | Path) -> RunSpec:
    """Read a YAML or JSON run file into a :class:`RunSpec`."""
    return RunSpec.from_dict(read_run_file(path), where=f"run file {Path(path).name}")
