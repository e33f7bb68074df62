"""Regenerate tests/data/scoring/modes_*.json: expected values of every scoring mode.

The replies and the hand labels of the ``lenient`` mode are written below. The ``official``
expectations are computed by running each benchmark's released evaluation code, and the
``lmms_eval`` ones by running lmms-eval 0.7.3's own functions; neither is vendored. Usage:

    python tests/data/scoring/regen_modes.py --refs DIR

DIR holds the released files, fetched from their repositories at the commits named in
``REFS`` (e.g. ``git show <commit>:<path> > DIR/<name>``). Needs ``lmms_eval`` importable
(``pip install --no-deps lmms_eval==0.7.3``; its Video-MME module imports ``cv2``, which is
stubbed here because the scoring functions never use it).
"""

from __future__ import annotations

import argparse
import ast
import json
import random
import sys
import tempfile
import types
from pathlib import Path

HERE = Path(__file__).resolve().parent

REFS = {
    "pope": ("RUCAIBox/POPE", "3df3ba1b110ecce25696989577fad583b67d4239", "evaluate.py"),
    "mmmu": (
        "MMMU-Benchmark/MMMU",
        "bb0b95a945998d91dfef37e969e07d49d1139438",
        "mmmu/utils/eval_utils.py",
    ),
    "videomme": (
        "thanku-all/parse_answer",
        "afd52cfe3dde5b3685e0d4f760c10c756860c758",
        "eval_your_results.py",
    ),
    "mmlongbench": (
        "mayubo2333/MMLongBench-Doc",
        "d73f0dc0be7e0a2ff6a403d5fe65fcd96461f384",
        "eval/eval_score.py",
    ),
    "mlvu": (
        "JUNJIE99/MLVU",
        "fd060c10a43ea48a35100a22688a927b8e531199",
        "evaluation/multiple_choice_evaluation/choice_bench.py",
    ),
}
FILES = {
    "pope": "pope_evaluate.py",
    "mmmu": "mmmu_eval_utils.py",
    "videomme": "videomme_eval.py",
    "mlvu": "mlvu_choice_bench.py",
    "mmlongbench": "mmlb_eval_score.py",
}
LMMS = {
    "pope": "lmms_eval 0.7.3 tasks/pope/utils.py::pope_process_results",
    "mmmu": "lmms_eval 0.7.3 tasks/mmmu/utils.py::mmmu_process_results + eval_open/"
    "eval_multi_choice (random.choice patched to report a fallback)",
    "videomme": "lmms_eval 0.7.3 tasks/videomme/utils.py::videomme_process_results",
    "mlvu": "lmms_eval 0.7.3 tasks/mlvu/utils.py::mlvu_process_results",
    "mmlongbench": "lmms_eval 0.7.3 tasks/mmlongbench_doc/utils.py::"
    "mmlongbench_doc_process_results (raw reply)",
}


def cite(name: str, func: str) -> str:
    repo, commit, path = REFS[name]
    return f"{repo}@{commit[:7]} {path}::{func}"


def functions(path: Path, names: list[str], extra: dict | None = None) -> dict:
    """Compile only the named top-level functions of a reference file (skips its imports)."""
    tree = ast.parse(path.read_text(encoding="utf-8"))
    body = [n for n in tree.body if isinstance(n, ast.FunctionDef) and n.name in names]
    namespace: dict = {"re": __import__("re"), **(extra or {})}
    exec(compile(ast.Module(body=body, type_ignores=[]), str(path), "exec"), namespace)
    return namespace


