"""Losses on attention heads used to train the embedded ``toy`` model (``scripts/train_toy.py``).

- :func:`head_groups`: per-head group norms for the group-lasso pruning penalty;
- :func:`evidence_attention_loss`: makes one of some heads attend from a question position to the
  evidence tokens (retrieval supervision);
- :func:`read_mass`: how much each head attends from the text after the images to image tokens
  (the retrieval-bottleneck penalty: only designated "reader" heads may read the image);
- :func:`add_head_dropout`: DropHead (per sample, inverted scaling) in training mode, sparing some
  heads;
- :func:`parse_heads`: ``"1.0,1.3"`` → ``[(1, 0), (1, 3)]``.

torch is imported inside the functions so importing this module stays light.
"""

from __future__ import annotations

__all__ = [
    "head_groups",
    "evidence_attention_loss",
    "read_mass",
    "parse_heads",
    "add_head_dropout",
]


def head_groups(model):
    """Per layer, a [heads] tensor of the L2 norm of each head's Q, K, V rows and O columns."""
    import torch

    norms = []
    for layer in model.model.language_model.layers:
        att = layer.self_attn
        h, d = att.config.num_attention_heads, att.head_dim
        sq = sum(
            p.weight.view(h, d, -1).pow(2).sum((1, 2)) for p in (att.q_proj, att.k_proj, att.v_proj)
        )
        sq = sq + att.o_proj.weight.view(-1, h, d).pow(2).sum((0, 2))
        norms.append((sq + 1e-12).sqrt())
    return torch.stack(norms)


def parse_heads(text: str, n_layers: int, n_heads: int) -> list[tuple[int, int]]:
    """``"1.0,1.3"`` → ``[(1, 0), (1, 3)]``; ``""`` → ``[]``.

    Raises:
        ValueError: An item is not ``layer.head`` or names a head the model does not have.
    """
    heads = []
    for item in filter(None, text.split(",")):
        try:
            la, h = (int(x) for x in item.split("."))
        except ValueError:
            raise ValueError(f"head {item!r} is not 'layer.head', e.g. '1.0'") from None
        if not (0 <= la < n_layers and 0 <= h < n_heads):
            raise ValueError(f"no head {item} in {n_layers} layers x {n_heads} heads")
        heads.append((la, h))
    return heads


def read_mass(attn, input_ids, attention_mask, image_id):
    """[layers, heads]: batch-mean attention mass from text after the last image to image tokens.

    Args:
        attn: ``{layer: [batch, heads, q, k] attention probabilities}``.
        input_ids: [batch, seq] token ids (right padding).
        attention_mask: [batch, seq], 1 on real tokens.
        image_id: The image placeholder token id.

    Returns:
        Per head, the mean over samples of the mean over text positions after the last image
        token of the attention mass on image tokens.
    """
    import torch

    is_img = (input_ids == image_id).float()
    last_img = (is_img * torch.arange(input_ids.shape[1])).amax(1, keepdim=True)
    after = (torch.arange(input_ids.shape[1]) > last_img) & attention_mask.bool()
    out = []
    for li in sorted(attn):
        mass = torch.einsum("bhqk,bk->bhq", attn[li], is_img)  # per query, mass on image tokens
        per = (mass * after[:, None]).sum(-1) / after.sum(-1, keepdim=True).clamp(min=1)
        out.append(per.mean(0))
    return torch.stack(out)


def evidence_attention_loss(attn, where, heads):
    """Mean over samples of −log(max over ``heads`` of the attention mass on the evidence).

    Args:
        attn: [batch, heads, q, k] attention probabilities of one layer.
        where: Per sample, (query position or ``None``, evidence positions); samples with no
            query position or no evidence are skipped.
        heads: Head indices the supervision may pick from (the best one counts).

    Returns:
        A scalar tensor (0 when no sample qualifies).
    """
    import torch

    terms = [
        -torch.log(attn[b, heads, q][:, ev].sum(-1).max() + 1e-6)
        for b, (q, ev) in enumerate(where)
        if ev and q is not None
    ]
    return torch.stack(terms).mean() if terms else attn.new_zeros(())


def add_head_dropout(model, p: float, spared=()):
    """Drop each decoder head's output with probability ``p`` per sample while training.

    A forward pre-hook on every layer's ``o_proj`` zeroes dropped heads' slices of its input and
    scales the kept ones by 1/(1-p); in eval mode it does nothing.

    Args:
        model: A LLaVA-style model (``model.model.language_model.layers``).
        p: Drop probability in [0, 1).
        spared: (layer, head) pairs never dropped.

    Returns:
        The hook handles.
    """
    import torch

    if not 0 <= p < 1:
        raise ValueError(f"head dropout p must be in [0, 1), got {p}")
    spared = set(spared)
    handles = []
    for li, layer in enumerate(model.model.language_model.layers):
        att = layer.self_attn
        n_heads, dim = att.config.num_attention_heads, att.head_dim
        keep_always = torch.tensor([(li, h) in spared for h in range(n_heads)])

        def pre(module, args, n_heads=n_heads, dim=dim, keep_always=keep_always):
            if not module.training:
                return None
            x = args[0]
            keep = torch.rand(x.shape[0], n_heads) >= p
            # Spared heads pass unscaled; the others are dropped (0) or scaled by 1/(1-p).
            scale = torch.where(keep_always, 1.0, keep.float() / (1 - p))
            x = x * scale.repeat_interleave(dim, -1).view(x.shape[0], *[1] * (x.dim() - 2), -1)
            return (x, *args[1:])

        handles.append(att.o_proj.register_forward_pre_hook(pre))
    return handles
