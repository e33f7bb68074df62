"""The package import graph has no cycles, and ``harness/`` shows its layers.

Every ``import`` statement counts, at module level or inside a function (an import hidden in a
function is still a dependency: it only moves the failure to run time).
"""

import ast
import re
import subprocess
import sys
from pathlib import Path

import pytest

ROOT = Path(__file__).resolve().parents[2]
PACKAGES = ("harness", "tasks", "interventions", "leaderboards", "viewer")


def _module_name(path: Path) -> str:
    parts = list(path.relative_to(ROOT).with_suffix("").parts)
    return ".".join(parts[:-1] if parts[-1] == "__init__" else parts)


def _modules() -> dict[str, Path]:
    return {_module_name(p): p for pkg in PACKAGES for p in sorted((ROOT / pkg).rglob("*.py"))}


def _imported(
    node: ast.AST, module: str, is_package: bool, modules: dict[str, Path] | None = None
) -> list[str]:
    if isinstance(node, ast.Import):
        return [alias.name for alias in node.names]
    assert isinstance(node, ast.ImportFrom)
    base = node.module or ""
    if node.level:
        parts = module.split(".") if is_package else module.split(".")[:-1]
        parts = parts[: len(parts) - node.level + 1]
        base = ".".join(parts + ([base] if base else []))
    # "from pkg import sub" depends on the submodule pkg.sub when there is one, else on pkg.
    known = _modules() if modules is None else modules
    return [
        f"{base}.{alias.name}" if f"{base}.{alias.name}" in known else base for alias in node.names
    ]


def import_graph() -> dict[str, set[str]]:
    """Module -> the project modules it imports (module- and function-level)."""
    modules = _modules()
    graph: dict[str, set[str]] = {}
    for name, path in modules.items():
        deps: set[str] = set()
        tree = ast.parse(path.read_text(encoding="utf-8"))
        for node in ast.walk(tree):
            if not isinstance(node, ast.Import | ast.ImportFrom):
                continue
            for target in _imported(node, name, path.name == "__init__.py", modules):
                while target and target not in modules:
                    target = target.rpartition(".")[0]
                if target and target != name:
                    deps.add(target)
        graph[name] = deps
    return graph


def find_cycles(graph: dict[str, set[str]]) -> list[list[str]]:
    """Strongly connected components with more than one module (Tarjan)."""
    index: dict[str, int] = {}
    low: dict[str, int] = {}
    stack: list[str] = []
    on_stack: set[str] = set()
    found: list[list[str]] = []

    def visit(v: str) -> None:
        index[v] = low[v] = len(index)
        stack.append(v)
        on_stack.add(v)
        for w in sorted(graph.get(v, ())):
            if w not in index:
                visit(w)
                low[v] = min(low[v], low[w])
            elif w in on_stack:
                low[v] = min(low[v], index[w])
        if low[v] == index[v]:
            component = []
            while True:
                w = stack.pop()
                on_stack.discard(w)
                component.append(w)
                if w == v:
                    break
            if len(component) > 1:
                found.append(sorted(component))

    for v in sorted(graph):
        if v not in index:
            visit(v)
    return found


def test_no_import_cycles():
    cycles = find_cycles(import_graph())
    assert not cycles, "import cycles:\n" + "\n".join(" <-> ".join(c) for c in cycles)


def test_cycle_finder_sees_function_level_imports():
    # The checker must catch the kind of cycle this layout removed: one side imports inside a
    # function only.
    graph = {"a": {"b"}, "b": {"c"}, "c": {"a"}, "d": {"a"}}
    assert find_cycles(graph) == [["a", "b", "c"]]
    src = "def f():\n    from harness.api import registry\n"
    node = next(n for n in ast.walk(ast.parse(src)) if isinstance(n, ast.ImportFrom))
    assert "harness.api.registry" in _imported(node, "x", False)


# Layers of harness/, bottom up: a module may import its own layer or lower ones only.
LAYERS = {
    "harness.api": 0,
    "harness.attention": 1,
    "harness.metrics": 2,
    "harness.media": 2,
    "harness.schema": 2,
    "harness.models": 2,
    "harness.toy": 2,
    "harness.probes": 3,
    "harness.bench": 3,
    "harness.testing": 3,
    "harness.run": 4,
    "harness.lmms": 5,
    "harness.cli": 5,
}


