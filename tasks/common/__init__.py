"""What several benchmarks share: nothing here registers a task.

- :mod:`tasks.common.loading` — rows from the hub or local files, row checks, and the
  re-exported answer and media helpers (the usual import of a task module);
- :mod:`tasks.common.answers` — answer normalisation, choices, numbers, ANLS;
- :mod:`tasks.common.choice_rules` — multiple-choice letter rules (released scripts, lmms-eval,
  lenient) of MMMU, MLVU and Video-MME;
- :mod:`tasks.common.media` — lazy images and image decoding;
- :mod:`tasks.common.video` — the multiple-choice video task base (MLVU, Video-MME);
- :mod:`tasks.common.page_refs` — page and region references read from a reply;
- :mod:`tasks.common.mini` — loading of the toy's mini tasks.

A helper used by one benchmark only lives in that benchmark's package.
"""
