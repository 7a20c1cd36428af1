#include "multidevice/runtime/host/pipelining_conditions.h"

#include <algorithm>

#include "ir/all_exprs.h"
#include "ir/errors.h"
#include "ir/sharding.h"

namespace nvfuse {

bool is_pipelinable_gemm(const Expr& expr, bool allow_bias) {
  if (!expr.is<MatmulOp>() && !expr.is<LinearOp>()) {
    return false;
  }
  if (expr.is<LinearOp>() && expr.as<LinearOp>()->has_bias() && !allow_bias) {
    return false;
  }
  const auto* a = expr.input(0)->as<TensorView>();
  const auto* b = expr.input(1)->as<TensorView>();
  return a->rank() >= 2 && b->rank() == 2 && a->dtype() == b->dtype();
}

bool is_one_sorted_team(const Communication& comm, const TensorView& out) {
  const std::vector<int64_t>& devices = comm.mesh.devices();
  return comm.mesh.rank() == 1 && std::is_sorted(devices.begin(), devices.end()) &&
      out.device_mesh().has_value() && *out.device_mesh() == comm.mesh;
}

bool feeds_only(const Fusion& fusion, const Val& value, const Expr& only_use) {
  const std::vector<Expr*> uses = value.distinct_uses();
  return uses.size() == 1 && uses[0] == &only_use && !fusion.is_output(&value);
}

std::optional<StreamChunks> annotation_among(
    const StreamAnnotations& annotations, std::initializer_list<const TensorView*> tensors) {
  for (const TensorView* tv : tensors) {
    if (tv == nullptr) {
      continue;
    }
    if (auto it = annotations.find(tv); it != annotations.end()) {
      return it->second;
    }
  }
  return std::nullopt;
}

void check_chunks_divide(const TensorView& tensor, int64_t axis, int64_t devices, int64_t chunks) {
  const auto global = tensor.logical()[axis]->logical_extent()->constant_int();
  if (!global.has_value() || *global % devices != 0) {
    return;  // checked per call, or by the sharding's own check
  }
  const int64_t rows = *global / devices;
  NVFUSE_CHECK(rows % chunks == 0, tensor.name(), ": the stream split asks for ", chunks,
      " chunks of axis ", axis, ", but each device holds ", rows,
      " rows of it, which do not divide into them");
}

}  // namespace nvfuse
