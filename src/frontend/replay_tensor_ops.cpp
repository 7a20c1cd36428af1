// replay_record for the shape, indexing, creation, matmul and sort ops:
// unpacks the record's arguments and calls the op constructor, which validates them.
#include "frontend/replayer.h"
#include "ops/attention.h"
#include "ops/creation.h"
#include "ops/indexing.h"
#include "ops/matmul.h"
#include "ops/shape.h"
#include "ops/sort.h"

namespace nvfuse {

Scalar* Replayer::scalar_operand(const ArgValue& arg, const char* what) const {
  if (const auto* literal = std::get_if<int64_t>(&arg)) {
    return fusion_.index_constant(*literal);
  }
  const auto* ref = std::get_if<StateRef>(&arg);
  NVFUSE_TYPE_CHECK(ref != nullptr, what, " must be a scalar");
  const auto* s = std::get_if<Scalar*>(&state(*ref));
  NVFUSE_TYPE_CHECK(s != nullptr, what, " must be a scalar, got ", ref->name());
  return *s;
}

const ArgValue* Replayer::optional_arg(const std::string& keyword) const {
  const ArgValue* value = record_.find(keyword);
  if (value == nullptr || std::holds_alternative<std::monostate>(*value)) {
    return nullptr;
  }
  return value;
}

std::vector<TensorView*> Replayer::tensors(const ArgValue& arg, const char* what) const {
  const auto* refs = std::get_if<std::vector<StateRef>>(&arg);
  NVFUSE_TYPE_CHECK(refs != nullptr, what, " must be a list of tensors");
  std::vector<TensorView*> result;
  for (const StateRef& ref : *refs) {
    result.push_back(tensor(ref, what));
  }
  return result;
}

std::vector<StateValue> Replayer::shape_op() {
  TensorView* in =
      record_.kind == RecordKind::Cat ? nullptr : tensor(record_.positional(0), "the operand");
  switch (record_.kind) {
    case RecordKind::Reshape:
      return {reshape(in, shape(*record_.find("new_shape")))};
    case RecordKind::Permute:
      return {permute(in, record_.get<std::vector<int64_t>>("dims"))};
    case RecordKind::Squeeze:
      return {squeeze(in, record_.get<std::vector<int64_t>>("dims"))};
    case RecordKind::Slice: {
      std::vector<Scalar*> steps;
      if (const ArgValue* strides = optional_arg("strides")) {
        steps = shape(*strides);
      } else {
        steps.assign(in->rank(), fusion_.one());
      }
      return {slice(
          in, shape(*record_.find("start_indices")), shape(*record_.find("end_indices")), steps)};
    }
    case RecordKind::Pad: {
      const ArgValue* value = optional_arg("value");
      Scalar* fill = value != nullptr ? scalar_operand(*value, "pad: value")
                                      : fusion_.constant(ScalarValue(int64_t{0}), in->dtype());
      return {pad(in, shape(*record_.find("pad_widths")), fill)};
    }
    case RecordKind::Cat:
      return {cat(tensors(record_.positional(0), "cat: tensors"), record_.get<int64_t>("dim"))};
    default:
      NVFUSE_ASSERT(false, record_.method(), " is not a shape op");
      return {};
  }
}

std::vector<StateValue> Replayer::indexing_op() {
  TensorView* in = tensor(record_.positional(0), "the operand");
  const auto index_tensor = [&] { return tensor(*record_.find("index"), "index"); };
  switch (record_.kind) {
    case RecordKind::Select:
      return {select(in, scalar_operand(*record_.find("index"), "select: index"),
          record_.get<int64_t>("dim"))};
    case RecordKind::IndexSelect:
      return {index_select(in, index_tensor(), record_.get<int64_t>("dim"))};
    case RecordKind::Gather:
      return {gather(in, index_tensor(), record_.get<int64_t>("dim"))};
    case RecordKind::TakeAlongAxis:
      return {take_along_axis(in, index_tensor(), record_.get<int64_t>("dim"))};
    case RecordKind::Scatter:
      return {scatter(in, index_tensor(), tensor(*record_.find("src"), "scatter: src"),
          record_.get<int64_t>("dim"))};
    case RecordKind::IndexPutAccumulate:
      return {index_put_accumulate(in, tensor(record_.positional(1), "index_put_accumulate: index"),
          tensor(record_.positional(2), "index_put_accumulate: value"))};
    case RecordKind::EmbeddingFwd: {
      NVFUSE_CHECK_AS(ErrorKind::kUnsupported, optional_arg("max_norm") == nullptr,
          "embedding_fwd: max_norm renormalizes the weight in place, which "
          "nvfuse does not do; renormalize the weight before the fusion");
      const ArgValue* sparse = optional_arg("sparse");
      NVFUSE_CHECK_AS(ErrorKind::kUnsupported, sparse == nullptr || !std::get<bool>(*sparse),
          "embedding_fwd: sparse=True only changes the gradient's layout; "
          "nvfuse computes the forward only, pass sparse=False");
      return {embedding_fwd(in, tensor(record_.positional(1), "embedding_fwd: weight"))};
    }
    case RecordKind::Triu: {
      const ArgValue* diagonal = optional_arg("diagonal");
      return {triu(in,
          diagonal != nullptr ? scalar_operand(*diagonal, "triu: diagonal")
                              : fusion_.index_constant(0))};
    }
    case RecordKind::Cumsum:
      return {cumsum(in, record_.get<int64_t>("dim"))};
    default:
      NVFUSE_ASSERT(false, record_.method(), " is not an indexing op");
      return {};
  }
}

std::vector<StateValue> Replayer::creation_op() {
  RngSeed seed;
  seed.seed = optional_scalar("rng_seed", "rng_seed");
  seed.offset = optional_scalar("rng_offset", "rng_offset");
  switch (record_.kind) {
    case RecordKind::Full:
      return {full(shape(*record_.find("shape")),
          scalar_operand(*record_.find("fill_value"), "full: fill_value"),
          record_.get<DataType>("dtype"))};
    case RecordKind::Iota:
      return {iota(scalar_operand(record_.positional(0), "iota: length"),
          optional_scalar("start", "iota: start"), optional_scalar("step", "iota: step"),
          record_.get<DataType>("dtype"))};
    case RecordKind::Uniform:
    case RecordKind::Normal: {
      Scalar* a = scalar_operand(record_.positional(0), "the first parameter");
      Scalar* b = scalar_operand(record_.positional(1), "the second parameter");
      const auto& sizes = shape(*record_.find("shape"));
      const DataType dtype = record_.get<DataType>("dtype");
      return {record_.kind == RecordKind::Uniform ? uniform(a, b, sizes, seed, dtype)
                                                  : normal(a, b, sizes, seed, dtype)};
    }
    case RecordKind::RandLike:
      return {rand_like(tensor(record_.positional(0), "rand_like: arg"), seed)};
    case RecordKind::RandnLike:
      return {randn_like(tensor(record_.positional(0), "randn_like: arg"), seed)};
    default:
      NVFUSE_ASSERT(false, record_.method(), " is not a creation op");
      return {};
  }
}

std::vector<StateValue> Replayer::matmul_op() {
  TensorView* a = tensor(record_.positional(0), "the first operand");
  TensorView* b = tensor(record_.positional(1), "the second operand");
  if (record_.kind == RecordKind::Matmul) {
    return {matmul(a, b)};
  }
  if (record_.kind == RecordKind::GroupedMm) {
    return {grouped_mm(a, b, tensor(record_.positional(2), "grouped_mm: offsets"))};
  }
  const ArgValue* bias = optional_arg("bias");
  return {linear(a, b, bias != nullptr ? tensor(*bias, "linear: bias") : nullptr)};
}

Scalar* Replayer::optional_scalar(const std::string& keyword, const char* what) const {
  const ArgValue* value = optional_arg(keyword);
  return value == nullptr ? nullptr : scalar_operand(*value, what);
}

std::vector<StateValue> Replayer::attention_op() {
  const auto operand = [this](size_t i, const char* what) {
    return tensor(record_.positional(i), what);
  };
  if (record_.kind == RecordKind::SdpfaFwd) {
    SdpfaFwdResult r = sdpfa_fwd(operand(0, "sdpfa_fwd: query"), operand(1, "sdpfa_fwd: key"),
        operand(2, "sdpfa_fwd: value"), optional_scalar("dropout_p", "sdpfa_fwd: dropout_p"),
        optional_scalar("is_causal", "sdpfa_fwd: is_causal"),
        optional_scalar("scale", "sdpfa_fwd: scale"));
    return {r.output, r.log_sumexp, r.philox_seed, r.philox_offset};
  }
  SdpfaBwdResult r = sdpfa_bwd(operand(0, "sdpfa_bwd: grad_output"), operand(1, "sdpfa_bwd: query"),
      operand(2, "sdpfa_bwd: key"), operand(3, "sdpfa_bwd: value"), operand(4, "sdpfa_bwd: output"),
      operand(5, "sdpfa_bwd: log_sumexp"), optional_scalar("dropout_p", "sdpfa_bwd: dropout_p"),
      optional_scalar("is_causal", "sdpfa_bwd: is_causal"),
      tensor(*record_.find("philox_seed"), "sdpfa_bwd: philox_seed"),
      tensor(*record_.find("philox_offset"), "sdpfa_bwd: philox_offset"),
      optional_scalar("scale", "sdpfa_bwd: scale"));
  return {r.grad_query, r.grad_key, r.grad_value};
}

std::vector<StateValue> Replayer::sort_op() {
  if (record_.kind == RecordKind::Topk) {
    auto [values, indices] = topk(tensor(record_.positional(0), "topk: arg"),
        scalar_operand(*record_.find("k"), "topk: k"), record_.get<int64_t>("dim"),
        record_.get<bool>("largest"), record_.get<bool>("sorted"));
    return {values, indices};
  }
  return {argsort(tensor(record_.positional(0), "argsort: arg"), record_.get<int64_t>("dim"),
      record_.get<bool>("descending"), record_.get<bool>("stable"))};
}

}  // namespace nvfuse
