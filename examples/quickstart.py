"""Define a fusion once, run it on torch tensors, check it against torch.

Runs on the GPU when there is one, else on the CPU reference path.
"""

import torch

from nvfuse import DataType, FusionDefinition

device = "cuda" if torch.cuda.is_available() else "cpu"

# bias + tanh-GELU on a bf16 activation, computed in fp32.
with FusionDefinition() as fd:
    x = fd.define_tensor(shape=[-1, -1], contiguity=True, dtype=DataType.BFloat16)
    bias = fd.define_tensor(shape=[-1], contiguity=True, dtype=DataType.BFloat16)
    h = fd.ops.cast(x, DataType.Float) + fd.ops.cast(bias, DataType.Float)
    inner = 0.7978845608028654 * (h + 0.044715 * h * h * h)
    gelu = 0.5 * h * (1.0 + fd.ops.tanh(inner))
    fd.add_output(fd.ops.cast(gelu, DataType.BFloat16))

activation = torch.randn(1024, 4096, device=device, dtype=torch.bfloat16)
bias_values = torch.randn(4096, device=device, dtype=torch.bfloat16)
(out,) = fd.execute([activation, bias_values])

expected = torch.nn.functional.gelu(
    activation.float() + bias_values.float(), approximate="tanh"
).bfloat16()
torch.testing.assert_close(out, expected, rtol=1.6e-2, atol=1e-2)

print(fd)  # the definition, as a runnable repro script
print(
    f"ran on {out.device}: output {tuple(out.shape)} {out.dtype}, "
    f"max |nvfuse - torch| = {(out.float() - expected.float()).abs().max().item():.4f}"
)
