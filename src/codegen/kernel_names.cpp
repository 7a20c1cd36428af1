#include "codegen/kernel_names.h"

namespace nvfuse {

namespace {

std::string flag(bool on, const char* name) { return on ? std::string("_") + name : std::string(); }

}  // namespace

std::string pointwise_kernel_name(const PointwiseParams& params) {
  return std::string("nvfuse_pointwise") + (params.transpose.enabled() ? "_transpose" : "") +
      "_vec" + std::to_string(params.vector_width);
}

std::string reduction_kernel_name(const ReductionParams& params) {
  std::string name = "nvfuse_reduction";
  name += params.outer ? "_outer" : (params.persistent ? "_inner_persistent" : "_inner_chunked");
  return name + flag(params.split, "split") + flag(params.inner_outer, "inner_outer") +
      flag(params.cluster > 1, "cluster") + flag(params.partial_cluster > 1, "partial_cluster") +
      flag(params.pipelined, "pipelined") + flag(params.staged, "staged") +
      flag(params.hold_columns, "hold_columns") + flag(params.carry_exps, "carry_exps") +
      flag(params.late_draws, "late_draws");
}

std::string reduction_finish_kernel_name(const ReductionParams& params) {
  return reduction_kernel_name(params) + "_finish";
}

std::string coordinate_kernel_name(const CoordinateParams& params) {
  return "nvfuse_coordinates" + flag(params.scatter_rows, "scatter_rows") + "_rank" +
      std::to_string(params.rank);
}

std::string scan_kernel_name(const CoordinateParams& params) {
  return "nvfuse_scan_rank" + std::to_string(params.rank);
}

}  // namespace nvfuse
