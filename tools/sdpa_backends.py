"""Times torch's attention backends on the attention-block benchmark shapes
(flash, cuDNN, memory-efficient, and what F.scaled_dot_product_attention
picks by itself), to explain where nvfuse's sdpfa_fwd (flash, by its API)
stands against eager and torch.compile. Run on a GPU:

    python3 tools/sdpa_backends.py
"""

import torch
import torch.nn.functional as F
from torch.nn.attention import SDPBackend, sdpa_kernel


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
        for backend in (
            SDPBackend.FLASH_ATTENTION,
            SDPBackend.CUDNN_ATTENTION,
            SDPBackend.EFFICIENT_ATTENTION,
        ):
            try:
                with sdpa_kernel(backend):
                    row[backend.name.lower()] = median_us(
                        lambda: F.scaled_dot_product_attention(q, k, v, is_causal=True)
                    )
            except RuntimeError as e:
                row[backend.name.lower()] = f"n/a ({str(e)[:40]})"
        print(name, {k: (round(v, 1) if isinstance(v, float) else v) for k, v in row.items()})


if __name__ == "__main__":
    main()