def _layer(module: str) -> int | None:
    hits = [v for k, v in LAYERS.items() if module == k or module.startswith(k + ".")]
    return hits[0] if hits else None


def test_harness_imports_only_run_down_the_layers():
    upward = []
    for module, deps in import_graph().items():
        for dep in deps:
            a, b = _layer(module), _layer(dep)
            if a is not None and b is not None and b > a:
                upward.append(f"{module} -> {dep}")
    assert not upward, "imports that run back up:\n" + "\n".join(sorted(upward))


def test_harness_top_level_holds_only_the_package_files():
    loose = sorted(p.name for p in (ROOT / "harness").glob("*.py"))
    assert loose == ["__init__.py", "__main__.py"]
    assert {p.name for p in (ROOT / "harness").iterdir() if p.is_dir()} >= set(
        k.split(".")[1] for k in LAYERS
    )


def _private_names(module: str, source: str) -> list[str]:
    """``module -> other.module._name`` for each private name ``module`` takes from another
    project module (an ``__init__``'s included)."""
    found = []
    for node in ast.walk(ast.parse(source)):
        if not isinstance(node, ast.ImportFrom) or node.level or node.module == module:
            continue
        if (node.module or "").split(".")[0] in PACKAGES:
            found += [f"{module} -> {node.module}.{a.name}" for a in node.names if a.name[0] == "_"]
    return found


def test_bench_modules_share_only_public_names():
    # What several bench commands need lives in harness.bench.kit, public.
    private = [
        hit
        for name, path in _modules().items()
        if name.startswith("harness.bench")
        for hit in _private_names(name, path.read_text(encoding="utf-8"))
    ]
    assert not private, "private names taken from another module:\n" + "\n".join(private)
    src = "from harness.bench.hybrid import _sync, kept\nfrom harness.bench.kit import sync\n"
    assert _private_names("harness.bench.ttft", src) == [
        "harness.bench.ttft -> harness.bench.hybrid._sync"
    ]


def test_only_tests_import_the_test_helpers():
    # harness.testing (tiny models and processors) serves the tests; product code (benches
    # included, on the same layer) builds on harness.models.offline instead.
    inside = lambda m: m == "harness.testing" or m.startswith("harness.testing.")  # noqa: E731
    users = [
        f"{module} -> {dep}"
        for module, deps in import_graph().items()
        if not inside(module)
        for dep in deps
        if inside(dep)
    ]
    assert not users, "product modules importing harness.testing:\n" + "\n".join(sorted(users))


@pytest.mark.parametrize(
    "name", ["Task", "Intervention", "ModelAdapter", "HFAdapter", "load_adapter", "run_grid"]
)
def test_public_api_is_exposed_lazily(name):
    code = (
        "import sys, harness\n"
        "before = sorted(m for m in sys.modules if m.startswith('harness.'))\n"
        f"obj = getattr(harness, {name!r})\n"
        "print(before, 'torch' in sys.modules, obj.__module__)"
    )
    out = subprocess.run(
        [sys.executable, "-c", code], capture_output=True, text=True, check=True, cwd=ROOT
    )
    before, torch_loaded, module = out.stdout.rsplit(" ", 2)
    assert before == "[]"  # import harness alone imports no submodule
    assert torch_loaded == "False"
    assert module.strip().startswith("harness.")


def _package_of(module: str, modules: dict[str, Path]) -> str:
    return module if modules[module].name == "__init__.py" else module.rpartition(".")[0]


def _is_private(name: str) -> bool:
    return name.startswith("_") and not name.startswith("__")


