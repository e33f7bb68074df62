"""Help and flags agree across subcommands: defaults shown, shared flags everywhere, --version."""

import argparse
import re

import pytest

from harness.cli import main as cli
from harness.cli.bench import BENCHES


def _subparsers():
    parser = cli.build_parser()
    sub = next(a for a in parser._actions if isinstance(a, argparse._SubParsersAction))
    return sub.choices


def _help(argv, capsys):
    with pytest.raises(SystemExit) as exc:
        cli.main(argv)
    assert exc.value.code == 0
    return capsys.readouterr().out


def test_version(capsys):
    from harness import __version__

    assert _help(["--version"], capsys).strip() == f"headscope {__version__}"


@pytest.mark.parametrize("command", ["rank", "diagnose", "leaderboard", "rescore", "run", "view"])
def test_shared_flags_on_every_command(command):
    options = {o for a in _subparsers()[command]._actions for o in a.option_strings}
    for flag in ("--output", "--output_path", "--include_path", "--include-path", "--verbosity"):
        assert flag in options, (command, flag)


def _valued_options_with_default(parser):
    for action in parser._actions:
        if not action.option_strings or action.nargs == 0:
            continue
        if action.default in (None, False, argparse.SUPPRESS):
            continue
        yield action


def test_every_subcommand_shows_its_defaults(capsys):
    for name, sp in _subparsers().items():
        text = re.sub(r"\s+", " ", _help([name, "--help"], capsys)) if name != "bench" else ""
        for action in _valued_options_with_default(sp):
            flag = action.option_strings[0]
            after = text.split(flag, 1)[1] if flag in text else ""
            assert re.search(r"default:? ", after), (name, flag)
    for bench in sorted(BENCHES):
        text = re.sub(r"\s+", " ", _help(["bench", bench, "--help"], capsys))
        options = re.findall(r" (--[a-z][a-z0-9-]*) [A-Z_{]", text.split("options:", 1)[1])
        assert options, bench
        assert "(default: " in text, bench


def test_no_help_text_points_at_the_issue_tracker_or_a_private_module(capsys):
    texts = [_help([name, "--help"], capsys) for name in _subparsers() if name != "bench"]
    texts += [_help(["bench", b, "--help"], capsys) for b in sorted(BENCHES)]
    for text in texts:
        assert not re.search(r"\bthe issue\b|\bissue \d", text)
        assert not re.search(r"harness/\w+/_\w+\.py|harness/api/scoring\.py", text)


def test_rescore_scoring_help_names_the_modes(capsys):
    text = re.sub(r"\s+", " ", _help(["rescore", "--help"], capsys))
    for mode in ("official", "lmms_eval", "lenient", "docs/scoring.md"):
        assert mode in text


@pytest.mark.parametrize("command", ["rank", "diagnose"])
def test_rank_and_diagnose_turn_the_weight_loading_bar_off_in_logs(command, monkeypatch, tmp_path):
    """Not on a terminal (as under pytest): HF's bars are off before the model loads."""
    import transformers.utils.logging as hf_logging

    import harness.cli._probe_args as probe_args
    from harness.api.errors import UsageError

    seen = {}

    def load_model(args):
        seen["bar"] = hf_logging.is_progress_bar_enabled()
        raise UsageError("stop here")

    monkeypatch.setattr(probe_args, "load_model", load_model)
    monkeypatch.delenv("HF_HUB_DISABLE_PROGRESS_BARS", raising=False)
    hf_logging.enable_progress_bar()
    try:
        assert cli.main([command, "--limit", "1", "--output", str(tmp_path / command)]) == 2
    finally:
        hf_logging.enable_progress_bar()
    assert seen == {"bar": False}
