#include "codegen/transpose_codegen.h"

#include <sstream>

#include "codegen/expr_statement.h"
#include "codegen/kernel_names.h"
#include "codegen/pointwise_body.h"

namespace nvfuse {

namespace {

class TransposeGenerator {
 public:
  TransposeGenerator(
      const Fusion& fusion, const PointwiseAnalysis& analysis, const PointwiseParams& params)
      : fusion_(fusion),
        analysis_(analysis),
        params_(params),
        tiling_(params.transpose),
        tensors_(kernel_tensors(analysis)),
        inner_(params.collapsed_rank - 1) {}

  KernelSource generate() const {
    return assemble_pointwise_kernel(fusion_, analysis_, params_, "transpose", kernel_function());
  }

 private:
  bool is_output(size_t t) const { return t >= analysis_.inputs.size(); }
  bool transposed(size_t t) const { return tiling_.transposed[t]; }
  std::string name(size_t t) const { return name_of_value(tensors_[t]); }
  std::string type(size_t t) const { return cuda_type_of(tensors_[t]->dtype()); }
  std::string stride(size_t t, int axis) const {
    return "args.stride_" + name(t) + "[" + std::to_string(axis) + "]";
  }

  // Which tile this block walks, and each tensor's offset at the block's
  // coordinates of the other axes.
  std::string tile_coordinates() const {
    std::ostringstream ss;
    ss << "  const Index extent_i = args.extent[" << inner_ << "];\n"
       << "  const Index extent_k = args.extent[" << tiling_.axis << "];\n"
       << "  const Index tiles_i = (extent_i + kTile - 1) / kTile;\n"
       << "  const Index tiles_k = (extent_k + kTile - 1) / kTile;\n"
       << "  Index rest = Index(blockIdx.x);\n"
       << "  const Index i0 = rest % tiles_i * kTile;\n"
       << "  rest /= tiles_i;\n"
       << "  const Index k0 = rest % tiles_k * kTile;\n"
       << "  rest /= tiles_k;\n";
    std::vector<int> others;
    for (int axis = inner_ - 1; axis >= 0; --axis) {
      if (axis != tiling_.axis) {
        others.push_back(axis);
      }
    }
    for (size_t o = 0; o < others.size(); ++o) {
      const std::string c = "c" + std::to_string(others[o]);
      if (o + 1 == others.size()) {
        ss << "  const Index " << c << " = rest;\n";
      } else {
        ss << "  const Index " << c << " = rest % args.extent[" << others[o]
           << "];\n  rest /= args.extent[" << others[o] << "];\n";
      }
    }
    for (size_t t = 0; t < tensors_.size(); ++t) {
      ss << "  const Index base_" << name(t) << " = ";
      if (others.empty()) {
        ss << "0";
      }
      for (size_t o = 0; o < others.size(); ++o) {
        ss << (o ? " + " : "") << "c" << others[o] << " * " << stride(t, others[o]);
      }
      ss << ";\n";
    }
    return ss.str();
  }

  // Offset of a transposed tensor's element (k, i): contiguous along k.
  std::string transposed_offset(size_t t) const {
    return "base_" + name(t) + " + k + i * " + stride(t, inner_);
  }

  // Offset of another tensor's element (k, i): contiguous or broadcast
  // along i.
  std::string direct_offset(size_t t) const {
    return "base_" + name(t) + " + k * " + stride(t, tiling_.axis) + (broadcast(t) ? "" : " + i");
  }

  bool broadcast(size_t t) const { return params_.inner_access[t] == InnerAccess::kBroadcast; }

  // The register type of one access of tensor t: a vector of kVec elements,
  // one element where it broadcasts along i.
  std::string access_type(size_t t) const {
    return broadcast(t) ? type(t) : "nvfuse::Array<" + type(t) + ", kVec>";
  }

