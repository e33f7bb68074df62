"""Edit distance and ANLS of tasks.common.answers (rapidfuzz underneath) on hard cases.

Expected distances are the textbook values (Levenshtein 1966 unit costs), counted by hand;
ANLS follows its definition (Biten et al. 2019, ST-VQA): 1 − d / max(len), 0 past 0.5.
"""

import pytest

from tasks.common.answers import anls, levenshtein

DISTANCES = [
    ("kitten", "sitting", 3),
    ("flaw", "lawn", 2),
    ("", "", 0),
    ("", "abc", 3),
    ("ab", "ba", 2),  # a transposition costs two edits (not Damerau)
    ("🙂🙂", "🙂", 1),  # code points, not UTF-8 bytes nor UTF-16 units
    ("Straße", "Strasse", 2),
    ("x" * 300, "x" * 299 + "y", 1),
]


@pytest.mark.parametrize("a, b, expected", DISTANCES)
def test_levenshtein_textbook_values(a, b, expected):
    assert levenshtein(a, b) == expected
    assert levenshtein(b, a) == expected


ANLS = [
    ("abcd", "abxy", 0.5),  # normalised distance exactly 0.5: kept
    ("abcde", "abxyz", 0.0),  # 0.6 > 0.5: zero
    ("Hello  World", "hello world", 1.0),  # case and whitespace normalised
    ("", "", 1.0),
    ("", "a", 0.0),
    ("kitten", ["sitting", "kitten!"], 1 - 1 / 7),  # best gold answer
]


@pytest.mark.parametrize("pred, gold, expected", ANLS)
def test_anls_definition(pred, gold, expected):
    assert anls(pred, gold) == expected
