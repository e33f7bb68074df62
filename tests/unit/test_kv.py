"""One reading of ``key=value`` text for --interventions and the lmms-eval style flags."""

from __future__ import annotations

import argparse

import pytest

from harness.api.kv import key_values, split_top_level, typed_value
from harness.api.specs import SpecError, parse_intervention
from harness.cli._args import parse_mapping


@pytest.mark.parametrize(
    ("text", "value"),
    [
        ("1", 1), ("0.1", 0.1), ("1e-3", 1e-3), ("true", True), ("False", False),
        ("null", None), ("zero", "zero"), ("'a,b'", "a,b"), ("[1, 2]", [1, 2]),
        ("[a,b]", ["a", "b"]), ('{"a": 1}', {"a": 1}), ("", ""),
    ],
)  # fmt: skip
def test_typed_values(text, value):
    assert typed_value(text) == value


def test_commas_inside_brackets_quotes_and_braces_do_not_split():
    assert split_top_level('a=[1,2],b="x,y",c={"p":1,"q":2}') == [
        "a=[1,2]",
        'b="x,y"',
        'c={"p":1,"q":2}',
    ]
    assert key_values("k=1,oops") == [("k", "k=1", 1), ("", "oops", "")]


@pytest.mark.parametrize(
    "text",
    ["select=top,k=0.1,layers=[1,2],fast=True,seed=3", "seed=3,fast=true,layers=[1, 2]"],
)
def test_interventions_and_flags_read_key_values_alike(text):
    spec = parse_intervention(f"ablate:{text}")
    assert spec.args == parse_mapping(text, "--model_args")
    assert spec.args["layers"] == [1, 2] and spec.args["fast"] is True and spec.args["seed"] == 3


@pytest.mark.parametrize(
    ("text", "message"),
    [("ablate:k=1,k=2", "sets 'k' twice"), ("ablate:k=1,oops", "expected key=value, got 'oops'")],
)
def test_intervention_errors_name_the_part(text, message):
    with pytest.raises(SpecError, match=message):
        parse_intervention(text)


@pytest.mark.parametrize(
    ("text", "field", "want"),
    [
        ("revision=1.10", "revision", "1.10"),
        ("revision=123e456", "revision", "123e456"),
        ("pretrained=2024.10", "pretrained", "2024.10"),
        ("pretrained=007,revision=0x1F", "pretrained", "007"),
        ("revision='2.0'", "revision", "2.0"),
    ],
)
def test_model_args_strings_reach_the_spec_exactly_as_typed(text, field, want):
    from harness.cli.run import add_arguments, model_from_args

    parser = argparse.ArgumentParser()
    add_arguments(parser)
    spec = model_from_args(parser.parse_args(["--model", "llava", "--model_args", text]))
    assert getattr(spec, field) == want


def test_model_args_family_options_keep_their_types():
    from harness.cli.run import add_arguments, model_from_args

    parser = argparse.ArgumentParser()
    add_arguments(parser)
    args = parser.parse_args(["--model", "llava", "--model_args", "max_pixels=802816,x=0.5"])
    assert model_from_args(args).args == {"max_pixels": 802816, "x": 0.5}


def test_model_args_name_cannot_switch_the_family():
    from harness.cli.run import add_arguments, model_from_args

    parser = argparse.ArgumentParser()
    add_arguments(parser)
    args = parser.parse_args(["--model", "toy", "--model_args", "name=llava"])
    with pytest.raises(SpecError, match="switch the model family from 'toy'.*--model llava"):
        model_from_args(args)
    same = parser.parse_args(["--model", "toy", "--model_args", "name=toy"])
    assert model_from_args(same).name == "toy"


@pytest.mark.parametrize(
    ("text", "key", "want"),
    [
        ("ablate:select=top,k=1,ranking=1.10", "ranking", "1.10"),
        ("hybrid:keep=0.1,window=8,ranking=2024.10", "ranking", "2024.10"),
        ("ablate:select=top,k=1,ranking=r.json,ranking_task=123e456", "ranking_task", "123e456"),
    ],
)
def test_intervention_text_arguments_stay_as_typed(text, key, want):
    """Before: ranking=1.10 became the number 1.1 and was refused as 'got 1.1 (float)'."""
    spec = parse_intervention(text)
    assert spec.args[key] == want
    assert isinstance(spec.args.get("k", spec.args.get("keep")), int | float)


def test_text_fields_are_the_fields_typed_as_text():
    from harness.api.kv import text_fields
    from harness.api.registry import INTERVENTIONS
    from harness.api.specs import ModelSpec

    ablate = text_fields(INTERVENTIONS.get("ablate"))
    assert {"ranking", "ranking_task", "mean_reference", "select"} <= ablate
    assert "heads" not in ablate  # list[str] | str | None: a list is not text
    assert parse_intervention('ablate:select=heads,heads=["L0H0"]').args["heads"] == ["L0H0"]

    text = {"name", "pretrained", "revision", "dtype", "device", "device_map"}
    assert text_fields(ModelSpec) == text | {"attn_implementation"}