# -- replies -----------------------------------------------------------------------------------
# (kind, output, target, lenient prediction)
POPE = [
    ("short", "Yes", "yes", "yes"),
    ("short", "No", "no", "no"),
    ("short", "Yes.", "yes", "yes"),
    ("short", "No.", "no", "no"),
    ("short", "yes", "no", "yes"),
    ("lowercase", "no", "yes", "no"),
    ("lowercase", "no.", "no", "no"),
    ("short", "YES", "yes", "yes"),
    ("short", "NO", "no", "no"),
    ("short", " Yes ", "yes", "yes"),
    ("phrase", "Yes, there is a dog in the image.", "yes", "yes"),
    ("phrase", "No, there is no dog in the image.", "no", "no"),
    ("phrase", "There is no dog in the image.", "no", "no"),
    ("phrase", "There is a dog in the image.", "yes", None),
    ("phrase", "The image does not contain a dog.", "no", None),
    ("phrase", "I cannot tell.", "no", None),
    ("phrase", "I cannot tell.", "yes", None),
    ("empty", "", "yes", None),
    ("empty", "", "no", None),
    ("markdown", "**Yes**", "yes", "yes"),
    ("markdown", "**No**", "no", "no"),
    ("brackets", "(Yes)", "yes", "yes"),
    ("brackets", "[No]", "no", "no"),
    ("word", "yesterday", "yes", None),
    ("word", "Nobody knows", "no", None),
    ("word", "Not really.", "no", None),
    (
        "cot",
        "Let me look carefully. The image shows a kitchen. There is no cat. So the answer is no.",
        "no",
        "no",
    ),
    (
        "cot",
        "Looking at the picture, I can see a red car parked on the street. Therefore yes, "
        "there is a car.",
        "yes",
        "yes",
    ),
    (
        "cot",
        "The question asks about a dog. I see a sofa and a lamp but not a dog. Answer: No",
        "no",
        "no",
    ),
    ("cot", "First, I examine the scene. A bicycle leans on the wall, so yes.", "yes", "yes"),
    ("other_language", "是", "yes", None),
    ("other_language", "否", "no", None),
    ("other_language", "Sí, hay un perro.", "yes", None),
    ("other_language", "Nein", "no", None),
    ("punct", "Yes!", "yes", "yes"),
    ("punct", "No!", "no", "no"),
    ("punct", "No, not at all", "no", "no"),
    ("punct", "yes,", "yes", "yes"),
    ("mixed", "Yes and no", "yes", "yes"),
    ("mixed", "no, yes", "no", "no"),
    ("mixed", "Yes, but it is not clear.", "yes", "yes"),
    ("newline", "Yes\nThe dog is on the left.", "yes", "yes"),
    ("newline", "\nNo", "no", "no"),
    ("short", "Yes, it is.", "no", "yes"),
    ("no_space", "Yes.There is a fork.", "yes", "yes"),
    ("no_space", "No.There is no fork.", "no", "no"),
    ("no_space", "Yes,there is.", "yes", "yes"),
]

