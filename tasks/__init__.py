"""The built-in benchmarks: one package per benchmark, plus ``tasks/common/``.

``tasks/<benchmark>/task.py`` registers the benchmark (``@task("pope")``) and
``tasks/<benchmark>/mini.py`` its toy mini task (``pope_mini``); the package's other modules
are that benchmark's own helpers (official rules, data loading). ``tasks/common/`` holds what
several benchmarks share and registers nothing. Registry discovery imports every module below
this package, so no list names the benchmarks.

Files to touch for a new benchmark (docs/adding_a_benchmark.md has the details and a complete
example that passes the same checks):

1. ``tasks/<benchmark>/task.py`` — the task class, its metrics, and ``scoring`` modes through
   :func:`harness.api.scoring.check_scoring` (``official`` by default, recorded in settings);
2. ``tasks/<benchmark>/official.py`` (and ``data.py``...) — the benchmark's own rules, written
   from its released code;
3. ``tasks/<benchmark>/__init__.py`` — description, files, public names;
4. ``tests/data/scoring/<benchmark>.json`` + its regen script, and a test holding the scorer to
   equality with them;
5. optional toy mini task: ``tasks/<benchmark>/mini.py`` + a builder in
   ``harness/toy/builders.py``;
6. README task table and docs/scoring.md.
"""
