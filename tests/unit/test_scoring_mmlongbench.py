"""MMLongBench-Doc scoring modes and answer extractors (cases: modes_mmlongbench.json)."""

from __future__ import annotations

import json
import threading
from http.server import BaseHTTPRequestHandler, HTTPServer
from pathlib import Path

import pytest

from harness.api.payloads import Generation
from harness.api.scoring import SCORING_MODES
from harness.api.task import ScoringContext, build_task
from tasks.mmlongbench_doc.extractor import RuleExtractor
from tasks.mmlongbench_doc.task import DocSample, MMLongBenchDoc

DATA = Path(__file__).resolve().parents[1] / "data" / "scoring" / "modes_mmlongbench.json"
CASES = json.loads(DATA.read_text(encoding="utf-8"))["cases"]
CTX = ScoringContext(parse_box=lambda t, s: None, seed=0)


def sample(case: dict, i: int = 0) -> DocSample:
    return DocSample(f"d#{i}", "d.pdf", "q?", case["target"], case["answer_format"], ())


def test_forty_replies_with_provenance():
    assert len(CASES) >= 40
    assert all(set(c["provenance"]) == set(SCORING_MODES) for c in CASES)
    assert {"short", "cot", "markdown", "empty", "other_language", "brackets"} <= {
        c["kind"] for c in CASES
    }


@pytest.mark.parametrize("mode", SCORING_MODES)
@pytest.mark.parametrize("case", CASES, ids=lambda c: f"{c['kind']}:{c['output'][:30]}")
def test_modes(case, mode):
    row = MMLongBenchDoc(scoring=mode).score(sample(case), Generation(case["output"]), CTX)
    want = case["expected"][mode]
    if mode == "official":
        assert row["extracted"] == case["extracted"]  # the rules extractor
        assert row["accuracy"] == pytest.approx(want)
    elif mode == "lmms_eval":
        assert row["accuracy"] == pytest.approx(want["score"])
        assert row["gold_answerable"] == float(want["gt_answerable"])
        assert row["pred_answerable"] == float(want["pred_answerable"])
    else:
        assert row["accuracy"] == pytest.approx(want)


def test_lmms_eval_equality_with_its_own_functions():
    pytest.importorskip("lmms_eval")
    ref = pytest.importorskip("lmms_eval.tasks.mmlongbench_doc.utils")
    task, rows, theirs = MMLongBenchDoc(scoring="lmms_eval"), [], []
    for i, case in enumerate(CASES):
        doc = {"answer": case["target"], "answer_format": case["answer_format"]}
        got = ref.mmlongbench_doc_process_results(doc, [case["output"]])
        row = task.score(sample(case, i), Generation(case["output"]), CTX)
        assert row["accuracy"] == pytest.approx(got["mmlongbench_doc_acc"]["score"])
        rows.append(row)
        theirs.append(got)
    ours = {m.name: m.value for m in task.aggregate(rows)}
    acc = ref.mmlongbench_doc_aggregate_acc([g["mmlongbench_doc_acc"] for g in theirs])
    f1 = ref.mmlongbench_doc_aggregate_f1([g["mmlongbench_doc_f1"] for g in theirs])
    assert ours["accuracy"] == pytest.approx(acc) and ours["f1"] == pytest.approx(f1)


def test_official_f1_follows_the_release():
    task = MMLongBenchDoc()
    replies = [("12", "12", "Int"), ("5", "12", "Int"), ("no idea", "Not answerable", "None")]
    rows = [
        task.score(sample({"target": g, "answer_format": f}), Generation(r), CTX)
        for r, g, f in replies
    ]
    got = {m.name: m.value for m in task.aggregate(rows)}
    # recall = 1/2 over the two answerable golds; precision = 1/3 over the three replies
    # that were not extracted as "Not answerable" → F1 = 2·(1/2)(1/3)/(5/6) = 0.4
    assert got["f1"] == pytest.approx(0.4) and got["accuracy"] == pytest.approx(1 / 3)


