"""Guards of ``--include_path DIR`` (:func:`harness.api.registry.include_path`).

- Shadowing: ``DIR`` joins ``sys.path`` so that plugin files can import their neighbours. A
  file ``DIR/yaml.py`` or ``DIR/tasks.py`` (or a package folder ``DIR/tasks/``) would then stand
  in for the module of that name that Python, headscope or its dependencies import. Such a name
  is refused (:func:`shadowing`): one already imported, in the standard library, or importable
  from anywhere but ``DIR``. ``DIR`` is also appended to ``sys.path``, never put first.
- A plugin that stops the program while it is imported (``sys.exit``, ``KeyboardInterrupt``,
  any exception) is reported as that plugin's fault, naming its file (:func:`exec_plugin`).

Light: stdlib only.
"""

from __future__ import annotations

import importlib.util
import sys
from pathlib import Path

__all__ = ["shadowing", "exec_plugin"]


def _inside(path: str | None, folder: Path) -> bool:
    return path is not None and Path(path).resolve().is_relative_to(folder)


def _taken(name: str, folder: Path) -> bool:
    """True when ``name`` is a module Python can find outside ``folder`` (or has imported)."""
    if name in sys.stdlib_module_names:
        return True
    module = sys.modules.get(name)
    if module is not None:
        return not _inside(getattr(module, "__file__", None), folder)
    try:
        spec = importlib.util.find_spec(name)
    except (ImportError, ValueError):
        return False
    if spec is None:
        return False
    places = [spec.origin, *(spec.submodule_search_locations or ())]
    return not any(_inside(p, folder) for p in places if p and p != "namespace")


def shadowing(folder: Path, files: list[Path]) -> list[str]:
    """Entries of ``folder`` named like a module they would shadow, as messages ([] if none).

    Args:
        folder: The plugin directory (resolved).
        files: Its plugin files.
    """
    entries = {f.stem: f for f in files}
    for child in folder.iterdir():
        if child.is_dir() and (child / "__init__.py").is_file():
            entries.setdefault(child.name, child)
    return [
        f"{path.name!r} is named like the module {name!r} that Python or headscope imports; "
        "rename it"
        for name, path in sorted(entries.items())
        if name.isidentifier() and _taken(name, folder)
    ]


def exec_plugin(module: object, spec: object, file: Path) -> str | None:
    """Run a plugin module; None when it imported, else what went wrong, naming ``file``.

    ``sys.exit`` and ``KeyboardInterrupt`` raised while the file is imported are the plugin's,
    not the user's Ctrl-C: they are reported like any other failure.
    """
    try:
        spec.loader.exec_module(module)  # type: ignore[attr-defined]
    except SystemExit as exc:
        return f"--include_path file {str(file)!r} called sys.exit({exc.code!r}) while imported"
    except KeyboardInterrupt:
        return f"--include_path file {str(file)!r} raised KeyboardInterrupt while imported"
    return None
