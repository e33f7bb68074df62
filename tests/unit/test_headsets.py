"""Head sets as files: the headscope format, the SparseMM / DuoAttention / list readers,
comparison, and their use as ``ranking=`` of ``ablate`` / ``hybrid``.

The foreign samples are written here in those projects' formats, as their own code writes
them: SparseMM's ``json.dump(head_counter)`` of ``{"L-H": [score per sample]}``
(CR400AF-A/SparseMM@f52655b ``visual_head/qwen_visual_head.py``), DuoAttention's
``np.savetxt(..., delimiter="\\t")`` of the per-KV-head gates with a ``config.json``
(mit-han-lab/duo-attention@03dca84 ``duo_attn/utils.py`` ``save_full_attention_heads``).
The reference selections restate those projects' rules (``sparsemm_utils.init_mask``:
``sorted(..., key=mean score, reverse=True)[:num]``; ``sparsify_attention_heads``: noise in
[0, 1e-6), then ``>= np.quantile(gates, sparsity)``).
"""

from __future__ import annotations

import json
from collections import defaultdict

import numpy as np
import pytest

from harness.api.heads import Geometry, Head
from harness.schema.headset_readers import (
    detect_format,
    head_set_from_ranking,
    read_duo_attention,
    read_head_list,
    read_head_set,
    read_sparsemm,
)
from harness.schema.headsets import (
    HeadSet,
    HeadSetError,
    compare_head_sets,
    load_head_set,
    save_head_set,
)
from harness.schema.ranking import Ranking, TaskRam, save_ranking


def _write_sparsemm(path, layers, heads, seed=0, ties=False):
    rng = np.random.default_rng(seed)
    counter = defaultdict(list)
    for _ in range(3):  # three "samples", as the release appends one score per sample
        for la in range(layers):
            for h in range(heads):
                value = float(rng.integers(0, 3)) if ties else float(rng.random())
                counter[f"{la}-{h}"].append(value)
    path.write_text(json.dumps(counter))
    return counter


def _sparsemm_reference_top(counter, num):
    """SparseMM's ``init_mask`` ranking: mean per head, sorted descending, first ``num``."""
    head_list = [(key, np.mean(values)) for key, values in counter.items()]
    head_list = sorted(head_list, key=lambda x: x[1], reverse=True)
    return [Head(*(int(x) for x in key.split("-"))) for key, _ in head_list[:num]]


@pytest.mark.parametrize("ties", [False, True])
def test_sparsemm_scores_and_top_k_equal_the_release(tmp_path, ties):
    path = tmp_path / "qwen.json"
    counter = _write_sparsemm(path, 3, 4, ties=ties)
    hs = read_sparsemm(path, k=5)
    assert hs.grid == (3, 4) and hs.granularity == "head"
    for key, values in counter.items():
        la, h = (int(x) for x in key.split("-"))
        assert hs.scores[la, h] == np.mean(values)
    assert sorted(hs.selected) == sorted(_sparsemm_reference_top(counter, 5))
    assert detect_format(path) == "sparsemm"


def test_sparsemm_refuses_holes_and_bad_keys(tmp_path):
    path = tmp_path / "s.json"
    path.write_text(json.dumps({"0-0": [1.0], "1-1": [2.0]}))
    with pytest.raises(HeadSetError, match="missing"):
        read_sparsemm(path)
    path.write_text(json.dumps({"0-0": [1.0], "L0H1": [2.0]}))
    with pytest.raises(HeadSetError, match="LAYER-HEAD"):
        read_sparsemm(path)
    path.write_text(json.dumps({"0-0": []}))
    with pytest.raises(HeadSetError, match="one or more numbers"):
        read_sparsemm(path)


def _write_duo(folder, gates, sink=64, recent=256):
    folder.mkdir()
    np.savetxt(folder / "full_attention_heads.tsv", np.array(gates), delimiter="\t")
    (folder / "config.json").write_text(json.dumps({"sink_size": sink, "recent_size": recent}))


def _duo_reference(gates, sparsity, seed):
    """``load_attn_pattern`` + ``sparsify_attention_heads`` of the release, restated."""
    full = np.clip(np.array(gates, dtype=float), 0, 1)
    np.random.seed(seed)
    full = full + np.random.uniform(0, 1e-6, full.shape)
    threshold = np.quantile(full, sparsity)
    if sparsity >= 1:
        threshold = 2
    if sparsity <= 0:
        threshold = -1
    return (full >= threshold).astype(float)