MC4 = ["red", "green", "blue", "yellow"]
MC_NUM = ["12", "1", "120", "2"]
MC_DOT = ["The dog runs.", "The cat sleeps.", "The bird sings.", "The fish swims."]
MC_LONG = ["infrared light", "red", "ultraviolet light", "visible light"]
# (kind, output, options, gold letter, lenient letter; None = seeded random fallback)
MMMU_MC = [
    ("short", "A", MC4, "A", "A"),
    ("short", "B", MC4, "B", "B"),
    ("short", "(C)", MC4, "C", "C"),
    ("short", "D.", MC4, "D", "D"),
    ("short", "B)", MC4, "B", "B"),
    ("short", "C: blue", MC4, "C", "C"),
    ("lowercase", "b", MC4, "B", "B"),
    ("lowercase", "(d)", MC4, "D", "D"),
    ("markdown", "**B**", MC4, "B", "B"),
    ("markdown", "The answer is **C**.", MC4, "C", "C"),
    ("brackets", "[A]", MC4, "A", "A"),
    ("brackets", "Answer: (B) green", MC4, "B", "B"),
    ("phrase", "The answer is D", MC4, "D", "D"),
    ("phrase", "The correct option is B, because the leaves are green.", MC4, "B", "B"),
    ("phrase", "Best option:(B", MC4, "B", "B"),
    ("phrase", "I think D is right", MC4, "D", "D"),
    (
        "cot",
        "Let's think step by step. The sky on a clear day scatters short wavelengths, "
        "which look blue. So the answer is (C).",
        MC4,
        "C",
        "C",
    ),
    (
        "cot",
        "Option (A) is wrong because red light scatters least. Option (B) is wrong too. "
        "Therefore the answer is (C).",
        MC4,
        "C",
        "C",
    ),
    (
        "cot",
        "The leaves of most plants reflect green light and absorb the rest, so the colour "
        "we see is green",
        MC4,
        "B",
        "B",
    ),
    ("cot", "First consider A. It is too warm. Then consider C. The answer is C.", MC4, "C", "C"),
    (
        "cot",
        "We compare the options and the best fit is yellow for a ripe lemon skin colour",
        MC4,
        "D",
        "D",
    ),
    ("text", "blue", MC4, "C", "C"),
    ("text", "Green.", MC4, "B", "B"),
    ("inside_word", "This is infrared radiation from a hot stove top", MC_LONG, "A", None),
    ("inside_word", "The lamp emits mostly infrared when it warms up quickly", MC4, "A", None),
    ("inside_word", "Bluetooth devices use radio waves to send data around", MC4, "C", None),
    ("inside_word", "The reddish tint comes from iron oxide in the soil here", MC4, "A", None),
    ("numbers", "The count is 12 in total over all the rows shown", MC_NUM, "A", "A"),
    ("numbers", "120", MC_NUM, "C", "C"),
    ("numbers", "I counted 2 of them in the picture on the left side", MC_NUM, "D", "D"),
    ("dot_options", "The cat sleeps", MC_DOT, "B", "B"),
    ("dot_options", "I believe that the bird sings in this scene of the video", MC_DOT, "C", "C"),
    ("other_language", "答案是C", MC4, "C", "C"),
    ("other_language", "答案：B", MC4, "B", "B"),
    ("other_language", "La respuesta es B", MC4, "B", "B"),
    ("other_language", "Die Antwort ist (D).", MC4, "D", "D"),
    ("empty", "", MC4, "A", None),
    ("empty", "   ", MC4, "B", None),
    ("none", "I am not sure.", MC4, "A", None),
    ("none", "None of the options fit the picture shown in this question here", MC4, "B", None),
    ("article", "A dog is shown, so the colour must be yellow.", MC4, "D", "D"),
    ("two_letters", "A or B", MC4, "B", "B"),
    ("two_letters", "(A) and (C)", MC4, "C", "A"),
    ("newline", "B\nBecause green.", MC4, "B", "B"),
    ("punct", "'C'", MC4, "C", "C"),
    ("punct", "A, B", MC4, "A", "A"),
    ("short_text", "The colour is blue here", MC4, "C", "C"),
]
# (kind, output, golds, lenient correct)
MMMU_OPEN = [
    ("numeric", "35", ["3.5"], False),
    ("numeric", "3.5", ["3.5"], True),
    ("numeric", "2", ["-2"], False),
    ("numeric", "-2", ["-2"], True),
    ("numeric", "100", ["1.00"], False),
    ("numeric", "1", ["1.00"], True),
    ("numeric", "15 degrees", ["1.5"], False),
    ("numeric", "1.5 degrees", ["1.5"], True),
    ("numeric", "The answer is 1,000", ["1000"], True),
    ("numeric", "3.14159", ["3.14"], True),
    ("cot", "We add 2 and 3 and multiply by 4, so the result is 20.", ["20"], True),
    ("cot", "Step 1: x = 4\nStep 2: y = 2x = 8\nTherefore the answer is 8", ["8"], True),
    ("text", "infrared", ["red"], False),
    ("text", "Red", ["red"], True),
    ("text", "The colour is red.", ["red"], True),
    ("text", "**Mitochondria**", ["mitochondria"], True),
    ("text", "It is the mitochondrion", ["mitochondria"], False),
    ("text", "photosynthesis", ["Photosynthesis"], True),
    ("single_char", "b", ["B"], True),
    ("single_char", "The answer is b", ["B"], True),
    ("empty", "", ["4"], False),
    ("list", "24", ["24", "24.0"], True),
    ("sci", "1.5e3", ["1500"], True),
    ("other_language", "答案是 12", ["12"], True),
    ("cot", "answer 7 so \nthe total is 9", ["7"], True),
]

