"""Times torch's attention backends on the attention-block benchmark shapes
(flash, cuDNN, memory-efficient, and what F.scaled_dot_product_attention
picks by itself), to explain where nvfuse's sdpfa_fwd (flash, by its API)
stands against eager and torch.compile; and, for an encoder's masked
attention (BERT's bench shape), which backend torch picks for each layout
of the [batch, 1, seq, seq] mask, and why each fused backend declines the
one transformers passes (its error, whole). Run on a GPU:

    python3 tools/sdpa_backends.py
"""

import torch
import torch.nn.functional as F
from torch.nn.attention import SDPBackend, sdpa_kernel

FUSED_BACKENDS = (
    SDPBackend.FLASH_ATTENTION,
    SDPBackend.CUDNN_ATTENTION,
    SDPBackend.EFFICIENT_ATTENTION,
)


def median_us(fn, rounds=30):
    for _ in range(3):
        fn()
    times = []
    for _ in range(rounds):
        start, end = torch.cuda.Event(enable_timing=True), torch.cuda.Event(enable_timing=True)
        start.record()
        fn()
        end.record()
        end.synchronize()
        times.append(start.elapsed_time(end) * 1e3)
    return sorted(times)[len(times) // 2]


def main():
    for name, (batch, seq, heads, head_dim) in {
        "gpt2": (8, 1024, 12, 64),
        "llama": (4, 2048, 32, 128),
    }.items():
        q, k, v = (
            torch.randn(batch, heads, seq, head_dim, dtype=torch.bfloat16, device="cuda")
            for _ in range(3)
        )
        row = {
            "default": median_us(lambda: F.scaled_dot_product_attention(q, k, v, is_causal=True)),
            "flash op": median_us(
                lambda: torch.ops.aten._scaled_dot_product_flash_attention(q, k, v, 0.0, True)
            ),
        }
        for backend in FUSED_BACKENDS:
            try:
                with sdpa_kernel(backend):
                    row[backend.name.lower()] = median_us(
                        lambda: F.scaled_dot_product_attention(q, k, v, is_causal=True)
                    )
            except RuntimeError as e:
                row[backend.name.lower()] = f"n/a ({str(e)[:40]})"
        print(name, {k: (round(v, 1) if isinstance(v, float) else v) for k, v in row.items()})
    masked_encoder_choices()


def masked_encoder_choices(batch=16, seq=512, heads=12, head_dim=64):
    """BERT's attention: the backend torch picks (a torch._fused_sdp_choice
    index into SDPBackend) for each mask layout an encoder may pass, with
    requires_grad as in training, and each fused backend's reason to
    decline the layout transformers passes for an unpadded batch."""
    q, k, v = (
        torch.randn(
            batch, heads, seq, head_dim, dtype=torch.bfloat16, device="cuda"
        ).requires_grad_()
        for _ in range(3)
    )
    keep = torch.ones(batch, seq, dtype=torch.bool, device="cuda")
    masks = {
        # transformers' unpadded encoder mask: stride 0 along the keys
        "bool, expanded along the keys": keep[:, None, :, None].expand(batch, 1, seq, seq),
        "bool, padding mask over the keys": keep[:, None, None, :].expand(batch, 1, seq, seq),
        "bf16, dense": torch.zeros(batch, 1, seq, seq, dtype=torch.bfloat16, device="cuda"),
    }
    for name, mask in masks.items():
        print(f"masked encoder, {name}: choice", torch._fused_sdp_choice(q, k, v, mask))
    # SDPBackend is a pybind11 enum here: not iterable.
    names = ("ERROR", "MATH", "FLASH_ATTENTION", "EFFICIENT_ATTENTION", "CUDNN_ATTENTION")
    print("  SDPBackend:", {n: int(getattr(SDPBackend, n)) for n in names})
    mask = masks["bool, expanded along the keys"]
    for backend in FUSED_BACKENDS:
        try:
            with sdpa_kernel(backend):
                F.scaled_dot_product_attention(q, k, v, attn_mask=mask).sum().backward()
            print(f"  {backend.name}: runs")
        except RuntimeError as e:
            print(f"  {backend.name}: declines: {e}")


if __name__ == "__main__":
    main()
