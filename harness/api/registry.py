"""One generic typed registry for tasks, model families and interventions.

Registration happens in exactly one place: a decorator on the class or factory
(``@task("pope")``, ``@model_family("qwen2_vl")``, ``@intervention("ablate")``).
Each registry knows the package that holds its modules; the first lookup imports
every module of that package (they are light by contract: torch and friends load
lazily inside functions), so ``import tasks`` itself stays free of work.
"""

from __future__ import annotations

import difflib
import importlib
import pkgutil
from collections.abc import Callable, Iterator
from typing import Generic, TypeVar

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
]


class RegistryError(ValueError):
    """Raised on duplicate registration or lookups that cannot be satisfied."""


class UnknownNameError(RegistryError, KeyError):
    """Raised when a name is not registered; the message carries suggestions."""

    def __str__(self) -> str:  # KeyError would otherwise quote the message
        return str(self.args[0]) if self.args else ""


class Registry(Generic[T]):
    """A name → object registry filled by a decorator.

    Args:
        kind: Human-readable kind used in messages ("task", "intervention", ...).
        packages: Dotted package names whose modules register into this registry.
            They are imported (all submodules, recursively) on first lookup.
    """

    def __init__(self, kind: str, packages: tuple[str, ...] = ()) -> None:
        self.kind = kind
        self.packages = packages
        self._entries: dict[str, T] = {}
        self._origins: dict[str, str] = {}
        self._discovered = False

    # -- registration -------------------------------------------------------------
    def register(self, name: str) -> Callable[[T], T]:
        """Return a decorator that registers its target under ``name``."""
        if not name or not name.replace("_", "").replace("-", "").isalnum():
            raise RegistryError(f"invalid {self.kind} name {name!r}")

        def decorate(obj: T) -> T:
            origin = f"{getattr(obj, '__module__', '?')}.{getattr(obj, '__qualname__', '?')}"
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

    # -- discovery ------------------------------------------------------------------
    def discover(self) -> None:
        """Import every module of the registry's packages once."""
        if self._discovered:
            return
        self._discovered = True
        for package in self.packages:
            for module_name in iter_package_modules(package):
                importlib.import_module(module_name)

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


TASKS: Registry = Registry("task", ("tasks",))
MODEL_FAMILIES: Registry = Registry("model family", ("harness.models",))
INTERVENTIONS: Registry = Registry("intervention", ("interventions",))


def task(name: str) -> Callable[[T], T]:
    """Register a task class (``@task("pope")``)."""
    return TASKS.register(name)


def model_family(name: str) -> Callable[[T], T]:
    """Register a model adapter class (``@model_family("qwen2_vl")``)."""
    return MODEL_FAMILIES.register(name)


def intervention(name: str) -> Callable[[T], T]:
    """Register an intervention config class (``@intervention("ablate")``)."""
    return INTERVENTIONS.register(name)
