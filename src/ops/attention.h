// Scaled-dot-product flash attention, forward and backward, with the
// predecessor's signatures (sdpfa_fwd / sdpfa_bwd); both run as ATen calls
// into torch's flash-attention kernels.
#pragma once

#include "ir/tensor_view.h"

namespace nvfuse {

struct SdpfaFwdResult {
  TensorView* output;
  TensorView* log_sumexp;
  TensorView* philox_seed;
  TensorView* philox_offset;
};

struct SdpfaBwdResult {
  TensorView* grad_query;
  TensorView* grad_key;
  TensorView* grad_value;
};

// dropout_p and is_causal may be nullptr (0.0 and false); scale may be
// nullptr (1 / sqrt(E)).
SdpfaFwdResult sdpfa_fwd(TensorView* query, TensorView* key, TensorView* value, Scalar* dropout_p,
    Scalar* is_causal, Scalar* scale);

SdpfaBwdResult sdpfa_bwd(TensorView* grad_output, TensorView* query, TensorView* key,
    TensorView* value, TensorView* output, TensorView* log_sumexp, Scalar* dropout_p,
    Scalar* is_causal, TensorView* philox_seed, TensorView* philox_offset, Scalar* scale);

}  // namespace nvfuse
