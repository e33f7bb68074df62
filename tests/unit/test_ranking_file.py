"""The ranking file: round trip, atomic write, validation errors, head queries."""

import json

import numpy as np
import pytest

from harness.api.heads import Head
from harness.schema.ranking import (
    RANKING_VERSION,
    Ranking,
    RankingFormatError,
    TaskRam,
    load_ranking,
    save_ranking,
)

SETTINGS = {"attn_implementation": "eager", "dtype": "float32", "seed": 0, "frames": 8}
MODEL = {"family": "tiny-qwen", "checkpoint": "random", "revision": None}


def _ranking(layers=3, heads=4, n=(5, 1)):
    rng = np.random.default_rng(0)
    tasks = {}
    for i, count in enumerate(n):
        ps = rng.uniform(size=(count, layers, heads))
        ids = [f"s{j}" for j in range(count)] if i == 0 else None
        tasks[f"task{i}"] = TaskRam.from_samples(
            {"name": f"task{i}", "split": "val", "limit": count}, ps, ids, n_boot=50, seed=i
        )
    return Ranking(MODEL, SETTINGS, tasks, num_layers=layers, num_heads=heads)


def _assert_same(a, b):
    assert a.model == b.model and a.settings == b.settings and a.task_names == b.task_names
    for name in a.task_names:
        ta, tb = a.tasks[name], b.tasks[name]
        for key in ("per_sample", "mean", "stderr", "ci_low", "ci_high"):
            np.testing.assert_array_equal(getattr(ta, key), getattr(tb, key))  # NaN == NaN here
        assert ta.spec == tb.spec and ta.sample_ids == tb.sample_ids
        assert ta.bootstrap == tb.bootstrap


def test_round_trip_is_exact(tmp_path):
    r = _ranking()
    path = save_ranking(tmp_path / "sub" / "ranking.json", r)
    back = load_ranking(path)
    _assert_same(r, back)
    assert np.isnan(back.tasks["task1"].stderr).all()  # one sample: stderr undefined → null
    doc = json.loads(path.read_text())
    assert doc["version"] == RANKING_VERSION and doc["format"] == "headscope.ranking"
    assert doc["tasks"]["task1"]["stderr"][0][0] is None


def test_write_is_atomic_and_leaves_no_temp_files(tmp_path):
    path = tmp_path / "ranking.json"
    save_ranking(path, _ranking())
    save_ranking(path, _ranking(n=(3, 2)))  # overwrite
    assert [p.name for p in tmp_path.iterdir()] == ["ranking.json"]
    assert load_ranking(path).tasks["task0"].per_sample.shape[0] == 3
    good = path.read_text()
    bad = _ranking()
    object.__setattr__(bad, "settings", {"dtype": "float32"})  # now invalid
    with pytest.raises(RankingFormatError, match="attn_implementation"):
        save_ranking(path, bad)
    assert path.read_text() == good
    assert [p.name for p in tmp_path.iterdir()] == ["ranking.json"]


def _write(tmp_path, doc):
    path = tmp_path / "r.json"
    path.write_text(json.dumps(doc))
    return path


def _doc(tmp_path):
    return json.loads(save_ranking(tmp_path / "ok.json", _ranking()).read_text())


def test_wrong_version_and_format(tmp_path):
    doc = _doc(tmp_path)
    doc["version"] = RANKING_VERSION + 1
    with pytest.raises(RankingFormatError, match="unsupported ranking version") as err:
        load_ranking(_write(tmp_path, doc))
    assert "r.json" in str(err.value)
    doc["version"], doc["format"] = RANKING_VERSION, "something.else"
    with pytest.raises(RankingFormatError, match="not a headscope ranking"):
        load_ranking(_write(tmp_path, doc))
    (tmp_path / "junk.json").write_text("{not json")
    with pytest.raises(RankingFormatError, match="not valid JSON"):
        load_ranking(tmp_path / "junk.json")
    with pytest.raises(FileNotFoundError):
        load_ranking(tmp_path / "missing.json")


@pytest.mark.parametrize(
    "edit, message",
    [
        (lambda d: d["geometry"].update(num_heads=5), "expected"),
        (lambda d: d["tasks"]["task0"]["mean"].pop(), "mean has shape"),
        (lambda d: d["tasks"]["task0"]["per_sample"][0].pop(), "per_sample"),
        (lambda d: d["tasks"]["task0"].update(n_samples=4), "n_samples"),
        (lambda d: d["tasks"]["task0"]["mean"][0].__setitem__(0, 9.0), "does not match"),
        (lambda d: d["tasks"]["task0"]["ci_low"][0].__setitem__(0, None), "NaN"),
        (lambda d: d["tasks"]["task0"].update(sample_ids=["a"]), "sample ids"),
        (lambda d: d["tasks"]["task0"].pop("bootstrap"), "bootstrap"),
        (lambda d: d["settings"].pop("dtype"), "dtype"),
        (lambda d: d.update(tasks={}), "at least one task"),
        (lambda d: d.update(model=["not", "a", "dict"]), "model spec"),
        (lambda d: d["tasks"]["task0"].update(per_sample=5), "malformed"),
        (lambda d: d["tasks"]["task0"].update(ci_high=[[1, 2], [3]]), "regular numeric"),
        (lambda d: d.update(tasks=[1]), "malformed"),
    ],
)
def test_validation_errors(tmp_path, edit, message):
    doc = _doc(tmp_path)
    edit(doc)
    with pytest.raises(RankingFormatError, match=message):
        load_ranking(_write(tmp_path, doc))


def test_in_memory_validation():
    ps = np.zeros((2, 3, 4))
    with pytest.raises(RankingFormatError, match="model geometry"):
        Ranking(MODEL, SETTINGS, {"t": TaskRam.from_samples({}, ps)}, num_layers=3, num_heads=5)
    with pytest.raises(RankingFormatError, match="plain JSON"):
        Ranking(MODEL, SETTINGS, {"t": TaskRam.from_samples({"s": {1, 2}}, ps)}, 3, 4)
    with pytest.raises(RankingFormatError, match="version"):
        Ranking(MODEL, SETTINGS, {"t": TaskRam.from_samples({}, ps)}, 3, 4, version=0)
    assert issubclass(RankingFormatError, ValueError)


def test_head_queries_and_combined():
    a = np.array([[0.0, 0.1], [0.9, 0.3]])
    b = np.array([[0.8, 0.1], [0.7, 0.0]])
    r = Ranking(
        MODEL,
        SETTINGS,
        {"a": TaskRam.from_samples({}, a[None]), "b": TaskRam.from_samples({}, b[None])},
        num_layers=2,
        num_heads=2,
    )
    assert r.top_heads("a", 1) == [Head(1, 0)]
    assert [str(h) for h in r.top_heads("b", 2)] == ["L0H0", "L1H0"]
    assert r.bottom_heads("a", 1) == [Head(0, 0)]
    np.testing.assert_allclose(r.combined(), (a + b) / 2)
    assert r.top_heads(None, 2) == [Head(1, 0), Head(0, 0)]  # 0.8, then 0.4
    assert r.universal_heads(2) == [Head(1, 0)]
    assert r.spearman("a", "a") == pytest.approx(1.0)
    with pytest.raises(KeyError, match="no task 'c'"):
        r.top_heads("c", 1)
