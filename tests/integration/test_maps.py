"""Attention maps (``rank --maps``): equal to eager attention, written by toy rank, resumable."""

from __future__ import annotations

import numpy as np
import pytest

torch = pytest.importorskip("torch")

from harness.api.specs import TaskSpec  # noqa: E402
from harness.probes.maps import MapsConfig, sample_maps, select_heads  # noqa: E402
from harness.probes.rank import run_rank  # noqa: E402
from harness.probes.record import prefill, prepare_single, recording, span_masks  # noqa: E402
from harness.schema.maps import MAPS_NPZ, load_maps  # noqa: E402
from harness.schema.ranking import load_ranking  # noqa: E402
from tests.integration.test_probes_rank import _sample, tiny_adapter  # noqa: E402

GROUNDED = ("refcocog_mini", "vidstg_mini", "mmlongbench_mini", "mmdocir_mini")


def _eager_rows(adapter, inputs, query) -> np.ndarray:
    """[L, H, S] eager attention probabilities averaged over the query rows."""
    cfg = adapter.model.config.get_text_config()
    old = cfg._attn_implementation
    cfg._attn_implementation = "eager"
    try:
        with torch.no_grad():
            out = adapter.model(**inputs, output_attentions=True, use_cache=False)
    finally:
        cfg._attn_implementation = old
    attn = torch.stack([a[0] for a in out.attentions]).double().numpy()  # [L, H, S, S]
    return attn[:, :, list(query), :].mean(axis=2)


@pytest.mark.parametrize("family", ["llava", "qwen2_vl"])
@pytest.mark.parametrize("task_name", ["refcocog_mini", "vidstg_mini", "mmdocir_mini"])
def test_maps_equal_eager_attention(family, task_name, tmp_path):
    adapter = tiny_adapter(family)
    _, doc, request, evidence = _sample(task_name)
    spans = adapter.token_spans(request, evidence)
    geo = adapter.geometry
    order = np.arange(geo.num_layers * geo.num_heads).reshape(geo.num_layers, -1)
    heads = select_heads(order, MapsConfig(top=2, bottom=1, random=1), task_name)
    got = sample_maps(
        adapter,
        request,
        evidence,
        spans,
        heads,
        key="k",
        doc_id=doc.doc_id,
        root=tmp_path,
        media_rel="m/x",
        max_side=1024,
    )
    want = _eager_rows(adapter, prepare_single(adapter, request), spans.instruction)
    visual = list(spans.visual)
    for k, h in enumerate(heads):
        np.testing.assert_allclose(got.attn[k], want[h.layer, h.head, visual], rtol=0, atol=1e-6)
        on_evidence = want[h.layer, h.head, list(spans.evidence)].sum()
        assert got.ram[k] == pytest.approx(on_evidence, abs=1e-6)
    assert got.positions.tolist() == visual
    assert got.evidence.sum() == len(spans.evidence) and 0 < got.evidence.sum() < len(visual)
    assert got.attn.std() > 1e-4  # heads and tokens differ: the maps carry information
    video = task_name == "vidstg_mini"
    assert got.frames_per_token == (2 if video and family == "qwen2_vl" else 1)
    kinds = {m.kind for m in got.media}
    assert kinds == ({"frame"} if video else {"page"} if task_name == "mmdocir_mini" else {"image"})
    owners = set(got.token_media[got.token_media >= 0].tolist())
    if video and family == "qwen2_vl":  # tokens sit on each temporal pair's first frame
        assert owners == set(range(0, len(got.media), 2))
    else:
        assert owners == set(range(len(got.media)))


