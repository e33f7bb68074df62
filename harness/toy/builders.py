"""One layout-and-question builder per mini task (used by :mod:`harness.toy.scenes`).

Each builder draws from a ``random.Random`` and returns the keyword fields of a
:class:`~harness.toy.scenes.MiniSample` plus ``layout`` (objects per image); images are rendered
by the caller. Answer formats (agreed with the task modules, do not change):

- pope: ``"yes"`` / ``"no"``.
- refcocog: ``"[x1, y1, x2, y2]"`` normalised to [0, 1], two decimals.
- mmmu, mlvu, videomme: one option letter ``"A"``..``"D"``.
- vidstg: ``"<start>-<end> [x1, y1, x2, y2]"``, 0-based frame positions, end inclusive.
- mmlongbench: short free text (``"red circle"``, ``"red"``).
- mmdocir: the 1-based page number (``"2"``).
"""

from __future__ import annotations

import random
from typing import Any

from harness.toy.world import COLORS, GRID, SHAPES, TEXT, SceneObject, normalised_box_text

__all__ = ["BUILDERS", "mc_question", "LETTERS"]

LETTERS = "ABCD"
ALL_TYPES = [(c, s) for c in COLORS for s in SHAPES]
CELLS = [(r, c) for r in range(GRID) for c in range(GRID)]
VIDEO_FRAMES = 4
PAGES = 3
MC_SUFFIX = "Answer with the option's letter from the given choices directly."


def mc_question(question: str, options: list[str] | tuple[str, ...]) -> str:
    """Multiple-choice instruction: question, ``"A. opt"`` lines, then the answer rule."""
    lines = [f"{LETTERS[i]}. {opt}" for i, opt in enumerate(options)]
    return "\n".join([question, *lines, MC_SUFFIX])


def _name(t: tuple[str, str]) -> str:
    return f"{t[0]} {t[1]}"


def _scene(rng: random.Random, types: list[tuple[str, str]]) -> tuple[SceneObject, ...]:
    cells = rng.sample(CELLS, len(types))
    return tuple(SceneObject(c, s, cell) for (c, s), cell in zip(types, cells))


def _others(rng: random.Random, k: int, exclude: list[tuple[str, str]], pred=None) -> list:
    pool = [t for t in ALL_TYPES if t not in exclude and (pred is None or pred(t))]
    return rng.sample(pool, k)


def _pope(rng: random.Random) -> dict[str, Any]:
    types = rng.sample(ALL_TYPES, rng.randint(1, 4))
    objs = _scene(rng, types)
    category = rng.choice(("random", "popular", "adversarial"))
    if rng.random() < 0.5:
        target = rng.choice(objs)
        q, answer, box = target.name, "yes", target.box
    else:
        absent = [t for t in ALL_TYPES if t not in types]
        if category == "popular":  # an absent object whose shape is in the scene
            pool = [t for t in absent if t[1] in {s for _, s in types}]
        elif category == "adversarial":  # an absent object whose colour is in the scene
            pool = [t for t in absent if t[0] in {c for c, _ in types}]
        else:
            pool = absent
        q, answer, box = _name(rng.choice(pool or absent)), "no", None
    return dict(
        question=f"Is there a {q} in the image?",
        answer=answer,
        box=box,
        evidence=((0, box),) if box else (),
        category=category,
        task_type="pope",
        layout=(objs,),
    )


def _refcocog(rng: random.Random) -> dict[str, Any]:
    objs = _scene(rng, rng.sample(ALL_TYPES, rng.randint(1, 4)))
    target = rng.choice(objs)
    return dict(
        question="Please provide the bounding box coordinate of the region this sentence "
        f"describes: the {target.name}.",
        answer=normalised_box_text(target.box),
        box=target.box,
        evidence=((0, target.box),),
        task_type="refcocog",
        layout=(objs,),
    )