@pytest.mark.parametrize("sparsity", [0.0, 0.25, 0.5, 0.75, 1.0])
def test_duo_attention_selection_equals_the_release(tmp_path, sparsity):
    rng = np.random.default_rng(3)
    # distinct gates (gaps far above the release's 1e-6 tie noise), some outside [0, 1]
    gates = rng.permutation(np.linspace(-0.2, 1.3, 24)).reshape(4, 6)
    _write_duo(tmp_path / "pattern", gates)
    hs = read_duo_attention(tmp_path / "pattern", sparsity=sparsity, num_heads=12)
    expected = _duo_reference(gates, sparsity, seed=0)
    got = np.zeros_like(expected)
    for unit in hs.selected:
        got[unit.layer, unit.head] = 1
    assert np.array_equal(got, expected)
    assert np.array_equal(hs.scores, np.clip(gates, 0, 1))
    assert hs.granularity == "kv_group" and hs.grid == (4, 6) and hs.num_heads == 12
    assert hs.source["sink_size"] == 64 and hs.source["recent_size"] == 256
    # each kept KV group stands for its two query heads
    assert len(hs.query_heads()) == 2 * len(hs.selected)


def test_duo_attention_tsv_alone_and_bad_files(tmp_path):
    path = tmp_path / "gates.tsv"
    np.savetxt(path, np.array([[0.1, 0.9]]), delimiter="\t")
    hs = read_head_set(path)
    assert hs.grid == (1, 2) and "sink_size" not in hs.source
    with pytest.raises(HeadSetError, match="do not split"):
        read_duo_attention(path, num_heads=3)
    path.write_text("0.1\tnan\n")
    with pytest.raises(HeadSetError, match="finite"):
        read_duo_attention(path)


def test_plain_lists(tmp_path):
    text = tmp_path / "heads.txt"
    text.write_text("# retrieval heads\nL0H1, L2H3\nL1H0  # the strongest\n")
    as_json = tmp_path / "heads.json"
    as_json.write_text(json.dumps(["L0H1", [2, 3], "L1H0"]))
    wrapped = tmp_path / "wrapped.json"
    wrapped.write_text(json.dumps({"heads": ["L1H0", "L0H1", "L2H3"]}))
    sets = [read_head_set(p) for p in (text, as_json, wrapped)]
    for hs in sets:
        assert hs.selected == (Head(0, 1), Head(1, 0), Head(2, 3)) and hs.scores is None
    assert read_head_list(text, num_layers=4, num_heads=8).grid == (4, 8)
    (tmp_path / "bad.json").write_text(json.dumps(["L0H1", 3]))
    with pytest.raises(HeadSetError, match="neither"):
        read_head_set(tmp_path / "bad.json")


def test_round_trip_is_exact_and_bad_documents_are_refused(tmp_path):
    rng = np.random.default_rng(1)
    hs = HeadSet("x", 3, 4, scores=rng.random((3, 4)), selected=(Head(2, 1), Head(0, 3)))
    path = tmp_path / "x.json"
    save_head_set(hs, path)
    back = load_head_set(path)
    assert np.array_equal(back.scores, hs.scores) and back.selected == (Head(0, 3), Head(2, 1))
    doc = json.loads(path.read_text())
    for edit, message in (
        (lambda d: d["layers"].reverse(), "in order"),
        (lambda d: d["layers"][0].update(scores=None), "every layer or in none"),
        (lambda d: d["layers"][1]["scores"].pop(), "4 numbers"),
        (lambda d: d.update(version=2), "unsupported version"),
        (lambda d: d["layers"][0]["selected"].append(9), "outside the grid"),
    ):
        bad = json.loads(json.dumps(doc))
        edit(bad)
        path.write_text(json.dumps(bad))
        with pytest.raises(HeadSetError, match=message):
            load_head_set(path)
    with pytest.raises(HeadSetError, match="finite"):
        HeadSet("nan", 1, 2, scores=np.array([[0.0, np.nan]]))


def _ranking_file(path, layers=2, heads=4):
    rng = np.random.default_rng(0)
    tasks = {
        name: TaskRam.from_samples({"name": name}, rng.random((3, layers, heads)), n_boot=10)
        for name in ("a", "b")
    }
    ranking = Ranking(
        {"family": "toy"},
        {"attn_implementation": "eager", "dtype": "float32", "seed": 0},
        tasks,
        num_layers=layers,
        num_heads=heads,
    )
    save_ranking(path, ranking)
    return ranking


def test_ranking_export_keeps_the_ranking_order(tmp_path):
    ranking = _ranking_file(tmp_path / "ranking.json")
    hs = head_set_from_ranking(tmp_path / "ranking.json", "b", k=3)
    assert np.array_equal(hs.scores, ranking.matrix("b"))
    assert sorted(hs.selected) == sorted(ranking.top_heads("b", 3))
    assert read_head_set(tmp_path).scores.tolist() == ranking.matrix(None).tolist()


