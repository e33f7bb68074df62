"""``headscope view``: a static site to look at runs — leaderboards, heads, samples.

The site is built from headscope's typed result files only (results and per-sample logs,
rankings, attention maps, bench and diagnose files; found by :mod:`leaderboards.sources`) and
opens from ``file://`` with no network: Jinja2 pages, the package's own small CSS and
JavaScript, and the data as script files loaded per page. Importing this package imports
nothing else; Jinja2 and the leaderboards load when a site is built.

Typical use::

    from viewer.collect import collect
    from viewer.site import build_site
    build_site(collect(["runs/qwen", "runs/llava"]), "runs/view")
"""