VMME_OPTIONS = ["A. Apples.", "B. Bananas.", "C. Berries.", "D. Dates."]
VMME_TEXT = [o[3:] for o in VMME_OPTIONS]
# (kind, output, gold, lenient letter)
VIDEOMME = [
    ("short", "A", "A", "A"),
    ("short", "C", "C", "C"),
    ("short", "C)", "C", "C"),
    ("short", "C: Berries", "C", "C"),
    ("short", "(B)", "B", "B"),
    ("short", "D.", "D", "D"),
    ("short", "B. Bananas.", "B", "B"),
    ("lowercase", "c", "C", "C"),
    ("lowercase", "the answer is d", "D", "D"),
    ("markdown", "**C**", "C", "C"),
    ("markdown", "The best answer is **B**.", "B", "B"),
    ("brackets", "[D]", "D", "D"),
    ("phrase", "The best answer is A", "A", "A"),
    ("phrase", "The correct answer is C.", "C", "C"),
    ("phrase", "The best option is B", "B", "B"),
    ("phrase", "Answer: D", "D", "D"),
    ("phrase", "Best option:(B", "B", "B"),
    ("other_language", "答案是C", "C", "C"),
    ("other_language", "答案：D", "D", "D"),
    ("other_language", "La respuesta correcta es B.", "B", "B"),
    (
        "cot",
        "Based on the video, the person picks up a bunch of bananas, so the answer is B.",
        "B",
        "B",
    ),
    (
        "cot",
        "In the video a woman walks into a kitchen and picks berries from a bowl. The answer is C.",
        "C",
        "C",
    ),
    (
        "cot",
        "Looking at the frames, the fruit is small and red, which fits berries best.",
        "C",
        "C",
    ),
    (
        "cot",
        "I watched the clip twice and the man clearly holds dates in his hand at the end",
        "D",
        "D",
    ),
    ("text", "Berries", "C", "C"),
    ("text", "Berries.", "C", "C"),
    ("text", "dates", "D", "D"),
    ("inside_word", "Applesauce is being made", "A", None),
    ("inside_word", "Bananasplit", "B", None),
    ("none", "I cannot determine that from the video.", "A", None),
    ("none", "none of the above options are shown in this particular clip at all here", "B", None),
    ("empty", "", "A", None),
    ("empty", "  ", "C", None),
    ("two_letters", "A or D", "D", "D"),
    ("two_letters", "(A) (B)", "B", "A"),
    ("article", "A man eats dates.", "D", "D"),
    ("newline", "D\nThe dates are visible.", "D", "D"),
    ("punct", "C.", "C", "C"),
    ("punct", "'B'", "B", "B"),
    (
        "long_no_letter",
        "the person in the video is eating some kind of fruit but it is hard to "
        "say which one exactly",
        "A",
        None,
    ),
    ("start_letter", "D - Dates", "D", "D"),
    ("glued_prefix", "The best option is C", "C", "C"),
    ("glued_prefix", "Best answer: C", "C", "C"),
    ("glued_prefix", "Best option: D", "D", "D"),
    ("glued_prefix", "Best answer:Best option: D", "D", "D"),
    ("ranks", "Maybe C: no, B) yes", "B", "B"),
]

MLVU_OPTIONS = ["a red car", "a blue bus", "a green bike", "a white truck"]
# (kind, output, gold, lenient letter)
MLVU = [
    ("short", "B", "B", "B"),
    ("short", "B)", "B", "B"),
    ("short", "B) a blue bus", "B", "B"),
    ("short", "(B) a blue bus", "B", "B"),
    ("short", "C", "B", "C"),
    ("short", "D.", "D", "D"),
    ("short", " B", "B", "B"),
    ("short", "B\n", "B", "B"),
    ("lowercase", "b", "B", "B"),
    ("lowercase", "b)", "B", "B"),
    ("markdown", "**B**", "B", "B"),
    ("markdown", "**B)** a blue bus", "B", "B"),
    ("brackets", "[C]", "C", "C"),
    ("brackets", "(A)", "A", "A"),
    ("phrase", "Best option:(B", "B", "B"),
    ("phrase", "Best option: (C) a green bike", "C", "C"),
    ("phrase", "The correct option is B, because the bus is blue.", "B", "B"),
    ("phrase", "The answer is A", "A", "A"),
    ("phrase", "Answer: D", "D", "D"),
    (
        "cot",
        "The video shows a street. A blue bus (B) stops at the corner. So B) is right.",
        "B",
        "B",
    ),
    (
        "cot",
        "First a red car passes, then a green bike. The question asks about the second "
        "vehicle, so the answer is C.",
        "C",
        "C",
    ),
    (
        "cot",
        "Watching closely, the vehicle that appears in the needle frame is a white truck",
        "D",
        "D",
    ),
    ("text", "a blue bus", "B", "B"),
    ("text", "A green bike.", "C", "C"),
    ("inside_word", "Bus", "B", None),
    ("inside_word", "Bicycle", "C", None),
    ("other_language", "答案是C", "C", "C"),
    ("other_language", "答案：A", "A", "A"),
    ("other_language", "Die richtige Option ist D", "D", "D"),
    ("empty", "", "A", None),
    ("empty", "   ", "B", None),
    ("none", "I don't know.", "A", None),
    ("two_letters", "A or C", "C", "C"),
    ("two_letters", "A) and C)", "C", "A"),
    ("close_first", ")", "A", None),
    ("article", "A man rides a green bike.", "C", "C"),
    ("newline", "C\nA green bike.", "C", "C"),
    ("punct", "'D'", "D", "D"),
    ("punct", "B.", "B", "B"),
    ("start_letter", "D - a white truck", "D", "D"),
    ("paren_late", "The vehicle (a blue bus) is B", "B", "B"),
    ("colon", "B: a blue bus", "B", "B"),
    ("ranks", "Maybe C: no, B) yes", "B", "B"),
]