def private_imports(modules: dict[str, Path] | None = None) -> list[tuple[str, str]]:
    """(importer, target) for every import of a private module or name from another package.

    A package is a directory: ``tasks.mmdocir`` and ``tasks.common`` are two packages, and so
    are ``harness.bench`` and ``harness.testing``. Inside its own package a module may use its
    neighbours' private helpers; across packages only public names travel.
    """
    modules = _modules() if modules is None else modules
    found = []
    for name, path in modules.items():
        mine = _package_of(name, modules)
        for node in ast.walk(ast.parse(path.read_text(encoding="utf-8"))):
            if isinstance(node, ast.ImportFrom):
                aliases = [(alias.name, node) for alias in node.names]
            elif isinstance(node, ast.Import):
                aliases = [(None, node)]
            else:
                continue
            for target in _imported(node, name, path.name == "__init__.py", modules):
                module = target
                while module and module not in modules:
                    module = module.rpartition(".")[0]
                if not module or module == name or _package_of(module, modules) == mine:
                    continue
                names = [a for a, _ in aliases if a is not None and target == module]
                if any(_is_private(part) for part in module.split(".")) or any(
                    _is_private(n) for n in names
                ):
                    found.append((name, target))
    return sorted(set(found))


def test_no_private_imports_across_packages():
    found = set(private_imports())
    assert not found, "private imports across packages:\n" + "\n".join(
        f"{a} -> {b}" for a, b in sorted(found)
    )


def test_private_import_finder_sees_private_modules_and_names(tmp_path):
    files = {
        "pkg/__init__.py": "",
        "pkg/a/__init__.py": "",
        "pkg/a/_helper.py": "X = 1\n_y = 2\n",
        "pkg/a/public.py": "from pkg.a._helper import X\nfrom pkg.a._helper import _y\n",
        "pkg/b/__init__.py": "",
        "pkg/b/user.py": "from pkg.a._helper import X\n",
        "pkg/b/other.py": "def f():\n    from pkg.a.public import _z\n",
        "pkg/b/fine.py": "from pkg.a.public import X\n",
    }
    modules = {}
    for rel, text in files.items():
        path = tmp_path / rel
        path.parent.mkdir(parents=True, exist_ok=True)
        path.write_text(text)
        parts = list(Path(rel).with_suffix("").parts)
        modules[".".join(parts[:-1] if parts[-1] == "__init__" else parts)] = path
    assert private_imports(modules) == [
        ("pkg.b.other", "pkg.a.public"),
        ("pkg.b.user", "pkg.a._helper"),
    ]


def test_harness_never_imports_tasks():
    edges = [
        f"{module} -> {dep}"
        for module, deps in import_graph().items()
        if module.startswith("harness.")
        for dep in deps
        if dep == "tasks" or dep.startswith("tasks.")
    ]
    assert not edges, "harness/ imports the plug-in package tasks/:\n" + "\n".join(sorted(edges))


def test_tasks_are_one_package_per_benchmark():
    loose = sorted(p.name for p in (ROOT / "tasks").glob("*.py"))
    assert loose == ["__init__.py"]
    for package in sorted(p for p in (ROOT / "tasks").iterdir() if p.is_dir()):
        if package.name == "__pycache__":
            continue
        assert (package / "__init__.py").is_file(), f"{package} is not a package"


def test_leaderboards_and_viewer_read_files_without_the_run_layer():
    # leaderboards/ and viewer/ read typed result files: they may use harness/ up to the
    # probes layer (plots, profiles), never the run, cli or lmms layers that write runs.
    above = [
        f"{module} -> {dep}"
        for module, deps in import_graph().items()
        if module.split(".")[0] in ("leaderboards", "viewer")
        for dep in deps
        if (_layer(dep) or 0) > LAYERS["harness.probes"]
    ]
    assert not above, "leaderboards/viewer import the run layers:\n" + "\n".join(sorted(above))


def test_the_head_label_is_written_in_one_place():
    # "L12H3" is how heads print everywhere: harness.api.heads.head_label writes it, and no
    # other Python file spells the f-string form (a second spelling drifts from the first).
    pattern = re.compile(r"""f["']L\{[^}]*\}H\{""")
    files = [p for d in (*PACKAGES, "scripts") for p in sorted((ROOT / d).rglob("*.py"))]
    spelled = [
        str(p.relative_to(ROOT))
        for p in files
        for line in p.read_text(encoding="utf-8").splitlines()
        if pattern.search(line)
    ]
    assert spelled == ["harness/api/heads.py"], spelled