def test_recording_keeps_one_row_per_head_of_the_chosen_layers_only():
    adapter = tiny_adapter("qwen2_vl")
    _, _, request, evidence = _sample("refcocog_mini")
    spans = adapter.token_spans(request, evidence)
    inputs = prepare_single(adapter, request, spans)
    q, k = span_masks(spans.seq_len, spans.instruction, {"ev": spans.evidence})
    with recording(adapter.model, q, k, layers=[1], keep_mean=True) as recs:
        prefill(adapter.model, inputs)
    rec = recs["ev"]
    assert set(rec.mean_row) == {1} and set(rec.mass) == {1} and not rec.rows
    assert tuple(rec.mean_row[1].shape) == (1, adapter.geometry.num_heads, spans.seq_len)
    torch.testing.assert_close(rec.mean_row[1].sum(-1), torch.ones(1, rec.mean_row[1].shape[1]))


@pytest.fixture(scope="module")
def toy():
    from harness.api.model import load_adapter
    from harness.api.specs import ModelSpec

    return load_adapter(ModelSpec("toy"))


def _rank(adapter, out, cfg):
    specs = [TaskSpec(n, limit=3, args={"n": 3}) for n in GROUNDED]
    return run_rank(adapter, specs, out, n_boot=10, progress=False, plots=False, maps=cfg)


def test_toy_rank_writes_maps_and_resumes(toy, tmp_path):
    from PIL import Image

    cfg = MapsConfig(n=2, top=2, bottom=2, random=1, seed=5)
    report = _rank(toy, tmp_path, cfg)
    assert report.maps == {"computed": 4, "kept": 0, "samples": 8}
    ranking = load_ranking(tmp_path / "ranking.json")
    maps = load_maps(tmp_path)
    assert list(maps.tasks) == ranking.task_names == list(GROUNDED)
    s = maps.settings
    assert (s["maps"], s["top"], s["bottom"], s["random"], s["seed"]) == (2, 2, 2, 1, 5)
    want_media = {"refcocog_mini": "image", "vidstg_mini": "frame"}
    want_ev = {"refcocog_mini": "box", "vidstg_mini": "tube"}
    for name, task in maps.tasks.items():
        tram = ranking.tasks[name]
        assert [h.why for h in task.heads] == ["top"] * 2 + ["bottom"] * 2 + ["random"]
        top = [(h.layer, h.head) for h in ranking.top_heads(name, 2)]
        bottom = [(h.layer, h.head) for h in ranking.bottom_heads(name, 2)]
        assert [(h.layer, h.head) for h in task.heads[:4]] == top + bottom
        assert (task.heads[4].layer, task.heads[4].head) not in top + bottom
        assert task.heads == select_heads(tram.mean, cfg, name)  # seeded: drawn again the same
        assert [x.doc_id for x in task.samples] == list(tram.sample_ids[:2])
        for i, sample in enumerate(task.samples):
            assert sample.attn.shape == (5, len(sample.positions))
            assert len(sample.positions) == 16 * len(sample.media)  # toy: 4×4 tokens a medium
            ram = [tram.per_sample[i, h.layer, h.head] for h in task.heads]
            np.testing.assert_allclose(sample.ram, ram, rtol=1e-6, atol=1e-12)  # = the probe
            np.testing.assert_allclose(
                sample.attn[:, sample.evidence].sum(1), sample.ram, rtol=1e-4, atol=1e-9
            )
            assert sample.evidence_kind == want_ev.get(name, "page")
            assert {m.kind for m in sample.media} == {want_media.get(name, "page")}
            for m in sample.media:
                with Image.open(tmp_path / m.path) as img:
                    assert img.size == (m.stored_width, m.stored_height) == (m.width, m.height)
            for r in sample.regions:
                assert r.box is None or r.box[2] <= sample.media[r.media].width
    # a rerun keeps the maps: nothing recomputed, the arrays not rewritten
    npz = tmp_path / MAPS_NPZ
    before = (npz.read_bytes(), npz.stat().st_mtime_ns)
    again = _rank(toy, tmp_path, cfg)
    assert again.maps == {"computed": 0, "kept": 4, "samples": 8}
    assert (npz.read_bytes(), npz.stat().st_mtime_ns) == before
    # other settings: computed again
    fewer = _rank(toy, tmp_path, MapsConfig(n=1, top=2, bottom=2, random=1, seed=5))
    assert fewer.maps == {"computed": 4, "kept": 0, "samples": 4}
    # an interrupted rewrite (arrays not matching the index) is computed again
    npz.write_bytes(npz.read_bytes()[:-10])
    fixed = _rank(toy, tmp_path, MapsConfig(n=1, top=2, bottom=2, random=1, seed=5))
    assert fixed.maps["computed"] == 4 and len(load_maps(tmp_path).tasks) == 4