class _Stub(BaseHTTPRequestHandler):
    seen: list = []
    reply = "Extracted answer: 12\nAnswer format: Integer"

    def do_POST(self):  # noqa: N802 - http.server's naming
        body = json.loads(self.rfile.read(int(self.headers["Content-Length"])))
        _Stub.seen.append((self.path, body, self.headers.get("Authorization")))
        out = json.dumps({"choices": [{"message": {"content": _Stub.reply}}]}).encode()
        self.send_response(200)
        self.send_header("Content-Type", "application/json")
        self.end_headers()
        self.wfile.write(out)

    def log_message(self, *args):
        pass


@pytest.fixture
def endpoint(tmp_path):
    server = HTTPServer(("127.0.0.1", 0), _Stub)
    thread = threading.Thread(target=server.serve_forever, daemon=True)
    thread.start()
    prompt = tmp_path / "prompt_for_answer_extraction.md"
    prompt.write_text("Extract the answer.\n", encoding="utf-8")
    _Stub.seen = []
    yield f"http://127.0.0.1:{server.server_address[1]}/v1", str(prompt)
    server.shutdown()
    server.server_close()


def test_openai_compatible_extractor_is_called_and_recorded(endpoint, monkeypatch):
    url, prompt = endpoint
    monkeypatch.setenv("OPENAI_API_KEY", "sk-test")
    args = {"extractor": "openai", "extractor_url": url, "extractor_model": "judge-1"}
    task = build_task("mmlongbench_doc", {**args, "extractor_prompt": prompt})
    case = {"target": "12", "answer_format": "Int"}
    row = task.score(sample(case), Generation("There are twelve of them."), CTX)
    assert row["extracted"] == "12" and row["accuracy"] == 1.0
    ((path, body, auth),) = _Stub.seen
    assert path == "/v1/chat/completions" and auth == "Bearer sk-test"
    assert body["model"] == "judge-1" and body["temperature"] == 0.0
    assert body["messages"][0] == {"role": "user", "content": "Extract the answer.\n"}
    assert body["messages"][1]["content"] == "\n\nQuestion:q?\nAnalysis:There are twelve of them.\n"
    settings = task.settings()
    assert settings["extractor"] == "openai" and settings["extractor_model"] == "judge-1"
    assert settings["extractor_endpoint"] == url + "/chat/completions"
    assert len(settings["extractor_prompt_sha256"]) == 64 and "sk-test" not in json.dumps(settings)


def test_extractor_failure_raises_and_never_falls_back(endpoint, tmp_path):
    _, prompt = endpoint
    dead = "http://127.0.0.1:9/v1"  # nothing listens on the discard port
    task = build_task(
        "mmlongbench_doc",
        {
            "extractor": "openai",
            "extractor_url": dead,
            "extractor_model": "m",
            "extractor_prompt": prompt,
        },
    )
    with pytest.raises(RuntimeError, match="127.0.0.1:9"):
        task.score(sample({"target": "12", "answer_format": "Int"}), Generation("12"), CTX)


def test_extractor_reply_without_the_answer_line_scores_zero(endpoint, monkeypatch):
    url, prompt = endpoint
    monkeypatch.setattr(_Stub, "reply", "Failed")  # what the release stores on API errors
    args = {"extractor": "openai", "extractor_url": url, "extractor_model": "m"}
    task = build_task("mmlongbench_doc", {**args, "extractor_prompt": prompt})
    row = task.score(sample({"target": "12", "answer_format": "Int"}), Generation("12"), CTX)
    assert row["extracted"] == "Failed to extract" and row["accuracy"] == 0.0


def test_extractor_arguments_are_checked():
    with pytest.raises(ValueError, match="extractor_prompt"):
        build_task(
            "mmlongbench_doc",
            {"extractor": "openai", "extractor_url": "http://x", "extractor_model": "m"},
        )
    with pytest.raises(ValueError, match="only apply to extractor='openai'"):
        build_task("mmlongbench_doc", {"extractor_url": "http://x"})
    with pytest.raises(ValueError, match="only applies to 'official'"):
        build_task("mmlongbench_doc", {"scoring": "lenient", "extractor": "openai"})
    assert RuleExtractor()("q", "**Answer:** Not mentioned in the report.") == "Not answerable"
