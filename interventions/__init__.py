"""The built-in interventions: one module per intervention, plus private shared helpers.

``interventions/<name>.py`` registers one frozen config (``@intervention("ablate")``) whose
``attach(adapter)`` installs its effect through the single attention dispatch
(:mod:`harness.attention.dispatch`) and yields the resolved record; ``interventions/_*.py``
hold what several interventions share (plan installation and taps in ``_common.py``, head
selection in ``_selection.py``, priors, means) and register nothing. Registry discovery imports
every public module here, so no list names the interventions.

Files to touch for a new intervention (docs/plugins.md shows one outside this package):

1. ``interventions/<name>.py`` — a frozen dataclass subclassing
   :class:`harness.api.intervention.Intervention`, registered with ``@intervention("<name>")``;
   typed fields are its arguments, bad values raise
   :class:`~harness.api.intervention.InterventionError`; an attention effect is a plan
   installed with ``_common.installed`` (nested interventions then compose, and two that write
   one head conflict), a weight edit restores the weights on exit — never a forked forward;
   it is attached once per batch (sample-major runs): declare ``vision_use()`` — ``"none"``
   (text decoder only: vision features are reused), ``"reads"`` or ``"writes"``; undeclared
   means recomputed per cell —, check it with ``run --check-vision-reuse``, and use
   ``resolved_counters`` / ``merge_resolved`` for counts in its record;
2. ``interventions/_<helper>.py`` — only for what a second intervention will share;
3. ``tests/integration/test_interventions_<name>.py`` — on the tiny models: the effect against
   a reference computed without the dispatch, the empty case equal to ``none``, argument
   errors (``tests/unit/test_registry.py`` already checks that the module registers);
4. README "Interventions" table (name, what, key arguments); if the main job runs it,
   ``harness/run/main_job.py`` (its grid specs and summary). Leaderboard labels are generic
   (``name:k=v,...``): nothing to add there.
"""