# MLVU's gold letter (qa_template): (kind, candidates, answer)
MLVU_GOLD = [
    ("unique", ["a red car", "a blue bus", "a green bike", "a white truck"], "a blue bus"),
    ("answer_twice", ["a red car", "a blue bus", "a red car", "a white truck"], "a red car"),
    ("answer_thrice", ["two", "two", "three", "two"], "two"),
    ("other_twice", ["two", "two", "three", "four"], "three"),
    ("answer_first_and_last", ["yes", "no", "maybe", "yes"], "yes"),
    ("six_options", ["1", "2", "3", "4", "5", "2"], "2"),
]


def method(path: Path, cls: str, name: str) -> object:
    """One method of a class in a reference file, compiled alone (skips the file's imports)."""
    tree = ast.parse(path.read_text(encoding="utf-8"))
    owner = next(n for n in tree.body if isinstance(n, ast.ClassDef) and n.name == cls)
    node = next(n for n in owner.body if isinstance(n, ast.FunctionDef) and n.name == name)
    namespace: dict = {}
    exec(compile(ast.Module(body=[node], type_ignores=[]), str(path), "exec"), namespace)
    return namespace[name]


def mlvu_gold_letters(refs: Path) -> None:
    """tests/data/scoring/mlvu_gold_letter.json: the letter qa_template gives each answer."""
    qa_template = method(refs / FILES["mlvu"], "MLVU", "qa_template")
    cases = []
    for kind, candidates, answer in MLVU_GOLD:
        data = {"question": "q", "candidates": candidates, "answer": answer}
        _, gold = qa_template(None, data)  # "(X) answer text"
        cases.append({"kind": kind, "candidates": candidates, "answer": answer, "letter": gold[1]})
    repo, commit, path = REFS["mlvu"]
    data = {
        "provenance": f"https://github.com/{repo} @ {commit}, {path}::MLVU.qa_template",
        "regenerate": "python tests/data/scoring/regen_modes.py --refs DIR (see its docstring)",
        "cases": cases,
    }
    text = json.dumps(data, indent=1, ensure_ascii=False) + "\n"
    (HERE / "mlvu_gold_letter.json").write_text(text, encoding="utf-8")
    print(f"mlvu_gold_letter.json: {len(cases)} cases")