  // `args.t[offset]` as an access of access_type(t).
  std::string access(size_t t, const std::string& offset) const {
    if (broadcast(t)) {
      return "args." + name(t) + "[" + offset + "]";
    }
    return "*reinterpret_cast<" + std::string(is_output(t) ? "" : "const ") + access_type(t) +
        "*>(args." + name(t) + " + " + offset + ")";
  }

  bool has_transposed(bool outputs) const {
    for (size_t t = 0; t < tensors_.size(); ++t) {
      if (transposed(t) && is_output(t) == outputs) {
        return true;
      }
    }
    return false;
  }

  // Transposed inputs: kVec elements along k per lane, rows of threads
  // along i, stored to their tiles at [i][k].
  std::string read_transposed_inputs() const {
    std::ostringstream ss;
    ss << "  {  // transposed inputs: coalesced along their contiguous axis\n"
       << "    const Index k = k0 + lane * kVec;\n";
    for (size_t t = 0; t < analysis_.inputs.size(); ++t) {
      if (transposed(t)) {
        ss << "    " << access_type(t) << " v_" << name(t) << "[kSteps] = {};\n";
      }
    }
    ss << "#pragma unroll\n"
       << "    for (int s = 0; s < kSteps; ++s) {\n"
       << "      const Index i = i0 + row + s * kRows;\n"
       << "      if (k < extent_k && i < extent_i) {\n";
    for (size_t t = 0; t < analysis_.inputs.size(); ++t) {
      if (transposed(t)) {
        ss << "        v_" << name(t) << "[s] = " << access(t, transposed_offset(t)) << ";\n";
      }
    }
    ss << "      }\n    }\n"
       << "#pragma unroll\n"
       << "    for (int s = 0; s < kSteps; ++s) {\n"
       << "#pragma unroll\n"
       << "      for (int v = 0; v < kVec; ++v) {\n";
    for (size_t t = 0; t < analysis_.inputs.size(); ++t) {
      if (transposed(t)) {
        ss << "        tile_" << name(t) << "[row + s * kRows][lane * kVec + v] = v_" << name(t)
           << "[s].val[v];\n";
      }
    }
    ss << "      }\n    }\n  }\n  __syncthreads();\n";
    return ss.str();
  }

  // Lanes along i (kVec elements each): the other inputs read directly,
  // the fusion computed, the other outputs written directly and the
  // transposed ones to their tiles.
  std::string compute_along_inner_axis() const {
    std::ostringstream ss;
    ss << "  {  // along the innermost axis\n"
       << "    const Index i = i0 + lane * kVec;\n";
    for (size_t t = 0; t < analysis_.inputs.size(); ++t) {
      if (!transposed(t)) {
        ss << "    " << access_type(t) << " in_" << name(t) << "[kSteps] = {};\n";
      }
    }
    ss << "#pragma unroll\n"
       << "    for (int s = 0; s < kSteps; ++s) {\n"
       << "      const Index k = k0 + row + s * kRows;\n"
       << "      if (i < extent_i && k < extent_k) {\n";
    for (size_t t = 0; t < analysis_.inputs.size(); ++t) {
      if (!transposed(t)) {
        ss << "        in_" << name(t) << "[s] = " << access(t, direct_offset(t)) << ";\n";
      }
    }
    ss << "      }\n    }\n"
       << "#pragma unroll\n"
       << "    for (int s = 0; s < kSteps; ++s) {\n"
       << "      const Index k = k0 + row + s * kRows;\n"
       << "      if (i < extent_i && k < extent_k) {\n";
    std::string call = "fused(args";
    for (size_t t = 0; t < tensors_.size(); ++t) {
      if (is_output(t)) {
        ss << "        nvfuse::Array<" << type(t) << ", kVec> out_" << name(t) << ";\n";
        call += ", out_" + name(t) + ".val[v]";
      } else if (transposed(t)) {
        call += ", tile_" + name(t) + "[lane * kVec + v][row + s * kRows]";
      } else {
        call += broadcast(t) ? ", in_" + name(t) + "[s]"
                             : ", nvfuse::lane_of(in_" + name(t) + "[s], v)";
      }
    }
    ss << "#pragma unroll\n"
       << "        for (int v = 0; v < kVec; ++v) {\n"
       << "          " << call << ");\n";
    for (size_t t = analysis_.inputs.size(); t < tensors_.size(); ++t) {
      if (transposed(t)) {
        ss << "          tile_" << name(t) << "[lane * kVec + v][row + s * kRows] = out_" << name(t)
           << ".val[v];\n";
      }
    }
    ss << "        }\n";
    for (size_t t = analysis_.inputs.size(); t < tensors_.size(); ++t) {
      if (!transposed(t)) {
        ss << "        " << access(t, direct_offset(t)) << " = out_" << name(t) << ";\n";
      }
    }
    ss << "      }\n    }\n  }\n";
    return ss.str();
  }

