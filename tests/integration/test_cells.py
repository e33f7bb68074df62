"""Sample-log names: one file per cell, never shared, never tied to absolute paths."""

import json
import shutil

from harness.api.specs import InterventionSpec, RunSpec, TaskSpec
from harness.run.evaluator import run_grid
from harness.testing.mock import ScriptedAdapter
from tests.toy_task import correct_on_even


def test_same_task_twice_with_different_args_gives_two_cells_and_two_logs(tmp_path):
    # The second variant breaks document 0: its cell must skip it, not inherit the first
    # cell's row for d000 from a shared log.
    spec = RunSpec(
        tasks=(
            TaskSpec("test_echo", args={"n": 4}),
            TaskSpec("test_echo", args={"n": 4, "broken": [0]}),
        ),
        interventions=(InterventionSpec("none"),),
        skip_bad_docs=True,
        output=str(tmp_path / "run"),
    )
    adapter = ScriptedAdapter(correct_on_even)
    res = run_grid(spec, adapter)
    first, second = res.entries
    assert first.samples_file != second.samples_file
    assert (first.n_samples, first.n_skipped) == (4, 0)
    assert (second.n_samples, second.n_skipped) == (3, 1)
    assert len(adapter.calls) == 7
    for entry, n_rows in ((first, 4), (second, 4)):
        rows = (tmp_path / "run" / entry.samples_file).read_text().splitlines()
        assert len(rows) == n_rows
    assert second.task_args == {"n": 4, "broken": [0]}


def test_names_ignore_where_the_ranking_file_and_output_live(tmp_path):
    from harness.run.cells import cell_names

    ranking = {"format": "x", "scores": [[1, 2]]}
    paths = []
    for where in ("a/deep/rank", "b"):
        path = tmp_path / where / "ranking.json"
        path.parent.mkdir(parents=True)
        path.write_text(json.dumps(ranking))
        paths.append(path)
    names = [
        cell_names(
            [TaskSpec("pope", args={"data_dir": str(tmp_path / where / "pope")})],
            [InterventionSpec("ablate", {"select": "top", "k": 0.1, "ranking": str(p)})],
        )[(0, 0)]
        for where, p in zip(("x", "y"), paths)
    ]
    assert names[0] == names[1]
    assert str(tmp_path) not in names[0] and "deep" not in names[0]
    assert "ranking.json-" in names[0]
    # A ranking with other content is another cell: another name.
    paths[1].write_text(json.dumps({**ranking, "scores": [[2, 1]]}))

    def name(path):
        spec = InterventionSpec("ablate", {"k": 0.1, "ranking": str(path)})
        return cell_names([TaskSpec("pope")], [spec])[(0, 0)]

    assert name(paths[0]) != name(paths[1])


def test_names_clash_only_when_cells_are_told_apart_by_paths(tmp_path):
    from harness.run.cells import cell_names

    tasks = [TaskSpec("pope", args={"data_dir": f"/data/{d}/pope"}) for d in ("v1", "v2")]
    names = cell_names(tasks, [InterventionSpec("none")])
    assert len(set(names.values())) == 2
    assert all(n.startswith("pope[data_dir=pope]__none") for n in names.values())


def test_plain_cells_keep_their_readable_names():
    from harness.run.cells import samples_filename

    assert samples_filename("test_echo", "none") == "test_echo__none.jsonl"
    assert samples_filename("pope", "none", {"subset": "adversarial"}) == (
        "pope[subset=adversarial]__none.jsonl"
    )


def test_a_moved_output_directory_resumes_from_its_logs(tmp_path):
    def spec(out):
        return RunSpec(
            tasks=(TaskSpec("test_echo", args={"n": 4}),),
            interventions=(InterventionSpec("none"),),
            output=str(out),
        )

    run_grid(spec(tmp_path / "a"), ScriptedAdapter(correct_on_even))
    shutil.move(tmp_path / "a", tmp_path / "b")
    adapter = ScriptedAdapter(correct_on_even)
    res = run_grid(spec(tmp_path / "b"), adapter)
    assert adapter.calls == [] and res.entries[0].n_samples == 4


def test_a_head_set_folder_is_named_and_checked_by_the_files_read_from_it(tmp_path):
    from harness.run.cells import file_hashes, samples_filename

    duo = tmp_path / "duo"
    duo.mkdir()
    (duo / "full_attention_heads.tsv").write_text("1\t0\n0\t1\n")
    args = {"select": "top", "k": 1, "ranking": str(duo)}
    name, hashes = samples_filename("t", "ablate", None, args), file_hashes(args)
    (duo / "notes.txt").write_text("not read")  # a file the reader never opens
    assert samples_filename("t", "ablate", None, args) == name
    assert file_hashes(args, keys=hashes) == hashes
    (duo / "config.json").write_text('{"sink_size": 4}')  # read beside the pattern
    assert file_hashes(args, keys=hashes) != hashes
    renamed = samples_filename("t", "ablate", None, args)
    assert renamed != name
    moved = tmp_path / "elsewhere" / "duo"
    shutil.move(duo, moved)  # a moved folder keeps its cells' names
    assert samples_filename("t", "ablate", None, {**args, "ranking": str(moved)}) == renamed
    data = tmp_path / "data"  # a task's data folder: by its base name, as before
    data.mkdir()
    assert samples_filename("t", "none", {"data_dir": str(data)}) == "t[data_dir=data]__none.jsonl"
