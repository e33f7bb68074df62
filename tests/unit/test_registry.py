import importlib
import inspect
import subprocess
import sys

import pytest

from harness.api.registry import (
    INTERVENTIONS,
    TASKS,
    Registry,
    RegistryError,
    UnknownNameError,
    iter_package_modules,
)


def test_duplicate_name_is_an_error():
    reg = Registry("thing")

    @reg.register("a")
    class A:
        pass

    with pytest.raises(RegistryError, match="duplicate thing name 'a'"):

        @reg.register("a")
        class B:
            pass


def test_unknown_name_suggests_close_matches():
    reg = Registry("thing")
    reg.register("ablate")(type("X", (), {}))
    reg.register("hybrid")(type("Y", (), {}))
    with pytest.raises(UnknownNameError) as err:
        reg.get("ablte")
    assert "did you mean 'ablate'" in str(err.value)
    assert "hybrid" in str(err.value)  # known names listed


def _registering_modules(registry) -> set[str]:
    return {registry.origin(n).rsplit(".", 1)[0] for n in registry.names()}


def test_every_intervention_module_registers_something():
    origins = _registering_modules(INTERVENTIONS)
    for module_name in iter_package_modules("interventions"):
        module = importlib.import_module(module_name)
        if inspect.getfile(module).endswith("__init__.py"):
            continue
        assert module_name in origins, f"{module_name} registers no intervention"


def test_every_benchmark_package_registers_its_task_and_mini():
    # tasks/<benchmark>/ holds the task (task.py) and the toy's mini task (mini.py), both
    # registered; its other modules are the benchmark's own helpers; tasks/common/ registers
    # nothing (it is what several benchmarks share).
    origins = _registering_modules(TASKS)
    packages = {m.split(".")[1] for m in iter_package_modules("tasks")} - {"common"}
    assert len(packages) >= 8
    for package in sorted(packages):
        for module in ("task", "mini"):
            assert f"tasks.{package}.{module}" in origins, (
                f"tasks/{package}/{module}.py registers no task"
            )
    builtin = {o for o in origins if o.startswith("tasks.")}
    assert builtin == {f"tasks.{p}.{m}" for p in packages for m in ("task", "mini")}
    assert not [
        m for m in iter_package_modules("tasks") if m.startswith("tasks.common.") and m in origins
    ]


def _heavy_modules_after(snippet: str, names: tuple[str, ...]) -> list[str]:
    """Run ``snippet`` in a fresh interpreter; which of ``names`` it left imported."""
    probe = f"import sys\n{snippet}\nprint(','.join(m for m in {names!r} if m in sys.modules))\n"
    out = subprocess.run([sys.executable, "-c", probe], capture_output=True, text=True, check=True)
    return [m for m in out.stdout.strip().split(",") if m]


def test_import_is_light():
    snippet = (
        "import harness, tasks, interventions, leaderboards\n"
        "from harness.api.registry import TASKS, INTERVENTIONS\n"
        "TASKS.names(); INTERVENTIONS.names()"
    )
    heavy = ("torch", "transformers", "datasets", "av", "fitz")
    assert _heavy_modules_after(snippet, heavy) == []


def test_cli_parser_is_light():
    snippet = "from harness.cli.main import build_parser\nbuild_parser()"
    assert _heavy_modules_after(snippet, ("torch", "transformers", "numpy")) == []


def test_temporary_registration_is_removed_on_exit_and_refuses_taken_names():
    obj = type("Probe", (), {})
    with TASKS.temporary("temporary_probe", obj) as registered:
        assert registered is obj and TASKS.get("temporary_probe") is obj
    assert "temporary_probe" not in TASKS
    with pytest.raises(RegistryError, match="duplicate task name 'pope'"):
        with TASKS.temporary("pope", obj):
            pass
    assert TASKS.get("pope") is not obj
    with pytest.raises(RuntimeError):
        with TASKS.temporary("temporary_probe", obj):
            raise RuntimeError("inside")
    assert "temporary_probe" not in TASKS


def test_temporary_replace_puts_a_stand_in_and_restores_the_entry():
    from harness.api.registry import MODEL_FAMILIES

    real = MODEL_FAMILIES.get("toy")
    stand_in = type("StandIn", (), {"registry_name": "stand_in"})
    with pytest.raises(RuntimeError):
        with MODEL_FAMILIES.temporary("toy", stand_in, replace=True):
            assert MODEL_FAMILIES.get("toy") is stand_in
            assert MODEL_FAMILIES.origin("toy").endswith(".StandIn")
            raise RuntimeError("inside")
    assert MODEL_FAMILIES.get("toy") is real and stand_in.registry_name == "stand_in"
    assert MODEL_FAMILIES.origin("toy").endswith(f".{real.__qualname__}")