  // Transposed outputs: from their tiles, kVec elements along k per lane.
  std::string write_transposed_outputs() const {
    std::ostringstream ss;
    ss << "  __syncthreads();\n"
       << "  {  // transposed outputs: coalesced along their contiguous axis\n"
       << "    const Index k = k0 + lane * kVec;\n"
       << "#pragma unroll\n"
       << "    for (int s = 0; s < kSteps; ++s) {\n"
       << "      const Index i = i0 + row + s * kRows;\n"
       << "      if (k < extent_k && i < extent_i) {\n";
    for (size_t t = analysis_.inputs.size(); t < tensors_.size(); ++t) {
      if (transposed(t)) {
        ss << "        " << access_type(t) << " w_" << name(t) << ";\n"
           << "#pragma unroll\n"
           << "        for (int v = 0; v < kVec; ++v) {\n"
           << "          w_" << name(t) << ".val[v] = tile_" << name(t)
           << "[row + s * kRows][lane * kVec + v];\n"
           << "        }\n"
           << "        " << access(t, transposed_offset(t)) << " = w_" << name(t) << ";\n";
      }
    }
    ss << "      }\n    }\n  }\n";
    return ss.str();
  }

  std::string kernel_function() const {
    std::ostringstream ss;
    ss << "extern \"C\" __global__ void __launch_bounds__(" << params_.block_size << ") "
       << pointwise_kernel_name(params_) << "(const Args args) {\n"
       << "  constexpr int kTile = " << tiling_.tile << ";\n"
       << "  constexpr int kVec = " << params_.vector_width << ";\n"
       << "  constexpr int kLanes = kTile / kVec;\n"
       << "  constexpr int kRows = " << params_.block_size << " / kLanes;\n"
       << "  constexpr int kSteps = kTile / kRows;  // accesses per thread\n"
       << "  const int lane = threadIdx.x % kLanes;\n"
       << "  const int row = threadIdx.x / kLanes;\n"
       << tile_coordinates();
    for (size_t t = 0; t < tensors_.size(); ++t) {
      if (transposed(t)) {
        ss << "  __shared__ " << type(t) << " tile_" << name(t) << "[kTile][kTile + "
           << tile_row_padding(tensors_[t]->dtype(), tiling_.tile, params_.vector_width)
           << "];  // [i][k]\n";
      }
    }
    if (has_transposed(/*outputs=*/false)) {
      ss << read_transposed_inputs();
    }
    ss << compute_along_inner_axis();
    if (has_transposed(/*outputs=*/true)) {
      ss << write_transposed_outputs();
    }
    ss << "}\n";
    return ss.str();
  }

  const Fusion& fusion_;
  const PointwiseAnalysis& analysis_;
  const PointwiseParams& params_;
  const TransposeTiling& tiling_;
  const std::vector<const TensorView*> tensors_;
  const int inner_;
};

}  // namespace

KernelSource generate_transpose_kernel(
    const Fusion& fusion, const PointwiseAnalysis& analysis, const PointwiseParams& params) {
  return TransposeGenerator(fusion, analysis, params).generate();
}

}  // namespace nvfuse