# (kind, reply, gold, answer_format, rules-extracted answer, lenient score)
MMLB = [
    ("short", "12", "12", "Int", "12", 1.0),
    ("short", "12.", "12", "Int", "12", 1.0),
    ("sentence", "There are 12 cars.", "12", "Int", "There are 12 cars", 1.0),
    ("float_text", "12.0", "12", "Int", "12.0", 1.0),
    ("markdown", "**7**", "7", "Int", "7", 1.0),
    ("answer_prefix", "Answer: 7", "7", "Int", "7", 1.0),
    (
        "cot",
        "Counting the rows of the table on page 3, we get 4 + 3 = 7 regulations.",
        "7",
        "Int",
        "Counting the rows of the table on page 3, we get 4 + 3 = 7 regulations",
        0.0,
    ),
    ("float", "3.5", "3.5", "Float", "3.5", 1.0),
    ("float", "3.52", "3.5", "Float", "3.52", 1.0),
    ("percent", "45%", "0.45", "Float", "45%", 1.0),
    ("percent", "0.45", "45%", "Float", "0.45", 1.0),
    ("float", "$1.5 million", "1.5", "Float", "$1.5 million", 1.0),
    ("float", "1,234.5", "1234.5", "Float", "1,234.5", 1.0),
    ("float_close", "100.5", "100", "Float", "100.5", 1.0),
    ("str", "Apple", "apple", "Str", "Apple", 1.0),
    ("str", "apple inc", "Apple Inc.", "Str", "apple inc", 1.0),
    ("str", "the united states", "United States", "Str", "the united states", 13 / 17),
    ("str_paren", "Johnson (the CEO)", "Johnson", "Str", "Johnson (the CEO)", 1.0),
    ("str_dollar", "$500", "500", "Str", "$500", 1.0),
    (
        "url",
        "https://www.example.com",
        "https://www.example.com",
        "Str",
        "https://www.example.com",
        1.0,
    ),
    ("url", "www.example.com", "https://www.example.com", "Str", "www.example.com", 0.0),
    ("date", "2020-03-05", "2020-03-05", "Str", "2020-03-05", 1.0),
    ("date", "March 5, 2020", "2020-03-05", "Str", "March 5, 2020", 1.0),
    ("date", "5 March 2020", "March 5, 2020", "Str", "5 March 2020", 1.0),
    ("date", "2020-03", "2020-03", "Str", "2020-03", 1.0),
    ("time", "9 a.m.", "9 a.m.", "Str", "9 a.m.", 1.0),
    ("time", "10:30 a.m.", "10:30 a.m.", "Str", "10:30 a.m.", 1.0),
    ("abbreviation", "Apple Inc.", "Apple Inc.", "Str", "Apple Inc.", 1.0),
    ("abbreviation", "U.S.", "U.S.", "Str", "U.S.", 1.0),
    (
        "abbreviation",
        "Martin Luther King Jr.",
        "Martin Luther King Jr.",
        "Str",
        "Martin Luther King Jr.",
        1.0,
    ),
    ("sentence_end", "Paris.", "Paris", "Str", "Paris", 1.0),
    # a "." after a decimal ends the sentence (it is not an abbreviation's, as in "U.S.")
    ("decimal_end", "3.14.", "3.14", "Float", "3.14", 1.0),
    ("decimal_end", "1,200.50.", "1200.5", "Float", "1,200.50", 1.0),
    ("decimal_end", "0.5.", "0.5", "Float", "0.5", 1.0),
    ("decimal_end", "The ratio is 0.5.", "0.5", "Float", "The ratio is 0.5", 1.0),
    ("decimal_end", "3.14.", "3.14", "Str", "3.14", 1.0),
    ("abbreviation", "U.S.A.", "U.S.A.", "Str", "U.S.A.", 1.0),
    ("na", "N/A.", "Not answerable", "None", "Not answerable", 1.0),
    ("na", "n/a", "Not answerable", "Str", "Not answerable", 1.0),
    ("email", "info@example.com", "info@example.com", "Str", "info@example.com", 1.0),
    ("page", "page 5", "page 5", "Str", "page 5", 1.0),
    ("lowercase", "not answerable", "Not answerable", "None", "Not answerable", 1.0),
    (
        "na",
        "The document does not contain this information.",
        "Not answerable",
        "None",
        "Not answerable",
        1.0,
    ),
    ("na", "Unanswerable", "Not answerable", "None", "Not answerable", 1.0),
    ("na_wrong", "42", "Not answerable", "None", "42", 0.0),
    ("na_false", "Not answerable", "12", "Int", "Not answerable", 0.0),
    ("na_punct", "not answerable!", "Not answerable", "Str", "Not answerable", 1.0),
    ("int_gold_decimal", "1", "1.0", "Int", "1", 1.0),
    ("list", "['apple', 'banana']", "['apple', 'banana']", "List", "['apple', 'banana']", 1.0),
    ("list", "['banana', 'apple']", "['apple', 'banana']", "List", "['banana', 'apple']", 1.0),
    ("list", "apple, banana", "['apple', 'banana']", "List", "apple, banana", 1.0),
    ("list", "['1', '2', '3']", "['1', '2', '3']", "List", "['1', '2', '3']", 1.0),
    ("list", "['1', '2']", "['1', '2', '3']", "List", "['1', '2']", 0.0),
    ("list", "[apple, banana]", "['apple', 'banana']", "List", "[apple, banana]", 1.0),
    ("empty", "", "12", "Int", "", 0.0),
    ("empty", "", "apple", "Str", "", 0.0),
    ("other_language", "十二", "12", "Int", "十二", 0.0),
    ("other_language", "manzana", "apple", "Str", "manzana", 0.0),
    ("brackets", "(12)", "12", "Int", "(12)", 1.0),
    (
        "str_long",
        "The chart shows the revenue of the company",
        "revenue",
        "Str",
        "The chart shows the revenue of the company",
        0.0,
    ),
]


