"""The L2 flush run before every timed call of the benchmarks and tuning
tools, so that no input is read from L2.

A plain read of a buffer larger than L2 does not evict everything: lines
loaded with the evict_last L2 policy (Triton's `eviction_policy=
"evict_last"`, which torch.compile puts on loads it expects to re-read)
outlive it. Measured on an H100 (RoPE bf16 64 MB,
`docs/measurements/l2_flush_evict_last_h100.txt`): after one torch.compile call had
loaded q with evict_last, nvfuse's kernel timed 41.8-42.2 us behind the
plain read flush, against 43.8-44.5 us from a cold L2. It stayed so through
180 rounds and a 5 s pause, and went back only after 1 s of back-to-back
plain flushes (about 12000). Whichever executor ran after torch.compile was
timed partly from L2, torch.compile itself included (0.3-0.5 us).

So the default flush ("read") reads the buffer twice: first with
evict_last, whose lines take the place of every line left in L2, evict_last
ones included, then plainly. The timed kernel starts from an L2 that holds
only clean lines of a buffer it never reads; those lines measured as no
hindrance (cross-entropy forward 64 MB, fp32 25.9 us against 25.8 behind
the plain read, bf16 26.2 against 26.3; RoPE bf16 from a cold start 44.3
against 44.3).

Tried and left out: dropping the buffer's lines after the evict_last read
(`discard.global.L2`), for an empty L2 as under Nsight Compute's cache
control. nvfuse's kernels timed as before, but several of torch.compile's
Triton kernels ran up to 2.6x slower after it (softmax backward bf16
8192x4096 61.3 -> 108.7 us, RoPE bf16 64 MB 44.5 -> 64.0, cross-entropy
forward fp32 64 MB 35.1 -> 92.5): not a state a real run is ever in.
"""

import os

import torch

L2_FLUSH_BYTES = 256 * 1024 * 1024  # well above the H100/H200 L2 (50-60 MB)
_BLOCK = 4096  # floats an evict_last-read program reads


def _evict_last_read_kernel():
    # Imported here: triton comes with torch's CUDA wheels, and only a GPU
    # run needs it.
    import triton
    import triton.language as tl

    @triton.jit
    def evict_last_read(src, partial_sums, numel, BLOCK: tl.constexpr):
        program = tl.program_id(0)
        offsets = program * BLOCK + tl.arange(0, BLOCK)
        values = tl.load(
            src + offsets, mask=offsets < numel, other=0.0, eviction_policy="evict_last"
        )
        # stored, so that the load is not dead code
        tl.store(partial_sums + program, tl.sum(values, 0))

    return evict_last_read


def make_l2_flush(method=None):
    """A function that evicts the L2 cache, to run before each timed call.

    "read" (default): an evict_last read, then a plain read, of a buffer
    larger than L2 (see the module docstring); it leaves clean lines only.
    "plain-read" is the read flush used from 2026-11-22 to 2026-11-23,
    without the evict_last read. "write" (NVFUSE_L2_FLUSH=write; the method
    until 2026-11-22) zeroes the buffer instead, which leaves ~50 MB of
    dirty lines that the timed kernel writes back as it reads: at 64 MB
    that is the flush's traffic billed to the kernel (cross-entropy forward
    bf16: 29.2 us under ncu, 35.4 us timed so), while the 1 GiB copy it is
    compared with pays it 2.5%."""
    method = method or os.environ.get("NVFUSE_L2_FLUSH", "read")
    if method not in ("read", "plain-read", "write"):
        raise ValueError(f"NVFUSE_L2_FLUSH must be 'read', 'plain-read' or 'write', got {method!r}")
    buffer = torch.zeros(L2_FLUSH_BYTES // 4, dtype=torch.float32, device="cuda")
    total = torch.empty((), dtype=torch.float32, device="cuda")
    programs = (buffer.numel() + _BLOCK - 1) // _BLOCK
    partial_sums = torch.empty(programs, dtype=torch.float32, device="cuda")
    evict_last_read = _evict_last_read_kernel() if method == "read" else None

    def flush():  # returns None: pytest-benchmark's setup must
        if method == "write":
            buffer.zero_()
            return
        if evict_last_read is not None:
            evict_last_read[(programs,)](buffer, partial_sums, buffer.numel(), BLOCK=_BLOCK)
        torch.sum(buffer, dim=0, out=total)

    return flush
