"""One generic typed registry for tasks, model families and interventions.

Registration happens in exactly one place: a decorator on the class or factory
(``@task("pope")``, ``@model_family("qwen2_vl")``, ``@intervention("ablate")``).
Each registry knows the package that holds its modules; the first lookup imports
every module of that package (they are light by contract: torch and friends load
lazily inside functions), so ``import tasks`` itself stays free of work.

Plugins register with the same decorators, without forking headscope:

- installed packages declare entry points in the groups ``headscope.tasks``,
  ``headscope.models`` and ``headscope.interventions``; each names a module (or a
  ``module:object``) that is imported at the registry's first lookup;
- ``--include_path DIR`` (:func:`include_path`) imports every ``*.py`` file of ``DIR``.

A plugin that fails to import is an error naming it, never silently skipped.
"""

from __future__ import annotations

import contextlib
import difflib
import hashlib
import importlib
import importlib.util
import pkgutil
import sys
from collections.abc import Callable, Iterator
from pathlib import Path
from typing import Generic, TypeVar

from harness.api.errors import UsageError

T = TypeVar("T")

__all__ = [
    "Registry",
    "RegistryError",
    "UnknownNameError",
    "TASKS",
    "MODEL_FAMILIES",
    "INTERVENTIONS",
    "task",
    "model_family",
    "intervention",
    "include_path",
]


class RegistryError(UsageError):
    """Raised on duplicate registration or lookups that cannot be satisfied."""


class UnknownNameError(RegistryError, KeyError):
    """Raised when a name is not registered; the message carries suggestions."""

    def __str__(self) -> str:  # KeyError would otherwise quote the message
        return str(self.args[0]) if self.args else ""


_PLUGIN_HINT = "fix the plugin; --debug prints its traceback"


def _origin(obj: object) -> str:
    """``module.qualname`` of a registered object (named in duplicate-name errors)."""
    return f"{getattr(obj, '__module__', '?')}.{getattr(obj, '__qualname__', '?')}"


class Registry(Generic[T]):
    """A name → object registry filled by a decorator.

    Args:
        kind: Human-readable kind used in messages ("task", "intervention", ...).
        packages: Dotted package names whose modules register into this registry.
            They are imported (all submodules, recursively) on first lookup.
        entry_points: Entry-point group of installed plugins (imported on first lookup).
    """

    def __init__(
        self, kind: str, packages: tuple[str, ...] = (), entry_points: str | None = None
    ) -> None:
        self.kind = kind
        self.packages = packages
        self.entry_points = entry_points
        self._entries: dict[str, T] = {}
        self._origins: dict[str, str] = {}
        self._discovered = False

    # -- registration -------------------------------------------------------------
    def register(self, name: str) -> Callable[[T], T]:
        """Return a decorator that registers its target under ``name``."""
        if not name or not name.replace("_", "").replace("-", "").isalnum():
            raise RegistryError(f"invalid {self.kind} name {name!r}")

        def decorate(obj: T) -> T:
            origin = _origin(obj)
            if name in self._entries and self._origins[name] != origin:
                raise RegistryError(
                    f"duplicate {self.kind} name {name!r}: already registered by "
                    f"{self._origins[name]}, again by {origin}"
                )
            self._entries[name] = obj
            self._origins[name] = origin
            try:
                obj.registry_name = name  # type: ignore[attr-defined]
            except (AttributeError, TypeError):
                pass
            return obj

        return decorate

    @contextlib.contextmanager
    def temporary(self, name: str, obj: T, *, replace: bool = False) -> Iterator[T]:
        """Register ``obj`` as ``name`` for the duration of a ``with`` block (tests, notebooks).

        On exit, whatever happened inside, the registry and ``obj`` are as before.

        Args:
            name: The name to register.
            obj: The class or factory; it gets ``registry_name`` as from the decorator.
            replace: Put ``obj`` in place of the entry that holds ``name`` (a stand-in for
                a model family, say), which comes back on exit. A stand-in keeps its own
                ``registry_name``. Without ``replace`` a taken name is refused.

        Raises:
            RegistryError: ``name`` is taken and ``replace`` is False.
        """
        self.discover()
        old = (self._entries[name], self._origins[name]) if name in self._entries else None
        if old is not None and not replace:
            raise RegistryError(
                f"duplicate {self.kind} name {name!r}: already registered by {self._origins[name]}"
            )
        if replace:
            self._entries[name] = obj
            self._origins[name] = _origin(obj)
        else:
            self.register(name)(obj)
        try:
            yield obj
        finally:
            self._entries.pop(name, None)
            self._origins.pop(name, None)
            if old is not None:
                self._entries[name], self._origins[name] = old

    # -- discovery ------------------------------------------------------------------
    def discover(self) -> None:
        """Import every module of the registry's packages, then its plugins' entry points, once.

        Raises:
            RegistryError: an entry point's module failed to import (names the plugin).
        """
        if self._discovered:
            return
        self._discovered = True
        for package in self.packages:
            for module_name in iter_package_modules(package):
                importlib.import_module(module_name)
        if self.entry_points:
            from importlib.metadata import entry_points

            for ep in entry_points(group=self.entry_points):
                try:
                    ep.load()
                except (Exception, SystemExit, KeyboardInterrupt) as exc:  # noqa: BLE001 - named
                    dist = getattr(getattr(ep, "dist", None), "name", "?")
                    raise RegistryError(
                        f"plugin {ep.name!r} = {ep.value!r} (package {dist}, entry-point group "
                        f"{self.entry_points}) failed to import: {type(exc).__name__}: {exc}",
                        hint=_PLUGIN_HINT,
                    ) from exc

    # -- lookup -----------------------------------------------------------------------
    def get(self, name: str) -> T:
        """Return the object registered as ``name``.

        Raises:
            UnknownNameError: with "did you mean ..." suggestions.
        """
        self.discover()
        try:
            return self._entries[name]
        except KeyError:
            raise UnknownNameError(self.unknown_message(name)) from None

    def unknown_message(self, name: str) -> str:
        """The error text for an unknown ``name``, with close matches."""
        close = difflib.get_close_matches(name, list(self._entries), n=3, cutoff=0.5)
        hint = f"; did you mean {' or '.join(repr(c) for c in close)}?" if close else ""
        known = ", ".join(sorted(self._entries)) or "(none)"
        return f"unknown {self.kind} {name!r}{hint} (known: {known})"

    def names(self) -> list[str]:
        """All registered names, sorted."""
        self.discover()
        return sorted(self._entries)

    def origin(self, name: str) -> str:
        """Dotted path of the object registered as ``name``."""
        self.get(name)
        return self._origins[name]

    def __contains__(self, name: object) -> bool:
        self.discover()
        return name in self._entries

    def __iter__(self) -> Iterator[str]:
        return iter(self.names())

    def __len__(self) -> int:
        return len(self.names())


