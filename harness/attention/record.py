"""Observation without changing outputs: attention-mass recording (RAM) and state capture.

:class:`AttentionRecorder` receives, per decoder layer, the post-softmax attention mass of
chosen query rows on chosen key columns, computed from logits for those rows only
(B, H, n_q, S_kv) — never S × S. :func:`capture_states` records the three residual-stream
states of each decoder layer (block input, after attention, after FFN) from inside the layer,
so Qwen3-VL's DeepStack additions (made between layers) land in the next layer's input.
"""

from __future__ import annotations

from collections.abc import Iterator, Sequence
from contextlib import contextmanager
from dataclasses import dataclass, field
from typing import TYPE_CHECKING, Any

from harness.attention.window import first_real, full_bool_mask, masked_softmax

if TYPE_CHECKING:
    import torch

    from harness.attention.plan import RecordSpec, Window

__all__ = ["AttentionRecorder", "StateCapture", "capture_states", "record_attention"]


class AttentionRecorder:
    """Per-layer results of a :class:`~harness.attention.plan.RecordSpec` (float32, CPU).

    Attributes:
        mass: layer → (B, H) mean over the query rows of the attention mass on the key columns.
        rows: layer → (B, H, n_q, S_kv) full row distributions (only with ``keep_rows``);
            rows beyond a sample's own query count are zero.
        row_positions: layer → (B, n_q) absolute query positions (−1 = padding entry).
        calls: Number of layer calls recorded.
    """

    def __init__(self) -> None:
        self.mass: dict[int, torch.Tensor] = {}
        self.rows: dict[int, torch.Tensor] = {}
        self.row_positions: dict[int, torch.Tensor] = {}
        self.calls = 0

    def clear(self) -> None:
        """Forget everything recorded."""
        self.mass.clear()
        self.rows.clear()
        self.row_positions.clear()
        self.calls = 0

    def matrix(self, num_layers: int) -> torch.Tensor:
        """(B, L, H) stacked masses; layers never recorded are NaN."""
        import torch

        if not self.mass:
            raise ValueError("nothing recorded")
        ref = next(iter(self.mass.values()))
        out = torch.full((ref.shape[0], num_layers, ref.shape[1]), float("nan"))
        for layer, value in self.mass.items():
            out[:, layer] = value
        return out


def record_attention(
    spec: RecordSpec,
    layer: int,
    query: torch.Tensor,
    key: torch.Tensor,
    attention_mask: torch.Tensor | None,
    scale: float,
    windows: dict[int, Window],
) -> None:
    """Compute and store one layer's record (skips calls that lack the requested rows).

    The recorded attention is the head's learned attention (before ablation or priors), with
    its sliding window applied when the head is windowed in this call.
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
    probs = masked_softmax(logits.float(), mask)
    cols = _fit(spec.key_mask, kv_len).to(query.device, torch.float32)
    mass = (probs * cols[:, None, None, :]).sum(-1)  # [batch, head, q_row]
    mean = (mass * valid[:, None, :]).sum(-1) / counts.clamp(min=1)[:, None]
    recorder = spec.recorder
    recorder.mass[layer] = mean.detach().cpu()
    recorder.calls += 1
    if spec.keep_rows:
        recorder.rows[layer] = (probs * valid[:, None, :, None]).detach().cpu()
        recorder.row_positions[layer] = torch.where(valid, idx + offset, -1).cpu()


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
    size = torch.tensor([windows[h].size if h in windows else big for h in range(heads)])
    sinks = torch.tensor([windows[h].sinks if h in windows else 0 for h in range(heads)])
    size, sinks = size.to(q_pos.device), sinks.to(q_pos.device)
    k_pos = torch.arange(kv_len, device=q_pos.device)
    rel = q_pos[:, None, :, None] - k_pos  # [batch, 1, n, kv]
    band = rel < size.view(1, heads, 1, 1)
    start = first_real(attention_mask, batch, q_pos.device).view(batch, 1, 1, 1)
    return band | (k_pos < start + sinks.view(1, heads, 1, 1))


@dataclass
class StateCapture:
    """Residual-stream states per decoder layer, float32 on CPU, (B, S or P, hidden).

    Attributes:
        inputs: layer → block input.
        post_attn: layer → input + attention update (input of ``post_attention_layernorm``).
        post_ffn: layer → block output (input + attention + FFN).
        calls: Number of forwards seen (only the first is kept when ``first_call_only``).
    """

    inputs: dict[int, Any] = field(default_factory=dict)
    post_attn: dict[int, Any] = field(default_factory=dict)
    post_ffn: dict[int, Any] = field(default_factory=dict)
    calls: int = 0

    def delta_attn(self, layer: int) -> Any:
        """ΔX_attn = post_attn − input."""
        return self.post_attn[layer] - self.inputs[layer]

    def delta_ffn(self, layer: int) -> Any:
        """ΔX_ffn = post_ffn − post_attn."""
        return self.post_ffn[layer] - self.post_attn[layer]


@contextmanager
def capture_states(
    model: Any,
    layers: Sequence[int] | None = None,
    positions: Sequence[int] | Any | None = None,
    first_call_only: bool = True,
) -> Iterator[StateCapture]:
    """Capture block input / post-attention / post-FFN states of decoder layers.

    Args:
        model: A model with ``model.language_model.layers`` (or another layout known to
            :func:`harness.attention.dispatch.decoder_layers`).
        layers: Layer indices (default all).
        positions: Sequence positions to keep (1-D, same for every sample); default all.
        first_call_only: Keep only the first forward (the prefill under ``generate``).

    Yields:
        The :class:`StateCapture` being filled; hooks are removed on exit, even on error.
    """
    from harness.attention.dispatch import decoder_layers

    blocks = decoder_layers(model)
    chosen = range(len(blocks)) if layers is None else layers
    cap = StateCapture()
    handles = []

    def keep(store: dict[int, Any], layer: int, tensor: Any) -> None:
        if first_call_only and layer in store:
            return
        if positions is not None:
            import torch

            tensor = tensor[:, torch.as_tensor(positions, device=tensor.device)]
        store[layer] = tensor.detach().float().cpu()

    def first_arg(args: tuple, kwargs: dict) -> Any:
        return args[0] if args else kwargs["hidden_states"]

    for layer in chosen:
        block = blocks[layer]

        def pre(_m, args, kwargs, layer=layer):
            if layer == min(chosen):
                cap.calls += 1
            keep(cap.inputs, layer, first_arg(args, kwargs))

        def mid(_m, args, layer=layer):
            keep(cap.post_attn, layer, args[0])

        def post(_m, _args, output, layer=layer):
            keep(cap.post_ffn, layer, output[0] if isinstance(output, tuple) else output)

        handles.append(block.register_forward_pre_hook(pre, with_kwargs=True))
        handles.append(block.post_attention_layernorm.register_forward_pre_hook(mid))
        handles.append(block.register_forward_hook(post))
    try:
        yield cap
    finally:
        for handle in handles:
            handle.remove()
