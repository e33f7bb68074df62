"""Attention-head losses of the toy training recipe, on hand-built attention tensors."""

from __future__ import annotations

import pytest

from harness.toy.training.head_losses import (
    add_head_dropout,
    evidence_attention_loss,
    parse_heads,
    read_mass,
)

torch = pytest.importorskip("torch")

IMG = 9  # image token id in these cases


def test_parse_heads():
    assert parse_heads("1.0,3.7", 4, 8) == [(1, 0), (3, 7)]
    assert parse_heads("", 4, 8) == []
    with pytest.raises(ValueError, match="no head 4.0"):
        parse_heads("4.0", 4, 8)
    with pytest.raises(ValueError, match="layer.head"):
        parse_heads("1-0", 4, 8)


def _uniform(batch, heads, seq):
    # Causal uniform attention: row q spreads 1/(q+1) over keys 0..q.
    att = torch.tril(torch.ones(seq, seq))
    att = att / att.sum(-1, keepdim=True)
    return att.expand(batch, heads, seq, seq).clone()


def test_read_mass_counts_only_text_after_the_last_image():
    # tokens: text, img, img, text, text, pad — text positions after the images are 3 and 4.
    ids = torch.tensor([[1, IMG, IMG, 5, 6, 0]])
    mask = torch.tensor([[1, 1, 1, 1, 1, 0]])
    att = _uniform(1, 2, 6)
    att[0, 1] = 0
    att[0, 1, :, 0] = 1  # head 1 only ever attends to the first (text) token
    mass = read_mass({0: att}, ids, mask, IMG)
    # head 0: position 3 puts 2/4 on images, position 4 puts 2/5 → mean 0.45; head 1: 0.
    assert mass.shape == (1, 2)
    assert mass[0, 0].item() == pytest.approx((2 / 4 + 2 / 5) / 2)
    assert mass[0, 1].item() == 0


def test_read_mass_averages_samples_with_their_own_image_spans():
    ids = torch.tensor([[IMG, 5, 6, 7], [IMG, IMG, IMG, 7]])
    mask = torch.ones(2, 4, dtype=torch.long)
    mass = read_mass({0: _uniform(2, 1, 4), 1: _uniform(2, 1, 4)}, ids, mask, IMG)
    first = (1 / 2 + 1 / 3 + 1 / 4) / 3  # sample 0: positions 1..3, one image key
    second = 3 / 4  # sample 1: position 3 only, three image keys
    assert mass.shape == (2, 1)
    assert mass[1, 0].item() == pytest.approx((first + second) / 2)


def test_evidence_attention_loss_takes_the_best_head_and_skips_unnamed():
    att = torch.zeros(2, 3, 4, 4)
    att[0, 0, 3, 1] = 0.5
    att[0, 2, 3, 1] = 0.25
    att[0, 2, 3, 2] = 0.5  # head 2 puts 0.75 on positions {1, 2}
    where = [(3, [1, 2]), (None, [1])]  # sample 1 has no query position: skipped
    loss = evidence_attention_loss(att, where, [0, 1, 2])
    assert loss.item() == pytest.approx(-torch.log(torch.tensor(0.75 + 1e-6)).item())
    only_first = evidence_attention_loss(att, where, [0])
    assert only_first.item() == pytest.approx(-torch.log(torch.tensor(0.5 + 1e-6)).item())
    assert evidence_attention_loss(att, [(None, [1]), (2, [])], [0]).item() == 0


class _Attn(torch.nn.Module):
    def __init__(self, heads, dim):
        super().__init__()
        self.config = type("Cfg", (), {"num_attention_heads": heads})()
        self.head_dim = dim
        self.o_proj = torch.nn.Identity()


def _fake_model(layers, heads, dim):
    # Only the attribute path add_head_dropout walks: model.model.language_model.layers[i].
    layer_list = torch.nn.ModuleList()
    for _ in range(layers):
        layer = torch.nn.Module()
        layer.self_attn = _Attn(heads, dim)
        layer_list.append(layer)
    lm = torch.nn.Module()
    lm.layers = layer_list
    inner = torch.nn.Module()
    inner.language_model = lm
    model = torch.nn.Module()
    model.model = inner
    return model


def test_head_dropout_spares_readers_scales_kept_heads_and_is_off_in_eval():
    torch.manual_seed(0)
    model = _fake_model(2, 4, 3)
    add_head_dropout(model, 0.5, spared=[(1, 2)])
    x = torch.ones(200, 5, 12)
    o_proj = model.model.language_model.layers[1].self_attn.o_proj
    out = o_proj(x).view(200, 5, 4, 3)
    per_head = out[:, 0, :, 0]  # one value per (sample, head)
    assert set(per_head[:, :2].unique().tolist()) == {0.0, 2.0}  # dropped or 1/(1-p)
    assert (out == out[:, :1]).all()  # one decision per sample and head, across positions
    assert (per_head[:, 2] == 1).all()  # the spared reader is never dropped nor scaled
    assert 0.35 < (per_head[:, 0] == 0).float().mean() < 0.65
    model.eval()
    assert torch.equal(o_proj(x), x)


def test_head_dropout_rejects_bad_p():
    with pytest.raises(ValueError, match=r"\[0, 1\)"):
        add_head_dropout(_fake_model(1, 2, 2), 1.0)