def iter_package_modules(package: str) -> Iterator[str]:
    """Yield the dotted names of all modules below ``package`` (recursive)."""
    pkg = importlib.import_module(package)
    for info in pkgutil.walk_packages(pkg.__path__, prefix=f"{package}."):
        if info.name.rsplit(".", 1)[-1].startswith("_"):
            continue
        yield info.name


TASKS: Registry = Registry("task", ("tasks",), "headscope.tasks")
MODEL_FAMILIES: Registry = Registry("model family", ("harness.models",), "headscope.models")
INTERVENTIONS: Registry = Registry("intervention", ("interventions",), "headscope.interventions")


def include_path(directory: str | Path) -> list[str]:
    """Import every ``*.py`` file of ``directory`` (not ``_*.py``), so that it registers.

    The files use the same decorators (``@task``, ``@model_family``, ``@intervention``).
    ``directory`` joins the end of ``sys.path``, so the files may import their neighbours; a
    file or package folder named like a module Python or headscope imports (``yaml.py``,
    ``tasks.py``) is refused (:mod:`harness.api.plugins`). Importing the same directory again
    does nothing.

    Returns:
        The names of the modules imported.

    Raises:
        RegistryError: ``directory`` is not a directory, holds no Python file, holds an
            entry that would shadow a module, or a file fails to import or stops the program
            while imported (the message names the file).
    """
    from harness.api.plugins import exec_plugin, shadowing

    folder = Path(directory).expanduser().resolve()
    if not folder.is_dir():
        raise RegistryError(f"--include_path {str(directory)!r} is not a directory")
    files = sorted(f for f in folder.glob("*.py") if not f.name.startswith("_"))
    if not files:
        raise RegistryError(f"--include_path {str(directory)!r} holds no Python (*.py) file")
    if clashes := shadowing(folder, files):
        raise RegistryError(f"--include_path {str(directory)!r}: {'; '.join(clashes)}")
    if str(folder) not in sys.path:
        sys.path.append(str(folder))
    for registry in (TASKS, MODEL_FAMILIES, INTERVENTIONS):
        registry.discover()  # built-ins first: a clash then names the user's file
    tag = hashlib.sha1(str(folder).encode()).hexdigest()[:8]
    names = []
    for file in files:
        name = f"headscope_include_{tag}_{file.stem}"
        names.append(name)
        if name in sys.modules:
            continue
        spec = importlib.util.spec_from_file_location(name, file)
        module = importlib.util.module_from_spec(spec)  # type: ignore[arg-type]
        sys.modules[name] = module
        try:
            stopped = exec_plugin(module, spec, file)
        except Exception as exc:
            del sys.modules[name]
            if isinstance(exc, RegistryError):
                raise RegistryError(f"{file}: {exc}") from exc
            raise RegistryError(
                f"--include_path file {str(file)!r} failed to import: {type(exc).__name__}: {exc}",
                hint=_PLUGIN_HINT,
            ) from exc
        if stopped:
            del sys.modules[name]
            raise RegistryError(stopped)
    return names


def task(name: str) -> Callable[[T], T]:
    """Register a task class (``@task("pope")``)."""
    return TASKS.register(name)


def model_family(name: str) -> Callable[[T], T]:
    """Register a model adapter class (``@model_family("qwen2_vl")``)."""
    return MODEL_FAMILIES.register(name)


def intervention(name: str) -> Callable[[T], T]:
    """Register an intervention config class (``@intervention("ablate")``)."""
    return INTERVENTIONS.register(name)
