#include "codegen/pointwise_codegen.h"

#include <sstream>

#include "codegen/expr_statement.h"
#include "codegen/kernel_names.h"
#include "codegen/pointwise_body.h"
#include "codegen/transpose_codegen.h"

namespace nvfuse {

namespace {

class PointwiseGenerator {
 public:
  PointwiseGenerator(
      const Fusion& fusion, const PointwiseAnalysis& analysis, const PointwiseParams& params)
      : fusion_(fusion), analysis_(analysis), params_(params), tensors_(kernel_tensors(analysis)) {}

  KernelSource generate() const {
    return assemble_pointwise_kernel(fusion_, analysis_, params_, "pointwise", kernel_function());
  }

 private:
  bool is_output(size_t t) const { return t >= analysis_.inputs.size(); }
  InnerAccess access(size_t t) const { return params_.inner_access[t]; }
  // Elements one load or store of tensor t moves per vector group.
  int width_of(size_t t) const {
    return access(t) == InnerAccess::kBroadcast ? 1 : params_.vector_width;
  }

  // Offset of tensor t's element at coordinates c0..c{rank-1}.
  std::string offset_expression(size_t t) const {
    const int rank = params_.collapsed_rank;
    const std::string name = name_of_value(tensors_[t]);
    std::string text;
    for (int axis = 0; axis + 1 < rank; ++axis) {
      text += "c" + std::to_string(axis) + " * args.stride_" + name + "[" + std::to_string(axis) +
          "] + ";
    }
    const std::string inner = "c" + std::to_string(rank - 1);
    switch (access(t)) {
      case InnerAccess::kContiguous:
        text += inner;
        break;
      case InnerAccess::kBroadcast:
        text += "0";
        break;
      case InnerAccess::kStrided:
        text += inner + " * args.stride_" + name + "[" + std::to_string(rank - 1) + "]";
        break;
    }
    return text;
  }

  std::string array_type(size_t t) const {
    return "nvfuse::Array<" + cuda_type_of(tensors_[t]->dtype()) + ", " +
        std::to_string(width_of(t)) + ">";
  }

  std::string coordinates(const std::string& indent) const {
    const int rank = params_.collapsed_rank;
    std::ostringstream ss;
    ss << indent << "Index rest = group * kVec;\n";
    for (int axis = rank - 1; axis > 0; --axis) {
      const std::string a = std::to_string(axis);
      if (divides_by_magic_numbers(params_)) {
        ss << indent << "const Index q" << a << " = nvfuse::fast_div(rest, args.divider[" << a
           << "]);\n"
           << indent << "const Index c" << a << " = rest - q" << a << " * args.extent[" << a
           << "];\n"
           << indent << "rest = q" << a << ";\n";
      } else {
        ss << indent << "const Index c" << a << " = rest % args.extent[" << a << "];\n"
           << indent << "rest /= args.extent[" << a << "];\n";
      }
    }
    ss << indent << "const Index c0 = rest;\n";
    return ss.str();
  }

  std::string fused_call(const std::string& u, const std::string& v) const {
    std::string text = "fused(args";
    for (size_t t = 0; t < tensors_.size(); ++t) {
      const std::string lane = width_of(t) == 1 ? "0" : v;
      text += is_output(t)
          ? ", out_" + name_of_value(tensors_[t]) + ".val[" + v + "]"
          : ", nvfuse::lane_of(in_" + name_of_value(tensors_[t]) + "[" + u + "], " + lane + ")";
    }
    return text + ");";
  }

  // The last numel % kVec elements of a flat space, one per thread of the
  // first block.
  std::string tail() const {
    std::ostringstream ss;
    ss << "  if (kVec > 1 && blockIdx.x == 0) {\n"
       << "    const Index i = groups * kVec + Index(threadIdx.x);\n"
       << "    if (i < args.numel) {\n";
    for (size_t t = 0; t < tensors_.size(); ++t) {
      const std::string name = name_of_value(tensors_[t]);
      const std::string type = cuda_type_of(tensors_[t]->dtype());
      const std::string index = access(t) == InnerAccess::kBroadcast ? "0" : "i";
      if (is_output(t)) {
        ss << "      " << type << " out_" << name << ";\n";
      } else {
        ss << "      const " << type << " in_" << name << " = args." << name << "[" << index
           << "];\n";
      }
    }
    ss << "      fused(args";
    for (size_t t = 0; t < tensors_.size(); ++t) {
      ss << ", " << (is_output(t) ? "out_" : "in_") << name_of_value(tensors_[t]);
    }
    ss << ");\n";
    for (size_t t = analysis_.inputs.size(); t < tensors_.size(); ++t) {
      const std::string name = name_of_value(tensors_[t]);
      ss << "      args." << name << "[i] = out_" << name << ";\n";
    }
    ss << "    }\n  }\n";
    return ss.str();
  }

