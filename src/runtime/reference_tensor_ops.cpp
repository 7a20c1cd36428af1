// The reference evaluator's shape, indexing, creation, matmul and sort ops:
// each one ATen call with torch's semantics (random ops: nvfuse's Philox
// mapping, computed on the host).
#include <ATen/ATen.h>

#include <cmath>

#include "codegen/philox.cuh"
#include "runtime/reference_evaluator.h"
#include "runtime/rng_state.h"
#include "runtime/scatter_sizes.h"

namespace nvfuse {

std::vector<int64_t> ReferenceEvaluator::int_values(
    const Expr& e, size_t first, size_t count) const {
  std::vector<int64_t> values;
  for (size_t i = first; i < first + count; ++i) {
    values.push_back(scalar_of(e.input(i)).as_int());
  }
  return values;
}

at::TensorOptions ReferenceEvaluator::options_for(const Val* out) const {
  return at::TensorOptions().dtype(to_aten(out->dtype())).device(device_);
}

void ReferenceEvaluator::handle(const ReshapeOp& e) {
  tensors_[e.output(0)] = tensor_of(e.input(0)).reshape(int_values(e, 1, e.inputs().size() - 1));
}

void ReferenceEvaluator::handle(const PermuteOp& e) {
  tensors_[e.output(0)] = tensor_of(e.input(0)).permute(e.dims());
}

void ReferenceEvaluator::handle(const SqueezeOp& e) {
  at::Tensor t = tensor_of(e.input(0));
  for (int64_t d : e.dims()) {
    NVFUSE_INPUT_CHECK(t.size(d) == 1, "squeeze: axis ", d, " has size ", t.size(d),
        " in this run; only size-1 axes can be squeezed");
  }
  tensors_[e.output(0)] = t.squeeze(e.dims());
}

void ReferenceEvaluator::handle(const SliceOp& e) {
  at::Tensor t = tensor_of(e.input(0));
  for (int64_t axis = 0; axis < t.dim(); ++axis) {
    const auto bounds = int_values(e, 1 + 3 * axis, 3);
    t = t.slice(axis, bounds[0], bounds[1], bounds[2]);
  }
  tensors_[e.output(0)] = t;
}

void ReferenceEvaluator::handle(const PadOp& e) {
  at::Tensor t = tensor_of(e.input(0));
  const std::vector<int64_t> widths = int_values(e, 2, 2 * t.dim());
  // constant_pad_nd wants (before, after) of the last axis first.
  std::vector<int64_t> torch_order;
  for (int64_t axis = t.dim() - 1; axis >= 0; --axis) {
    torch_order.push_back(widths[2 * axis]);
    torch_order.push_back(widths[2 * axis + 1]);
  }
  tensors_[e.output(0)] =
      at::constant_pad_nd(t, torch_order, to_aten_scalar(scalar_of(e.input(1))));
}

void ReferenceEvaluator::handle(const CatOp& e) {
  std::vector<at::Tensor> parts;
  for (const Val* in : e.inputs()) {
    parts.push_back(tensor_of(in));
  }
  tensors_[e.output(0)] = at::cat(parts, e.dim());
}

void ReferenceEvaluator::handle(const SelectOp& e) {
  tensors_[e.output(0)] = tensor_of(e.input(0)).select(e.dim(), scalar_of(e.input(1)).as_int());
}

void ReferenceEvaluator::handle(const IndexSelectOp& e) {
  tensors_[e.output(0)] = at::index_select(tensor_of(e.input(0)), e.dim(), tensor_of(e.input(1)));
}

void ReferenceEvaluator::handle(const GatherOp& e) {
  const at::Tensor in = tensor_of(e.input(0));
  const at::Tensor index = tensor_of(e.input(1)).to(at::kLong);
  tensors_[e.output(0)] =
      e.take_along_axis() ? at::take_along_dim(in, index, e.dim()) : at::gather(in, e.dim(), index);
}

void ReferenceEvaluator::handle(const ScatterOp& e) {
  const at::Tensor in = tensor_of(e.input(0));
  const at::Tensor index = tensor_of(e.input(1));
  const at::Tensor src = tensor_of(e.input(2));
  check_scatter_sizes(in.sizes().vec(), index.sizes().vec(), src.sizes().vec(), e.dim());
  tensors_[e.output(0)] = at::scatter(in, e.dim(), index.to(at::kLong), src);
}

void ReferenceEvaluator::handle(const IndexPutAccumulateOp& e) {
  c10::List<std::optional<at::Tensor>> indices;
  indices.push_back(tensor_of(e.input(1)).to(at::kLong));
  tensors_[e.output(0)] = at::index_put(tensor_of(e.input(0)), indices, tensor_of(e.input(2)),
      /*accumulate=*/true);
}

void ReferenceEvaluator::handle(const EmbeddingFwdOp& e) {
  tensors_[e.output(0)] = at::embedding(tensor_of(e.input(1)), tensor_of(e.input(0)));
}

void ReferenceEvaluator::handle(const TriuOp& e) {
  tensors_[e.output(0)] = at::triu(tensor_of(e.input(0)), scalar_of(e.input(1)).as_int());
}

void ReferenceEvaluator::handle(const CumsumOp& e) {
  at::Tensor t = tensor_of(e.input(0));
  const DataType out = e.output(0)->dtype();
  // Half and BFloat16 accumulate in Float, as torch's CUDA scan does.
  const at::ScalarType accumulate = is_reduced_float(out) ? at::kFloat : to_aten(out);
  tensors_[e.output(0)] = at::cumsum(t.to(accumulate), e.dim()).to(to_aten(out));
}

void ReferenceEvaluator::handle(const TopkOp& e) {
  auto [values, indices] = at::topk(
      tensor_of(e.input(0)), scalar_of(e.input(1)).as_int(), e.dim(), e.largest(), e.sorted());
  tensors_[e.output(0)] = values;
  tensors_[e.output(1)] = indices;
}

void ReferenceEvaluator::handle(const ArgsortOp& e) {
  tensors_[e.output(0)] = at::argsort(tensor_of(e.input(0)), e.stable(), e.dim(), e.descending());
}

void ReferenceEvaluator::handle(const FullOp& e) {
  tensors_[e.output(0)] = at::full(int_values(e, 1, e.inputs().size() - 1),
      to_aten_scalar(scalar_of(e.input(0))), options_for(e.output(0)));
}

void ReferenceEvaluator::handle(const IotaOp& e) {
  const int64_t length = scalar_of(e.input(0)).as_int();
  NVFUSE_INPUT_CHECK(length >= 0, "iota: length is ", length, " in this run");
  const DataType dtype = e.output(0)->dtype();
  const bool integral = is_integral(dtype);
  // start + i * step, computed in Int64 or Double, then converted.
  const at::ScalarType math = integral ? at::kLong : at::kDouble;
  at::Tensor positions = at::arange(length, at::TensorOptions().dtype(math).device(device_));
  const ScalarValue start = scalar_of(e.input(1));
  const ScalarValue step = scalar_of(e.input(2));
  at::Tensor values = integral ? positions * step.as_int() + start.as_int()
                               : positions * step.as_double() + start.as_double();
  tensors_[e.output(0)] = values.to(to_aten(dtype));
}

void ReferenceEvaluator::handle(const RngOp& e) {
  const double a = scalar_of(e.input(0)).as_double();
  const double b = scalar_of(e.input(1)).as_double();
  PhiloxState state;
  if (e.has_explicit_seed()) {
    state.seed = static_cast<uint64_t>(scalar_of(e.input(2)).as_int());
    state.offset = static_cast<uint64_t>(scalar_of(e.input(3)).as_int());
  } else {
    state = next_philox_state(device_);
  }
  const size_t first = e.first_size_input();
  const std::vector<int64_t> sizes = int_values(e, first, e.inputs().size() - first);
  const bool is_double = e.output(0)->dtype() == DataType::Double;
  at::Tensor values =
      at::empty(sizes, at::TensorOptions().dtype(is_double ? at::kDouble : at::kFloat));
  const int64_t count = values.numel();
  if (is_double) {
    double* out = values.data_ptr<double>();
    for (int64_t i = 0; i < count; ++i) {
      out[i] = e.is_normal()
          ? nvfuse_philox::normal_double(state.seed, state.offset, i, a, b)
          : a + (b - a) * nvfuse_philox::uniform_double(state.seed, state.offset, i);
    }
  } else {
    float* out = values.data_ptr<float>();
    const float low = static_cast<float>(a);
    const float span = static_cast<float>(b - a);
    for (int64_t i = 0; i < count; ++i) {
      out[i] = e.is_normal()
          ? nvfuse_philox::normal_float(
                state.seed, state.offset, i, static_cast<float>(a), static_cast<float>(b))
          : low + span * nvfuse_philox::uniform_float(state.seed, state.offset, i);
    }
  }
  tensors_[e.output(0)] =
      values.to(at::TensorOptions().dtype(to_aten(e.output(0)->dtype())).device(device_));
}

void ReferenceEvaluator::handle(const MatmulOp& e) {
  tensors_[e.output(0)] = at::matmul(tensor_of(e.input(0)), tensor_of(e.input(1)));
}

void ReferenceEvaluator::handle(const LinearOp& e) {
  std::optional<at::Tensor> bias;
  if (e.has_bias()) {
    bias = tensor_of(e.input(2));
  }
  tensors_[e.output(0)] = at::linear(tensor_of(e.input(0)), tensor_of(e.input(1)), bias);
}

void ReferenceEvaluator::handle(const GroupedMmOp& e) {
  // torch takes the group ends as int32 only.
  tensors_[e.output(0)] = at::_grouped_mm(
      tensor_of(e.input(0)), tensor_of(e.input(1)), tensor_of(e.input(2)).to(at::kInt));
}

}  // namespace nvfuse