# -- reference runners --------------------------------------------------------------------------
def pope_official(refs: Path, outputs: list[str]) -> list[str]:
    """Run POPE's evaluate.py on the replies; returns its yes/no per reply."""
    source = (refs / FILES["pope"]).read_text(encoding="utf-8")
    with tempfile.TemporaryDirectory() as tmp:
        ans, lab = Path(tmp) / "ans.jsonl", Path(tmp) / "lab.jsonl"
        ans.write_text("".join(json.dumps({"answer": o}) + "\n" for o in outputs))
        # Two labels of each kind so the script's precision/recall never divide by zero.
        lab.write_text("".join(json.dumps({"label": "yes"}) + "\n" for _ in outputs))
        source = source.replace("ans_file = ''", f"ans_file = {str(ans)!r}")
        source = source.replace("label_file = ''", f"label_file = {str(lab)!r}")
        namespace: dict = {"print": lambda *a, **k: None}
        try:
            exec(compile(source, "pope_evaluate.py", "exec"), namespace)
        except ZeroDivisionError:
            pass  # all-yes labels: the preds are already set before the metrics
        return [a["answer"] for a in namespace["answers"]]


def lmms(name: str):
    if name == "videomme":
        sys.modules.setdefault("cv2", types.ModuleType("cv2"))
    return __import__(f"lmms_eval.tasks.{name}.utils", fromlist=["x"])


