"""Attention-mass recording (RAM) from inside the attention function, without changing outputs.

:func:`record_attention` fills a :class:`~harness.attention.plan.AttentionRecorder` with, per
decoder layer, the post-softmax attention mass of chosen query rows on chosen key columns,
computed from logits for those rows only (B, H, n_q, S_kv) — never S × S.
"""

from __future__ import annotations

from typing import TYPE_CHECKING

from harness.attention.window import capped, first_real, full_bool_mask, masked_softmax

if TYPE_CHECKING:
    import torch

    from harness.attention.plan import RecordSpec, Window

__all__ = ["record_attention"]


def record_attention(
    spec: RecordSpec,
    layer: int,
    query: torch.Tensor,
    key: torch.Tensor,
    attention_mask: torch.Tensor | None,
    scale: float,
    windows: dict[int, Window],
    softcap: float | None = None,
) -> None:
    """Compute and store one layer's record (skips calls that lack the requested rows).

    The recorded attention is the head's learned attention (before ablation or priors), with
    its sliding window applied when the head is windowed in this call, and its logits
    softcapped when the model caps them (``softcap``, Gemma 2).
    """
    import torch

    batch, heads, q_len, dim = query.shape
    kv_heads, kv_len = key.shape[1], key.shape[2]
    offset = kv_len - q_len
    qmask = _fit(spec.query_mask, kv_len).to(query.device)
    if not qmask[:, offset:].any() or qmask[:, :offset].any():
        return  # e.g. decode steps: the requested rows were in the prefill call
    rows = qmask[:, offset:]
    counts = rows.sum(1)
    n = int(counts.max())
    idx = torch.argsort((~rows).to(torch.int8), dim=1, stable=True)[:, :n]  # [batch, n]
    valid = torch.arange(n, device=query.device)[None, :] < counts[:, None]
    q_sel = query.gather(2, idx[:, None, :, None].expand(batch, heads, n, dim))
    group = heads // kv_heads
    logits = q_sel.reshape(batch, kv_heads, group * n, dim) @ key.transpose(-1, -2)
    logits = logits.view(batch, heads, n, kv_len) * scale  # [batch, head, q_row, k_pos]
    full = full_bool_mask(attention_mask, batch, q_len, kv_len, query.device)
    mask = full.gather(2, idx[:, None, :, None].expand(batch, 1, n, kv_len))
    if windows:
        mask = mask & _window_rows(windows, heads, idx + offset, attention_mask, kv_len)
    probs = masked_softmax(capped(logits.float(), softcap), mask)
    cols = _fit(spec.key_mask, kv_len).to(query.device, torch.float32)
    mass = (probs * cols[:, None, None, :]).sum(-1)  # [batch, head, q_row]
    mean = (mass * valid[:, None, :]).sum(-1) / counts.clamp(min=1)[:, None]
    recorder = spec.recorder
    recorder.mass[layer] = mean.detach().cpu()
    recorder.calls += 1
    if spec.keep_rows:
        recorder.rows[layer] = (probs * valid[:, None, :, None]).detach().cpu()
        recorder.row_positions[layer] = torch.where(valid, idx + offset, -1).cpu()
    if spec.keep_mean:
        total = (probs * valid[:, None, :, None]).sum(2)  # [batch, head, k_pos]
        recorder.mean_row[layer] = (total / counts.clamp(min=1)[:, None, None]).detach().cpu()


def _fit(mask: torch.Tensor, length: int) -> torch.Tensor:
    """Crop or right-pad (with False) a (B, S) bool mask to ``length`` positions."""
    import torch

    mask = mask.bool()
    if mask.shape[1] >= length:
        return mask[:, :length]
    pad = torch.zeros(mask.shape[0], length - mask.shape[1], dtype=torch.bool, device=mask.device)
    return torch.cat([mask, pad], 1)


def _window_rows(
    windows: dict[int, Window], heads: int, q_pos: torch.Tensor, attention_mask, kv_len: int
) -> torch.Tensor:
    """(B, H, n, S_kv) band ∪ sink mask for the recorded rows (True for dense heads)."""
    import torch

    batch = q_pos.shape[0]
    big = kv_len + 1
    device = q_pos.device
    size = torch.tensor(
        [windows[h].size if h in windows else big for h in range(heads)], device=device
    )
    sinks = torch.tensor(
        [windows[h].sinks if h in windows else 0 for h in range(heads)], device=device
    )
    k_pos = torch.arange(kv_len, device=q_pos.device)
    rel = q_pos[:, None, :, None] - k_pos  # [batch, 1, n, kv]
    band = rel < size.view(1, heads, 1, 1)
    start = first_real(attention_mask, batch, q_pos.device).view(batch, 1, 1, 1)
    return band | (k_pos < start + sinks.view(1, heads, 1, 1))
