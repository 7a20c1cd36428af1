// Expr kinds that run as ATen calls (cuBLAS, flash attention) rather than
// generated code: matmul, linear, grouped matmul and scaled-dot-product
// flash attention.
#pragma once

#include "ir/exprs.h"

namespace nvfuse {

// torch.matmul(a, b), including its 1-D and batched-broadcast rules.
class MatmulOp : public Expr {
 public:
  NVFUSE_EXPR_BOILERPLATE(MatmulOp)
};

// torch.nn.functional.linear(in, weight[, bias]): in @ weight.T + bias.
class LinearOp : public Expr {
 public:
  NVFUSE_EXPR_BOILERPLATE(LinearOp)
  bool has_bias() const { return inputs().size() == 3; }
};

// torch._grouped_mm(a, b, offsets): one GEMM per group, the groups cut
// along one axis at the Int32 end positions `offsets` [G]. a [M, K] with
// b [G, K, N] cuts M (-> [M, N]); a [G, M, K] with b [K, N] cuts N
// (-> [M, N]); a [M, K] with b [K, N] cuts K (-> [G, M, N]).
class GroupedMmOp : public Expr {
 public:
  NVFUSE_EXPR_BOILERPLATE(GroupedMmOp)
};

// Flash attention forward, as torch's _scaled_dot_product_flash_attention:
// inputs query [N, H, L, E], key [N, H, S, E], value [N, H, S, E],
// dropout_p (Double), is_causal (Bool), then scale (Double) when given;
// outputs the attention [N, H, L, E], logsumexp [N, H, L] (Float), and the
// dropout RNG state that the backward replays: philox_seed [2] and
// philox_offset [] (UInt64 tensors, as torch's kernel returns them).
class SdpaFwdOp : public Expr {
 public:
  NVFUSE_EXPR_BOILERPLATE(SdpaFwdOp)
  bool has_scale() const { return inputs().size() == 6; }
};

// Flash attention backward: inputs grad_output, query, key, value, output,
// logsumexp, dropout_p, is_causal, philox_seed, philox_offset, then scale
// when given; outputs grad_query, grad_key, grad_value.
class SdpaBwdOp : public Expr {
 public:
  NVFUSE_EXPR_BOILERPLATE(SdpaBwdOp)
  bool has_scale() const { return inputs().size() == 11; }
};

}  // namespace nvfuse