  std::string kernel_function() const {
    std::ostringstream ss;
    ss << "extern \"C\" __global__ void __launch_bounds__(" << params_.block_size << ") "
       << pointwise_kernel_name(params_) << "(const Args args) {\n"
       << "  constexpr int kVec = " << params_.vector_width << ";\n"
       << "  constexpr int kUnroll = " << params_.unroll << ";\n"
       << "  constexpr int kBlock = " << params_.block_size << ";\n"
       << "  const Index groups = args.numel / kVec;\n"
       << "  const Index first = Index(blockIdx.x) * (kUnroll * kBlock) + "
          "Index(threadIdx.x);\n";
    for (size_t t = 0; t < tensors_.size(); ++t) {
      ss << "  Index offset_" << name_of_value(tensors_[t]) << "[kUnroll];\n";
      if (!is_output(t)) {
        ss << "  " << array_type(t) << " in_" << name_of_value(tensors_[t]) << "[kUnroll];\n";
      }
    }
    // Load every group first: kUnroll independent loads in flight.
    ss << "#pragma unroll\n"
       << "  for (int u = 0; u < kUnroll; ++u) {\n"
       << "    const Index group = first + u * kBlock;\n"
       << "    if (group < groups) {\n"
       << coordinates("      ");
    for (size_t t = 0; t < tensors_.size(); ++t) {
      const std::string name = name_of_value(tensors_[t]);
      ss << "      offset_" << name << "[u] = " << offset_expression(t) << ";\n";
      if (is_output(t)) {
        continue;
      }
      if (width_of(t) > 1) {
        ss << "      in_" << name << "[u] = *reinterpret_cast<const " << array_type(t) << "*>(args."
           << name << " + offset_" << name << "[u]);\n";
      } else {
        ss << "      in_" << name << "[u].val[0] = args." << name << "[offset_" << name
           << "[u]];\n";
      }
    }
    ss << "    }\n  }\n";
    // Compute and store.
    ss << "#pragma unroll\n"
       << "  for (int u = 0; u < kUnroll; ++u) {\n"
       << "    if (first + u * kBlock < groups) {\n";
    for (size_t t = analysis_.inputs.size(); t < tensors_.size(); ++t) {
      ss << "      " << array_type(t) << " out_" << name_of_value(tensors_[t]) << ";\n";
    }
    ss << "#pragma unroll\n"
       << "      for (int v = 0; v < kVec; ++v) {\n"
       << "        " << fused_call("u", "v") << "\n"
       << "      }\n";
    for (size_t t = analysis_.inputs.size(); t < tensors_.size(); ++t) {
      const std::string name = name_of_value(tensors_[t]);
      ss << "      *reinterpret_cast<" << array_type(t) << "*>(args." << name << " + offset_"
         << name << "[u]) = out_" << name << ";\n";
    }
    ss << "    }\n  }\n";
    if (params_.collapsed_rank == 1 && params_.vector_width > 1) {
      ss << tail();
    }
    ss << "}\n";
    return ss.str();
  }

  const Fusion& fusion_;
  const PointwiseAnalysis& analysis_;
  const PointwiseParams& params_;
  const std::vector<const TensorView*> tensors_;
};

}  // namespace

KernelSource generate_pointwise_kernel(
    const Fusion& fusion, const PointwiseAnalysis& analysis, const PointwiseParams& params) {
  if (params.transpose.enabled()) {
    return generate_transpose_kernel(fusion, analysis, params);
  }
  return PointwiseGenerator(fusion, analysis, params).generate();
}

}  // namespace nvfuse
