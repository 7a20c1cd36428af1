#include "ops/attention.h"

#include "ir/fusion.h"
#include "ir/matmul_exprs.h"
#include "ops/new_axes.h"

namespace nvfuse {

namespace {

// Flash attention takes [N, H, L, E] Half or BFloat16 tensors (torch's CUDA
// kernels have no Float path).
void check_attention_operand(
    const TensorView* tv, const char* op, const char* what, DataType dtype) {
  NVFUSE_TYPE_CHECK(tv->dtype() == DataType::Half || tv->dtype() == DataType::BFloat16, op, ": ",
      what, " must be Half or BFloat16 (flash attention), got ", tv->dtype());
  NVFUSE_TYPE_CHECK(tv->dtype() == dtype, op, ": ", what, " has dtype ", tv->dtype(),
      " but the query has ", dtype);
  NVFUSE_CHECK(tv->rank() == 4, op, ": ", what,
      " must be 4-D [batch, heads, sequence, head_dim], got rank ", tv->rank());
}

void check_scalar(const Scalar* s, const char* op, const char* what, bool boolean) {
  if (s == nullptr) {
    return;
  }
  NVFUSE_TYPE_CHECK(boolean ? is_boolean(s->dtype()) : is_floating(s->dtype()), op, ": ", what,
      " must be a ", boolean ? "Bool" : "floating-point", " scalar, got ", s->dtype());
}

// query, key and value agree on batch, heads and head_dim; key and value
// on the sequence length.
void require_attention_shapes(
    const TensorView* q, const TensorView* k, const TensorView* v, Val* result, const char* op) {
  const auto extent = [](const TensorView* tv, int i) {
    return tv->logical()[i]->logical_extent();
  };
  require_same_extent(extent(q, 0), extent(k, 0), result, op, "query and key batch sizes differ");
  require_same_extent(extent(q, 0), extent(v, 0), result, op, "query and value batch sizes differ");
  require_same_extent(extent(q, 1), extent(k, 1), result, op, "query and key head counts differ");
  require_same_extent(extent(q, 1), extent(v, 1), result, op, "query and value head counts differ");
  require_same_extent(
      extent(k, 2), extent(v, 2), result, op, "key and value sequence lengths differ");
  require_same_extent(extent(q, 3), extent(k, 3), result, op, "query and key head dims differ");
  require_same_extent(extent(q, 3), extent(v, 3), result, op,
      "query and value head dims differ (flash attention "
      "needs one head dim)");
}

// The RNG-state tensors of torch's flash attention: UInt64, as torch's
// kernel returns them (and the predecessor, and Thunder's meta functions,
// with torch 2.7 and later).
TensorView* rng_state_tensor(Fusion* fusion, int64_t length) {
  std::vector<IterDomain*> axes;
  if (length > 0) {
    axes.push_back(axis_of_extent(fusion, fusion->index_constant(length)));
  }
  return tensor_of_axes(fusion, std::move(axes), DataType::UInt64);
}

// A backward's RNG state is the forward's (UInt64) or, as scripts for
// torch before 2.7 spell it, Int; a fusion input or the forward's output.
bool is_rng_state(const TensorView* tv) {
  return (tv->dtype() == DataType::UInt64 || tv->dtype() == DataType::Int) && tv->rank() <= 1;
}

std::vector<Val*> defaulted_flags(Fusion* fusion, Scalar* dropout_p, Scalar* is_causal) {
  return {dropout_p != nullptr ? dropout_p : fusion->constant(0.0, DataType::Double),
      is_causal != nullptr ? is_causal : fusion->constant(false, DataType::Bool)};
}

// The operands both directions take: query, key, value and the flags.
void check_common_operands(TensorView* query, TensorView* key, TensorView* value, Scalar* dropout_p,
    Scalar* is_causal, Scalar* scale, const char* op) {
  check_attention_operand(query, op, "query", query->dtype());
  check_attention_operand(key, op, "key", query->dtype());
  check_attention_operand(value, op, "value", query->dtype());
  check_scalar(dropout_p, op, "dropout_p", false);
  check_scalar(is_causal, op, "is_causal", true);
  check_scalar(scale, op, "scale", false);
}

}  // namespace

SdpfaFwdResult sdpfa_fwd(TensorView* query, TensorView* key, TensorView* value, Scalar* dropout_p,
    Scalar* is_causal, Scalar* scale) {
  const char* op = "sdpfa_fwd";
  check_common_operands(query, key, value, dropout_p, is_causal, scale, op);
  Fusion* fusion = query->fusion();
  TensorView* output = new_tensor_like_axes(fusion, query->logical(), query->dtype());
  const auto& q = query->logical();
  TensorView* log_sumexp = new_tensor_like_axes(fusion, {q[0], q[1], q[2]}, DataType::Float);
  require_attention_shapes(query, key, value, output, op);
  std::vector<Val*> inputs = {query, key, value};
  for (Val* flag : defaulted_flags(fusion, dropout_p, is_causal)) {
    inputs.push_back(flag);
  }
  if (scale != nullptr) {
    inputs.push_back(scale);
  }
  SdpfaFwdResult result{
      output, log_sumexp, rng_state_tensor(fusion, 2), rng_state_tensor(fusion, 0)};
  fusion->create<SdpaFwdOp>(ExprFields{std::move(inputs),
      {result.output, result.log_sumexp, result.philox_seed, result.philox_offset}, {}});
  return result;
}

SdpfaBwdResult sdpfa_bwd(TensorView* grad_output, TensorView* query, TensorView* key,
    TensorView* value, TensorView* output, TensorView* log_sumexp, Scalar* dropout_p,
    Scalar* is_causal, TensorView* philox_seed, TensorView* philox_offset, Scalar* scale) {
  const char* op = "sdpfa_bwd";
  check_common_operands(query, key, value, dropout_p, is_causal, scale, op);
  check_attention_operand(grad_output, op, "grad_output", query->dtype());
  check_attention_operand(output, op, "output", query->dtype());
  NVFUSE_TYPE_CHECK(log_sumexp->dtype() == DataType::Float && log_sumexp->rank() == 3, op,
      ": log_sumexp must be the Float [batch, heads, sequence] tensor that "
      "sdpfa_fwd returns, got ",
      log_sumexp->dtype(), " of rank ", log_sumexp->rank());
  NVFUSE_TYPE_CHECK(is_rng_state(philox_seed) && is_rng_state(philox_offset), op,
      ": philox_seed and philox_offset must be UInt64 (or Int) tensors of rank 0 or 1, as "
      "sdpfa_fwd returns them, got ",
      philox_seed->dtype(), " of rank ", philox_seed->rank(), " and ", philox_offset->dtype(),
      " of rank ", philox_offset->rank());
  Fusion* fusion = query->fusion();
  SdpfaBwdResult result{new_tensor_like_axes(fusion, query->logical(), query->dtype()),
      new_tensor_like_axes(fusion, key->logical(), query->dtype()),
      new_tensor_like_axes(fusion, value->logical(), query->dtype())};
  require_attention_shapes(query, key, value, result.grad_query, op);
  for (int i = 0; i < 4; ++i) {
    require_same_extent(grad_output->logical()[i]->logical_extent(),
        query->logical()[i]->logical_extent(), result.grad_query, op,
        "grad_output and query shapes differ");
    require_same_extent(output->logical()[i]->logical_extent(),
        query->logical()[i]->logical_extent(), result.grad_query, op,
        "output and query shapes differ");
  }
  std::vector<Val*> inputs = {grad_output, query, key, value, output, log_sumexp};
  for (Val* flag : defaulted_flags(fusion, dropout_p, is_causal)) {
    inputs.push_back(flag);
  }
  inputs.push_back(philox_seed);
  inputs.push_back(philox_offset);
  if (scale != nullptr) {
    inputs.push_back(scale);
  }
  fusion->create<SdpaBwdOp>(
      ExprFields{std::move(inputs), {result.grad_query, result.grad_key, result.grad_value}, {}});
  return result;
}

}  // namespace nvfuse