def test_rank_cli_maps_flags(toy, tmp_path, monkeypatch, capsys):
    from harness.api import model as base
    from harness.cli.main import main

    monkeypatch.setattr(base, "load_adapter", lambda spec: toy)
    argv = ["rank", "--tasks", "refcocog_mini", "--limit", "2", "--n-boot", "5", "--no-figures"]
    argv += ["--no-progress"]
    assert main([*argv, "--output", str(tmp_path / "a"), "--maps", "0"]) == 0
    assert not (tmp_path / "a" / "maps.json").exists()
    assert main([*argv, "--output", str(tmp_path / "b"), "--maps-heads", "1"]) == 0
    assert "attention maps: 2 samples" in capsys.readouterr().out
    maps = load_maps(tmp_path / "b")
    whys = [h.why for h in maps.tasks["refcocog_mini"].heads]
    assert whys == ["top", "bottom", "random", "random"]
    with pytest.raises(SystemExit) as exc:
        main([*argv, "--output", str(tmp_path / "c"), "--maps", "-1"])
    assert exc.value.code == 2


class _NoFootprints:
    """The toy adapter without ``token_footprints`` (as a plugin family might be)."""

    def __init__(self, inner):
        self._inner = inner

    def __getattr__(self, name):
        if name == "token_footprints":
            raise AttributeError(name)
        return getattr(self._inner, name)


def test_a_family_without_footprints(toy, tmp_path, monkeypatch, capsys):
    from harness.api import model as base
    from harness.cli.main import main

    monkeypatch.setattr(base, "load_adapter", lambda spec: _NoFootprints(toy))
    argv = ["rank", "--tasks", "refcocog_mini", "--limit", "2", "--n-boot", "5", "--no-figures"]
    argv += ["--no-progress"]
    assert main([*argv, "--output", str(tmp_path / "a"), "--maps", "2"]) == 2  # asked for
    err = capsys.readouterr().err
    assert "has no token_footprints" in err and "--maps 0" in err
    assert not (tmp_path / "a" / "ranking.json").exists()  # refused before probing
    assert main([*argv, "--output", str(tmp_path / "b")]) == 0  # the default: a note
    assert "note: no attention maps" in capsys.readouterr().err
    assert (tmp_path / "b" / "ranking.json").exists() and not (
        tmp_path / "b" / "maps.json"
    ).exists()


def _rank_cli(toy, monkeypatch):
    from harness.api import model as base
    from harness.cli.main import main

    monkeypatch.setattr(base, "load_adapter", lambda spec: toy)
    argv = ["rank", "--tasks", "refcocog_mini", "--limit", "2", "--n-boot", "5", "--no-plots"]
    return lambda *extra: main([*argv, "--no-progress", *extra])


def test_a_folder_named_maps_npz_is_refused_before_probing(toy, tmp_path, monkeypatch, capsys):
    rank = _rank_cli(toy, monkeypatch)
    (tmp_path / MAPS_NPZ).mkdir()
    assert rank("--output", str(tmp_path)) == 2
    err = capsys.readouterr().err
    assert f"{tmp_path / MAPS_NPZ} is not a regular file" in err and len(err.splitlines()) == 1
    assert not (tmp_path / "ranking.json").exists()  # refused before probing