def _mmmu(rng: random.Random) -> dict[str, Any]:
    target = rng.choice(ALL_TYPES)
    if rng.random() < 0.5:
        task_type = "colour"
        others = _others(rng, rng.randint(1, 3), [target], lambda t: t[1] != target[1])
        options = rng.sample([c for c in COLORS if c != target[0]], 3) + [target[0]]
        rng.shuffle(options)
        question, correct = f"What colour is the {target[1]} in the image?", target[0]
    else:
        task_type = "object"
        others = _others(rng, rng.randint(1, 3), [target])
        options = [_name(t) for t in _others(rng, 3, [target, *others])] + [_name(target)]
        rng.shuffle(options)
        question, correct = "Which object is in the image?", _name(target)
    types = [target, *others]
    objs = _scene(rng, types)
    box = objs[0].box
    return dict(
        question=mc_question(question, options),
        answer=LETTERS[options.index(correct)],
        options=tuple(options),
        box=box,
        evidence=((0, box),),
        task_type=task_type,
        layout=(objs,),
    )


def _video(rng, n_frames: int, target, frames: list[int], distract: int, fixed_cell: bool):
    """Frames with ``target`` in ``frames`` and up to ``distract`` other objects per frame."""
    exclude = [target]
    cell = rng.choice(CELLS)
    layout, evidence = [], []
    for f in range(n_frames):
        objs = []
        if f in frames:
            where = cell if fixed_cell else rng.choice(CELLS)
            objs.append(SceneObject(target[0], target[1], where))
            evidence.append((f, objs[0].box))
        used = [o.cell for o in objs]
        for t in _others(rng, rng.randint(0 if objs else 1, distract), exclude):
            where = rng.choice([c for c in CELLS if c not in used])
            used.append(where)
            objs.append(SceneObject(t[0], t[1], where))
        layout.append(tuple(objs))
    return tuple(layout), tuple(evidence)


def _vidstg(rng: random.Random) -> dict[str, Any]:
    target = rng.choice(ALL_TYPES)
    start = rng.randrange(VIDEO_FRAMES)
    end = rng.randint(start + 1, VIDEO_FRAMES)
    layout, evidence = _video(rng, VIDEO_FRAMES, target, list(range(start, end)), 2, True)
    box = evidence[0][1]
    sentence_type = rng.choice(("declarative", "interrogative"))
    if sentence_type == "declarative":
        question = f"Localize the {_name(target)} in time and space: give its frames and box."
    else:
        question = f"When and where is the {_name(target)}? Give its frames and box."
    return dict(
        question=question,
        answer=f"{start}-{end - 1} {normalised_box_text(box)}",
        span=(start, end),
        frame_boxes={f: box for f in range(start, end)},
        evidence=evidence,
        sentence_type=sentence_type,
        task_type="vidstg",
        layout=layout,
    )


def _mlvu(rng: random.Random) -> dict[str, Any]:
    task_type = rng.choice(("needle", "count", "order"))
    if task_type == "order":
        types = rng.sample(ALL_TYPES, VIDEO_FRAMES)
        layout = tuple((SceneObject(c, s, rng.choice(CELLS)),) for c, s in types)
        which = rng.choice(("first", "last"))
        frame = 0 if which == "first" else VIDEO_FRAMES - 1
        options = [_name(t) for t in types]
        rng.shuffle(options)
        question = f"Which object appears {which} in the video?"
        correct = options.index(_name(types[frame]))
        evidence = ((frame, layout[frame][0].box),)
    else:
        target = rng.choice(ALL_TYPES)
        if task_type == "needle":
            frames = [rng.randrange(VIDEO_FRAMES)]
            options = [f"frame {i + 1}" for i in range(VIDEO_FRAMES)]
            question, correct = f"In which frame does the {_name(target)} appear?", frames[0]
        else:
            k = rng.randint(1, VIDEO_FRAMES)
            frames = rng.sample(range(VIDEO_FRAMES), k)
            options = [str(i + 1) for i in range(VIDEO_FRAMES)]
            question, correct = f"In how many frames does the {_name(target)} appear?", k - 1
        layout, evidence = _video(rng, VIDEO_FRAMES, target, frames, 1, False)
    return dict(
        question=mc_question(question, options),
        answer=LETTERS[correct],
        options=tuple(options),
        evidence=evidence,
        task_type=task_type,
        layout=layout,
    )