def test_compare_spearman_jaccard_overlap():
    from harness.metrics.ram import spearman

    rng = np.random.default_rng(2)
    a = HeadSet("a", 2, 4, scores=rng.random((2, 4)))
    b = HeadSet("b", 2, 4, scores=rng.random((2, 4)))
    c = compare_head_sets(a, b, k=3)
    top_a = {Head(int(i) // 4, int(i) % 4) for i in np.argsort(-a.scores.ravel())[:3]}
    top_b = {Head(int(i) // 4, int(i) % 4) for i in np.argsort(-b.scores.ravel())[:3]}
    assert c.spearman == spearman(a.scores, b.scores)
    assert c.shared == len(top_a & top_b)
    assert c.jaccard == len(top_a & top_b) / len(top_a | top_b)
    assert c.overlap == len(top_a & top_b) / 3
    # a KV-group set against query heads: each group's gate goes to both its query heads
    duo = HeadSet("duo", 2, 2, "kv_group", scores=np.array([[1.0, 0.0], [0.0, 0.5]]))
    listed = HeadSet("list", 2, 4, selected=(Head(0, 0), Head(0, 1), Head(1, 3)))
    c = compare_head_sets(duo, listed)
    assert c.k == 3 and c.spearman is None
    # top-3 of duo: L0H0, L0H1 (gate 1), then L1H2 before L1H3 (a tie: the lower index)
    assert c.shared == 2 and c.jaccard == 2 / 4 and c.overlap == 2 / 3
    with pytest.raises(HeadSetError, match="different models"):
        compare_head_sets(a, HeadSet("z", 3, 4, scores=np.zeros((3, 4))), k=1)


def test_head_sets_are_accepted_as_rankings(tmp_path):
    from interventions._selection import load_scores, select_units

    geometry = Geometry(2, 4, 2, 8, 32)
    rng = np.random.default_rng(4)
    scores = rng.random((2, 4))
    save_head_set(HeadSet("mine", 2, 4, scores=scores), tmp_path / "mine.json")
    got = load_scores(str(tmp_path / "mine.json"), None, geometry, "ablate")
    assert np.array_equal(got, scores)
    picked = select_units(geometry, "top", 3, scores=got)
    assert sorted(picked) == list(HeadSet("mine", 2, 4, scores=scores).top(3).selected)
    _write_duo(tmp_path / "duo", [[0.2, 0.9], [0.4, 0.1]])
    duo = load_scores(str(tmp_path / "duo"), None, geometry, "hybrid")
    assert duo.tolist() == [[0.2, 0.2, 0.9, 0.9], [0.4, 0.4, 0.1, 0.1]]
    from harness.api.intervention import InterventionError

    with pytest.raises(InterventionError, match="ranking_task"):
        load_scores(str(tmp_path / "mine.json"), "refcocog", geometry, "ablate")
    with pytest.raises(InterventionError, match="2×2 KV heads, the model has 2×4"):
        load_scores(str(tmp_path / "duo"), None, Geometry(2, 4, 4, 8, 32), "hybrid")


def test_leaderboard_table_pairs_sets_of_one_grid(tmp_path, capsys):
    from harness.cli.main import main
    from leaderboards.cli import build_tables
    from leaderboards.sources import load_sources

    rng = np.random.default_rng(5)
    a = HeadSet("a", 2, 4, scores=rng.random((2, 4)))
    b = HeadSet("b", 2, 4, selected=(Head(0, 1), Head(1, 1)))
    other = HeadSet("other model", 3, 4, scores=rng.random((3, 4)))
    for hs in (a, b, other):
        save_head_set(hs, tmp_path / f"{hs.name}.json")
    ranking = _ranking_file(tmp_path / "ranking.json")
    sources = load_sources([tmp_path])
    table = next(t for t in build_tables(sources, heads_k=2) if t.name == "head_sets")
    pairs = {(r["set_a"], r["set_b"]): r for r in table.rows}
    ram_a = HeadSet("ram a", 2, 4, scores=ranking.matrix("a"))
    assert "other model" not in {name for pair in pairs for name in pair}  # no 3×4 partner
    assert len(pairs) == 6  # a, b, ram a, ram b: every pair once
    row = pairs[("a", "ram a (toy)")]
    expected = compare_head_sets(a, ram_a, 2)
    assert (row["spearman"], row["jaccard"], row["shared"]) == (
        expected.spearman,
        expected.jaccard,
        expected.shared,
    )
    assert pairs[("a", "b")]["spearman"] is None
    assert main(["leaderboard", str(tmp_path), "--heads-k", "nan", "--quiet"]) == 2
    assert "--heads-k" in capsys.readouterr().err
