"""distributed.agree: a peer's usage error stops this rank as a usage error, a peer's bug not."""

import pytest

dist = pytest.importorskip("torch.distributed")

from harness.api.errors import UsageError  # noqa: E402
from harness.run import distributed  # noqa: E402


@pytest.fixture
def two_ranks(monkeypatch):
    """This process is rank 0 of 2; ``peer`` sets what rank 1 reports."""
    peer = {}

    def all_gather_object(outcomes, mine):
        peer["shared"] = mine
        outcomes[0], outcomes[1] = mine, peer.get("outcome")

    monkeypatch.setattr(dist, "is_available", lambda: True)
    monkeypatch.setattr(dist, "is_initialized", lambda: True)
    monkeypatch.setattr(dist, "get_world_size", lambda: 2)
    monkeypatch.setattr(dist, "get_rank", lambda: 0)
    monkeypatch.setattr(dist, "all_gather_object", all_gather_object)
    monkeypatch.setattr(dist, "destroy_process_group", lambda: None)
    monkeypatch.setenv("TORCHELASTIC_USE_AGENT_STORE", "True")  # no store-host grace sleep
    return peer


def test_a_peer_usage_error_is_a_usage_error_here(two_ranks):
    two_ranks["outcome"] = ("SpecError: --limit must be ≥ 1", True)
    with pytest.raises(distributed.PeerRefused, match="rank 1 refused the run.*--limit") as err:
        distributed.agree(None)
    assert isinstance(err.value, UsageError)


def test_a_peer_bug_is_not_a_usage_error_here(two_ranks):
    two_ranks["outcome"] = ("KeyError: 'x'", False)
    with pytest.raises(distributed.PeerFailed, match="rank 1 failed.*KeyError") as err:
        distributed.agree(None)
    assert not isinstance(err.value, UsageError)


def test_this_rank_raises_its_own_failure_first(two_ranks):
    two_ranks["outcome"] = ("KeyError: 'x'", False)
    mine = UsageError("mine")
    with pytest.raises(UsageError) as err:
        distributed.agree(mine)
    assert err.value is mine and two_ranks["shared"] == ("UsageError: mine", True)


def test_nothing_raised_when_every_rank_agrees(two_ranks):
    distributed.agree(None)
    assert two_ranks["shared"] is None


def test_this_rank_shares_a_bug_as_not_a_usage_error(two_ranks):
    with pytest.raises(RuntimeError, match="a bug"):
        distributed.agree(RuntimeError("a bug"))
    assert two_ranks["shared"] == ("RuntimeError: a bug", False)