def test_arrays_that_are_not_a_zip_are_computed_again(toy, tmp_path, monkeypatch, capsys):
    import hashlib
    import json

    rank = _rank_cli(toy, monkeypatch)
    assert rank("--output", str(tmp_path), "--maps", "1") == 0
    garbage = b"PK\x03\x04 not a zip"
    (tmp_path / MAPS_NPZ).write_bytes(garbage)
    doc = json.loads((tmp_path / "maps.json").read_text())
    doc["arrays"]["sha256"] = hashlib.sha256(garbage).hexdigest()
    (tmp_path / "maps.json").write_text(json.dumps(doc))
    assert rank("--output", str(tmp_path), "--maps", "1") == 0, capsys.readouterr().err
    assert len(load_maps(tmp_path).tasks["refcocog_mini"].samples) == 1


def test_rank_without_maps_removes_the_maps_of_an_earlier_rank(toy, tmp_path, monkeypatch):
    rank = _rank_cli(toy, monkeypatch)
    assert rank("--output", str(tmp_path), "--maps", "1") == 0
    pngs = sorted((tmp_path / "maps").rglob("*.png"))
    assert (tmp_path / "maps.json").is_file() and (tmp_path / MAPS_NPZ).is_file() and pngs
    (tmp_path / "notes.txt").write_text("mine")  # the user's: stays
    assert rank("--output", str(tmp_path), "--maps", "0", "--limit", "1") == 0
    # was: maps.json and its arrays and PNGs of the first ranking beside the new one
    assert sorted(p.name for p in tmp_path.iterdir()) == [
        "notes.txt",
        "profile.json",
        "ranking.json",
        "spearman.json",
    ]


def test_a_maps_json_headscope_did_not_write_is_left_alone(tmp_path):
    from harness.probes.maps import remove_maps

    (tmp_path / "maps.json").write_text('{"format": "someone.else"}')
    (tmp_path / MAPS_NPZ).write_bytes(b"theirs")
    assert remove_maps(tmp_path) == []
    assert sorted(p.name for p in tmp_path.iterdir()) == ["maps.json", MAPS_NPZ]


def test_remove_maps_removes_only_what_the_index_names_inside_maps(tmp_path):
    import json

    from harness.probes.maps import remove_maps

    run = tmp_path / "rank"
    (run / "maps" / "media").mkdir(parents=True)
    (run / "maps" / "media" / "a.png").write_bytes(b"png")
    (tmp_path / "outside.png").write_bytes(b"not headscope's")
    (run / "ranking.png").write_bytes(b"a heatmap")
    media = [{"path": "maps/media/a.png"}, {"path": "../outside.png"}, {"path": "ranking.png"}]
    doc = {"format": "headscope.maps", "tasks": {"t": {"samples": [{"media": media}]}}}
    (run / "maps.json").write_text(json.dumps(doc))
    assert remove_maps(run) == [run / "maps.json", run / "maps" / "media" / "a.png"]
    assert sorted(p.name for p in tmp_path.rglob("*")) == ["outside.png", "rank", "ranking.png"]


def test_remove_maps_with_a_damaged_index_or_a_linked_maps_folder(tmp_path):
    import json

    from harness.probes.maps import remove_maps

    elsewhere = tmp_path / "elsewhere"
    (elsewhere / "media").mkdir(parents=True)
    (elsewhere / "media" / "a.png").write_bytes(b"not the rank's")
    run = tmp_path / "rank"
    run.mkdir()
    (run / "maps").symlink_to(elsewhere)
    media = [{"path": "maps/media/a.png"}]
    doc = {"format": "headscope.maps", "tasks": {"t": {"samples": [{"media": media}]}}}
    (run / "maps.json").write_text(json.dumps(doc))
    assert remove_maps(run) == [run / "maps.json"]  # the linked folder's files stay
    assert (elsewhere / "media" / "a.png").is_file()
    (run / "maps.json").write_text(json.dumps({"format": "headscope.maps", "tasks": [1, 2]}))
    (run / MAPS_NPZ).write_bytes(b"arrays")
    assert remove_maps(run) == [run / "maps.json", run / MAPS_NPZ]  # no crash