def build(refs: Path) -> None:
    # POPE
    official = pope_official(refs, [c[1] for c in POPE])
    pope_mod = lmms("pope")
    cases = []
    for (kind, out, target, lenient), off in zip(POPE, official):
        got = pope_mod.pope_process_results({"question_id": 1, "answer": target}, [out])[
            "pope_accuracy"
        ]
        cases.append(
            {
                "kind": kind,
                "output": out,
                "target": target,
                "expected": {
                    "official": {"pred": off, "correct": float(off == target)},
                    "lmms_eval": {"pred": got["prediction"], "correct": got["score"]},
                    "lenient": {
                        "pred": lenient,
                        "correct": float((lenient or "no") == target),
                    },
                },
                "provenance": {
                    "official": cite("pope", "module body (first sentence; No/not/no → no)"),
                    "lmms_eval": LMMS["pope"],
                    "lenient": "hand-labelled: the yes/no the reply states (None: neither)",
                },
            }
        )
    dump("modes_pope.json", "pope", cases)

    # MMMU
    ref = functions(refs / FILES["mmmu"], [
        "parse_multi_choice_response", "parse_open_response", "normalize_str",
        "check_is_number", "extract_numbers", "eval_open",
    ], {"random": random, "np": __import__("numpy")})  # fmt: skip
    mm = lmms("mmmu")
    mcq = __import__("lmms_eval.tasks._task_utils.mmmu_mcq_utils", fromlist=["x"])
    fallback = "<random>"
    cases = []
    for kind, out, options, gold, lenient in MMMU_MC:
        letters = [chr(65 + i) for i in range(len(options))]
        index = dict(zip(letters, options))
        saved = random.choice
        random.choice = lambda seq: fallback  # both references call random.choice
        try:
            off = ref["parse_multi_choice_response"](out, letters, index)
            lm = mm.parse_multi_choice_response(out, letters, index)
            assert mcq.random is random
        finally:
            random.choice = saved
        cases.append(
            {
                "kind": kind,
                "question_type": "multiple-choice",
                "output": out,
                "options": options,
                "target": gold,
                "expected": {
                    "official": None if off == fallback else off,
                    "lmms_eval": None if lm == fallback else lm,
                    "lenient": lenient,
                },
                "provenance": {
                    "official": cite("mmmu", "parse_multi_choice_response")
                    + " (None: random fallback)",
                    "lmms_eval": LMMS["mmmu"],
                    "lenient": "hand-labelled: the letter the reply states (None: fallback)",
                },
            }
        )
    for kind, out, golds, lenient in MMMU_OPEN:
        gold_arg = golds[0] if len(golds) == 1 else golds
        off = ref["eval_open"](gold_arg, ref["parse_open_response"](out))
        raw = golds[0] if len(golds) == 1 else repr(golds)
        lm = mm.eval_open(raw, mm.parse_open_response(out))
        cases.append(
            {
                "kind": kind,
                "question_type": "open",
                "output": out,
                "target": golds,
                "raw_answer": raw,
                "expected": {"official": off, "lmms_eval": lm, "lenient": lenient},
                "provenance": {
                    "official": cite("mmmu", "parse_open_response + eval_open"),
                    "lmms_eval": LMMS["mmmu"] + " (gold = the raw answer string)",
                    "lenient": "hand-labelled: numeric golds as numbers, text as whole words",
                },
            }
        )
    dump("modes_mmmu.json", "mmmu", cases)

    # Video-MME
    ref = functions(refs / FILES["videomme"], ["extract_characters_regex"])
    vm = lmms("videomme")
    cases = []
    for kind, out, gold, lenient in VIDEOMME:
        off = ref["extract_characters_regex"](out)
        got = vm.videomme_process_results(
            {
                "question_id": "1-1", "duration": "short", "domain": "Knowledge",
                "sub_category": "Law", "task_type": "Counting Problem", "answer": gold,
                "videoID": "v",
            },
            [out],
        )["videomme_perception_score"]  # fmt: skip
        cases.append(
            {
                "kind": kind,
                "output": out,
                "options": VMME_TEXT,
                "target": gold,
                "expected": {
                    "official": off,
                    "lmms_eval": got["pred_answer"],
                    "lenient": lenient,
                },
                "provenance": {
                    "official": cite("videomme", "extract_characters_regex")
                    + " ('' = not answered)",
                    "lmms_eval": LMMS["videomme"],
                    "lenient": "hand-labelled: the letter the reply states",
                },
            }
        )
    dump("modes_videomme.json", "videomme", cases)

    # MLVU
    ref = functions(refs / FILES["mlvu"], ["check_ans"])
    ml = lmms("mlvu")
    cases = []
    for kind, out, gold, lenient in MLVU:
        gt = f"({gold}) {MLVU_OPTIONS['ABCD'.index(gold)]}"
        off = ref["check_ans"](pred=out, gt=gt)
        got = ml.mlvu_process_results(
            {"question": "q", "task_type": "count", "answer": gold}, [out]
        )["mlvu_percetion_score"]
        cases.append(
            {
                "kind": kind,
                "output": out,
                "options": MLVU_OPTIONS,
                "target": gold,
                "expected": {
                    "official": bool(off),
                    "lmms_eval": got["pred_answer"],
                    "lenient": lenient,
                },
                "provenance": {
                    "official": cite("mlvu", "check_ans") + " (gt '(X) text')",
                    "lmms_eval": LMMS["mlvu"],
                    "lenient": "hand-labelled: the letter the reply states",
                },
            }
        )
    dump("modes_mlvu.json", "mlvu", cases)

    # MMLongBench-Doc: the release scores the extracted answer; lmms-eval the raw reply.
    ref = functions(refs / FILES["mmlongbench"], [
        "levenshtein_distance", "anls_compute", "is_float_equal", "get_clean_string",
        "is_exact_match", "isfloat", "eval_score",
    ], {"isclose": __import__("math").isclose, "print": lambda *a, **k: None})  # fmt: skip
    lm = lmms("mmlongbench_doc")
    cases = []
    for kind, reply, gold, fmt, extracted, lenient in MMLB:
        try:
            off = float(ref["eval_score"](gold, extracted, fmt))
        except Exception:  # noqa: BLE001 - run_lvlm.py scores any exception 0
            off = 0.0
        got = lm.mmlongbench_doc_process_results({"answer": gold, "answer_format": fmt}, [reply])[
            "mmlongbench_doc_f1"
        ]
        cases.append(
            {
                "kind": kind,
                "output": reply,
                "target": gold,
                "answer_format": fmt,
                "extracted": extracted,
                "expected": {
                    "official": off,
                    "lmms_eval": {
                        "score": got["score"],
                        "gt_answerable": got["gt_answerable"],
                        "pred_answerable": got["pred_answerable"],
                    },
                    "lenient": lenient,
                },
                "provenance": {
                    "official": cite("mmlongbench", "eval_score")
                    + " on the 'extracted' answer (rules extractor)",
                    "lmms_eval": LMMS["mmlongbench"],
                    "lenient": "hand-labelled: headscope's match_answer on the raw reply",
                },
            }
        )
    dump("modes_mmlongbench.json", "mmlongbench", cases)


def dump(name: str, bench: str, cases: list[dict]) -> None:
    repo, commit, path = REFS[bench]
    data = {
        "provenance": {
            "official": f"https://github.com/{repo} @ {commit}, {path}",
            "lmms_eval": LMMS[bench],
            "lenient": "hand labels in tests/data/scoring/regen_modes.py",
        },
        "regenerate": "python tests/data/scoring/regen_modes.py --refs DIR (see its docstring)",
        "cases": cases,
    }
    text = json.dumps(data, indent=1, ensure_ascii=False) + "\n"
    (HERE / name).write_text(text, encoding="utf-8")
    print(f"{name}: {len(cases)} cases")


if __name__ == "__main__":
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--refs", type=Path, required=True, help="folder of released files")
    refs = parser.parse_args().refs
    build(refs)
    mlvu_gold_letters(refs)
