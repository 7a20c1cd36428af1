"""Under load, on a GPU: threads executing distinct and shared definitions
for a while, every result checked, and many executes of one definition with
device memory and host RSS required flat.

    python3 tools/load_check.py [--threads 8] [--seconds 60] [--executes 100000]

Prints one line per check and exits non-zero on a wrong result or growth.
"""

import argparse
import resource
import sys
import threading
import time

import torch

from nvfuse import FusionDefinition


def scale_and_sum(factor):
    with FusionDefinition() as fd:
        t = fd.define_tensor(shape=[-1, -1], contiguity=True)
        fd.add_output(fd.ops.sum(fd.ops.mul(t, float(factor)), dims=[1]))
        fd.add_output(fd.ops.relu(fd.ops.sub(t, float(factor))))
    return fd


def threads_check(threads, seconds):
    """Every thread runs a definition of its own and the shared ones."""
    shared = [scale_and_sum(k + 1) for k in range(4)]
    own = [scale_and_sum(100 + k) for k in range(threads)]
    x = torch.randn(128, 513, device="cuda")
    wrong, calls = [], [0] * threads
    deadline = time.monotonic() + seconds

    def work(index):
        stream = torch.cuda.Stream()
        with torch.cuda.stream(stream):
            while time.monotonic() < deadline:
                for factor, fd in [(index + 100, own[index])] + list(enumerate(shared, 1)):
                    total, shifted = fd.execute([x])
                    ok = torch.allclose(
                        total, (x * factor).sum(1), rtol=1e-4, atol=1e-3
                    ) and torch.equal(shifted, (x - factor).relu())
                    if not ok:
                        wrong.append((index, factor))
                    calls[index] += 1
            stream.synchronize()

    pool = [threading.Thread(target=work, args=(i,)) for i in range(threads)]
    for t in pool:
        t.start()
    for t in pool:
        t.join()
    print(
        f"threads: {threads} threads, {sum(calls)} executes in {seconds} s, "
        f"{len(wrong)} wrong results"
    )
    return not wrong


def memory_check(executes):
    fd = scale_and_sum(3)
    x = torch.randn(64, 256, device="cuda")
    for _ in range(1000):  # warm: compile, caching-allocator pools
        fd.execute([x])
    torch.cuda.synchronize()
    device_before = torch.cuda.memory_allocated()
    rss_before = resource.getrusage(resource.RUSAGE_SELF).ru_maxrss
    start = time.perf_counter()
    for _ in range(executes):
        fd.execute([x])
    torch.cuda.synchronize()
    elapsed = time.perf_counter() - start
    device_after = torch.cuda.memory_allocated()
    rss_after = resource.getrusage(resource.RUSAGE_SELF).ru_maxrss
    grew_kb = rss_after - rss_before
    print(
        f"memory: {executes} executes in {elapsed:.1f} s ({elapsed / executes * 1e6:.1f} us "
        f"each); device memory {device_before} -> {device_after} bytes; max RSS +{grew_kb} KB"
    )
    return device_after == device_before and grew_kb < 20 * 1024


def main():
    parser = argparse.ArgumentParser()
    parser.add_argument("--threads", type=int, default=8)
    parser.add_argument("--seconds", type=float, default=60)
    parser.add_argument("--executes", type=int, default=100000)
    args = parser.parse_args()
    ok = threads_check(args.threads, args.seconds)
    ok = memory_check(args.executes) and ok
    return 0 if ok else 1


if __name__ == "__main__":
    sys.exit(main())