def _videomme(rng: random.Random) -> dict[str, Any]:
    duration = rng.choice(("short", "medium"))
    n_frames = 2 if duration == "short" else VIDEO_FRAMES
    task_type = rng.choice(("Object Recognition", "Attribute Perception"))
    target = rng.choice(ALL_TYPES)
    frames = rng.sample(range(n_frames), rng.randint(1, n_frames))
    if task_type == "Object Recognition":
        options = [_name(t) for t in _others(rng, 3, [target])]
        absent = [tuple(o.split()) for o in options]
        pool = [t for t in ALL_TYPES if t not in absent]
        question, correct = "Which object appears in the video?", _name(target)
    else:
        options = rng.sample([c for c in COLORS if c != target[0]], 3)
        pool = [t for t in ALL_TYPES if t[1] != target[1]]
        question, correct = f"What colour is the {target[1]} in the video?", target[0]
    options.append(correct)
    rng.shuffle(options)
    # Distractors come only from ``pool`` so the question keeps exactly one right option.
    excluded = [t for t in ALL_TYPES if t not in pool or t == target]
    layout, evidence = [], []
    for f in range(n_frames):
        objs = [SceneObject(*target, rng.choice(CELLS))] if f in frames else []
        evidence += [(f, objs[0].box)] if objs else []
        used = [o.cell for o in objs]
        for t in _others(rng, rng.randint(0 if objs else 1, 2), excluded):
            used.append(rng.choice([c for c in CELLS if c not in used]))
            objs.append(SceneObject(t[0], t[1], used[-1]))
        layout.append(tuple(objs))
    return dict(
        question=mc_question(question, options),
        answer=LETTERS[options.index(correct)],
        options=tuple(options),
        evidence=tuple(evidence),
        task_type=task_type,
        duration=duration,
        layout=tuple(layout),
    )


def _pages(rng: random.Random, types: list[tuple[str, str]]):
    layout = []
    for c, s in types:
        cells = rng.sample(CELLS, 1 + rng.randint(1, 3))
        obj = SceneObject(c, s, cells[0])
        layout.append((obj, *(SceneObject("grey", TEXT, cell) for cell in cells[1:])))
    return tuple(layout)


def _mmlongbench(rng: random.Random) -> dict[str, Any]:
    page = rng.randrange(PAGES)
    target = rng.choice(ALL_TYPES)
    if rng.random() < 0.5:
        task_type = "object"
        others = _others(rng, PAGES - 1, [target])
        question, answer = f"What object is shown on page {page + 1}?", _name(target)
    else:
        task_type = "colour"
        others = _others(rng, PAGES - 1, [target], lambda t: t[1] != target[1])
        question, answer = f"What colour is the {target[1]} in the document?", target[0]
    others.insert(page, target)
    layout = _pages(rng, others)
    box = layout[page][0].box
    return dict(
        question=question,
        answer=answer,
        box=box,
        evidence_page=page,
        evidence=((page, box),),
        task_type=task_type,
        answer_format="Str",
        layout=layout,
    )


def _mmdocir(rng: random.Random) -> dict[str, Any]:
    types = rng.sample(ALL_TYPES, PAGES)
    page = rng.randrange(PAGES)
    layout = _pages(rng, types)
    box = layout[page][0].box
    return dict(
        question=f"Which page shows the {_name(types[page])}?",
        answer=str(page + 1),
        box=box,
        evidence_page=page,
        evidence=((page, box),),
        task_type="page",
        layout=layout,
    )


BUILDERS = {
    "pope": _pope,
    "refcocog": _refcocog,
    "mmmu": _mmmu,
    "vidstg": _vidstg,
    "mlvu": _mlvu,
    "videomme": _videomme,
    "mmlongbench": _mmlongbench,
    "mmdocir": _mmdocir,
}
