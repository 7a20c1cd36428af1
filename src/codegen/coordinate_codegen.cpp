#include "codegen/coordinate_codegen.h"

#include <algorithm>
#include <sstream>

#include "codegen/coordinate_values.h"
#include "codegen/device_runtime.h"
#include "codegen/expr_statement.h"
#include "codegen/index_values.h"
#include "codegen/kernel_names.h"
#include "codegen/scan_codegen.h"
#include "codegen/scatter_codegen.h"

namespace nvfuse {

namespace {

class CoordinateGenerator {
 public:
  CoordinateGenerator(
      const Fusion& fusion, const CoordinateAnalysis& analysis, const CoordinateParams& params)
      : fusion_(fusion), analysis_(analysis), params_(params) {
    tensors_ = analysis.inputs;
    tensors_.insert(tensors_.end(), analysis.outputs.begin(), analysis.outputs.end());
    build_layout();
  }

  KernelSource generate() const {
    KernelSource source;
    source.name = coordinate_kernel_name(params_);
    std::ostringstream ss;
    ss << coordinate_kernel_prelude(analysis_, params_, layout_, "coordinate");
    if (params_.scatter_rows) {
      ss << "// The output row a block stages (a scatter's staged-row form).\n"
         << "extern __shared__ __align__(64) unsigned char nvfuse_row_bytes[];\n"
         << "template <typename T>\n"
         << "__device__ __forceinline__ T* nvfuse_row() {\n"
         << "  return reinterpret_cast<T*>(nvfuse_row_bytes);\n"
         << "}\n\n";
    }
    ss << element_function() << "\n";
    if (params_.scatter_rows) {
      const ScatterOp& scatter = *analysis_.scatter;
      const std::string row_extent =
          new_values().int64_of(extent_of(scatter.input(0), scatter.dim()));
      ss << scatter_rows_kernel(scatter, params_, row_extent);
    } else {
      ss << kernel_function();
    }
    source.code = ss.str();
    source.layout = layout_;
    return source;
  }

  LaneRequirements lane_requirements() const { return lanes_of(group_values(), analysis_); }

 private:
  void build_layout() {
    layout_ = coordinate_arg_layout(analysis_, params_, tensors_, fast_division());
  }

  // A fresh statement builder over the kernel's args.
  CoordinateValues new_values() const {
    return CoordinateValues(
        fusion_, params_.vector_width, [](const Val* v) { return "args." + name_of_value(v); },
        analysis_.drawn_random_ops, params_.vectors_aligned, params_.graph_rng);
  }

  // The statements of one group of kVec lanes, with what the lanes need of
  // the sizes.
  CoordinateValues group_values() const {
    CoordinateValues values = new_values();
    std::vector<LaneCoord> coords;
    for (int axis = 0; axis < params_.rank; ++axis) {
      if (params_.flat_lanes) {
        coords.push_back(LaneCoord{"c" + std::to_string(axis), 0, true});
      } else {
        coords.push_back(
            LaneCoord{"c" + std::to_string(axis), axis + 1 == params_.rank ? 1 : 0, false});
      }
    }
    std::vector<const TensorView*> dense;
    for (size_t t = 0; t < tensors_.size() && t < 64; ++t) {
      if (params_.dense_tensors >> t & 1) {
        dense.push_back(tensors_[t]);
      }
    }
    values.lay_out_densely(dense, coords, params_.flat_lanes);
    if (analysis_.scatter != nullptr) {
      // The iteration space is the scatter's index tensor.
      values.scatter(*analysis_.scatter, coords, params_.scatter_rows);
      return values;
    }
    for (const TensorView* out : analysis_.outputs) {
      values.store(out, coords, values.value_at(out, coords));
    }
    return values;
  }

  std::string element_function() const {
    const CoordinateValues values = group_values();
    std::ostringstream ss;
    ss << "// Group g of the iteration space: kVec consecutive elements along "
          "the\n// innermost axis (in row-major order with flat lanes), every output "
          "at their\n// coordinates.\n"
       << "__device__ __forceinline__ void group(const Args& args, Index g) {\n";
    if (params_.flat_lanes) {
      ss << flat_lane_coordinates();
    } else if (params_.rank > 0) {
      // A coordinate only the addresses of dense tensors would read goes
      // unused: their addresses start from g (lay_out_densely).
      const int last = params_.rank - 1;
      ss << "  Index rest = g;\n";
      for (int axis = last; axis > 0; --axis) {
        // Axis `last` counts groups of kVec lanes.
        const std::string a = std::to_string(axis);
        const std::string divisor = "args.extent[" + a + "]" + (axis == last ? " / kVec" : "");
        const std::string scale = axis == last ? " * kVec" : "";
        if (fast_division()) {
          ss << "  const Index q" << a << " = nvfuse::fast_div(rest, args.divider[" << a << "]);\n"
             << "  [[maybe_unused]] const Index c" << a << " = (rest - q" << a << " * (" << divisor
             << "))" << scale << ";\n"
             << "  rest = q" << a << ";\n";
        } else {
          ss << "  [[maybe_unused]] const Index c" << a << " = rest % (" << divisor << ")" << scale
             << ";\n"
             << "  rest /= " << divisor << ";\n";
        }
      }
      if (last > 0) {
        ss << "  [[maybe_unused]] const Index c0 = rest;\n";
      } else {
        ss << "  [[maybe_unused]] const Index c0 = rest * kVec;\n";
      }
    }
    ss << values.code() << "}\n";
    return ss.str();
  }

  // Flat lanes: lane 0's coordinates from its linear position g * kVec,
  // the next row's (where the lanes past the row's end are: the innermost
  // extent is at least kVec), then each lane's as an Array c<axis>, and
  // which lanes are on the next row (`wraps`, CoordinateValues::load).
  std::string flat_lane_coordinates() const {
    std::ostringstream ss;
    const int last = params_.rank - 1;
    ss << "  Index rest = g * kVec;\n";
    for (int axis = last; axis > 0; --axis) {
      const std::string a = std::to_string(axis);
      if (fast_division()) {
        ss << "  const Index q" << a << " = nvfuse::fast_div(rest, args.divider[" << a << "]);\n"
           << "  const Index first" << a << " = rest - q" << a << " * args.extent[" << a << "];\n"
           << "  rest = q" << a << ";\n";
      } else {
        ss << "  const Index first" << a << " = rest % args.extent[" << a << "];\n"
           << "  rest /= args.extent[" << a << "];\n";
      }
    }
    ss << "  const Index first0 = rest;\n";
    for (int axis = 0; axis < last; ++axis) {
      ss << "  Index next" << axis << " = first" << axis << ";\n";
    }
    ss << "  ++next" << last - 1 << ";\n";
    for (int axis = last - 1; axis > 0; --axis) {
      const std::string a = std::to_string(axis);
      ss << "  if (next" << a << " == args.extent[" << a << "]) {\n"
         << "    next" << a << " = 0;\n"
         << "    ++next" << axis - 1 << ";\n"
         << "  }\n";
    }
    for (int axis = 0; axis <= last; ++axis) {
      ss << "  nvfuse::Array<Index, kVec> c" << axis << ";\n";
    }
    ss << "  nvfuse::Array<bool, kVec> wraps;\n";
    const std::string l = std::to_string(last);
    ss << "#pragma unroll\n"
       << "  for (int l = 0; l < kVec; ++l) {\n"
       << "    const Index at = first" << l << " + Index(l);\n"
       << "    wraps.val[l] = at >= args.extent[" << l << "];\n"
       << "    c" << l << ".val[l] = wraps.val[l] ? at - args.extent[" << l << "] : at;\n";
    for (int axis = 0; axis < last; ++axis) {
      ss << "    c" << axis << ".val[l] = wraps.val[l] ? next" << axis << " : first" << axis
         << ";\n";
    }
    ss << "  }\n";
    return ss.str();
  }

  std::string kernel_function() const {
    std::ostringstream ss;
    ss << "extern \"C\" __global__ void __launch_bounds__(" << params_.block_size << ") "
       << coordinate_kernel_name(params_) << "(const Args args) {\n"
       << "  constexpr int kUnroll = " << params_.unroll << ";\n"
       << "  constexpr int kBlock = " << params_.block_size << ";\n"
       << "  const Index groups = args.numel / kVec;\n"
       << "  const Index first = Index(blockIdx.x) * (kUnroll * kBlock) + "
          "Index(threadIdx.x);\n"
       << "  // A thread whose groups all exist runs them unguarded: one straight\n"
       << "  // run of code, in which the compiler issues every group's read-only\n"
       << "  // loads before the first group's stores.\n"
       << "  if (first + (kUnroll - 1) * kBlock < groups) {\n"
       << "#pragma unroll\n"
       << "    for (int u = 0; u < kUnroll; ++u) {\n"
       << "      group(args, first + u * kBlock);\n"
       << "    }\n"
       << "    return;\n"
       << "  }\n"
       << "#pragma unroll\n"
       << "  for (int u = 0; u < kUnroll; ++u) {\n"
       << "    const Index g = first + u * kBlock;\n"
       << "    if (g < groups) {\n"
       << "      group(args, g);\n"
       << "    }\n"
       << "  }\n"
       << "}\n";
    return ss.str();
  }

  // 32-bit kernels divide by the extents with host-computed magic numbers
  // (the divisors are below 2^31 there).
  bool fast_division() const { return params_.index_32bit && params_.rank > 1; }

  const Fusion& fusion_;
  const CoordinateAnalysis& analysis_;
  const CoordinateParams& params_;
  std::vector<const TensorView*> tensors_;
  KernelArgLayout layout_;
};

}  // namespace

std::string coordinate_kernel_prelude(const CoordinateAnalysis& analysis,
    const CoordinateParams& params, const KernelArgLayout& layout, const std::string& scheduler) {
  std::ostringstream ss;
  ss << device_runtime_source() << "\n";
  if (analysis.has_random_ops) {
    ss << device_philox_source() << "\n";
  }
  ss << "// ---- generated by nvfuse's " << scheduler << " scheduler ----\n"
     << "// " << params.to_string() << "\n"
     << "typedef " << (params.index_32bit ? "int" : "nvfuse::int64") << " Index;\n"
     << "constexpr int kVec = " << params.vector_width << ";\n\n"
     << layout.to_cuda() << "\n";
  return ss.str();
}

KernelArgLayout coordinate_arg_layout(const CoordinateAnalysis& analysis,
    const CoordinateParams& params, const std::vector<const TensorView*>& tensors, bool dividers) {
  KernelArgLayout layout;
  layout.index_32bit = params.index_32bit;
  for (size_t t = 0; t < tensors.size(); ++t) {
    layout.add({ArgField::kTensorPointer, static_cast<int>(t), 1, tensors[t]->dtype(),
        name_of_value(tensors[t])});
    layout.args.back().read_only = t < analysis.inputs.size();
  }
  const auto& values = analysis.value_inputs;
  for (size_t i = 0; i < values.size(); ++i) {
    layout.add(
        {ArgField::kValue, static_cast<int>(i), 1, values[i]->dtype(), name_of_value(values[i])});
  }
  add_drawn_seed_args(layout, values.size(), analysis.drawn_random_ops.size(), params.graph_rng);
  layout.add({ArgField::kNumel, 0, 1, DataType::Null, "numel"});
  if (params.rank > 0) {
    layout.add({ArgField::kExtents, 0, params.rank, DataType::Null, "extent"});
  }
  if (dividers) {
    layout.add({ArgField::kDividers, 0, params.rank, DataType::Null, "divider"});
  }
  for (size_t t = 0; t < tensors.size(); ++t) {
    if (tensors[t]->rank() > 0) {
      layout.add({ArgField::kStrides, static_cast<int>(t), static_cast<int>(tensors[t]->rank()),
          DataType::Null, "stride_" + name_of_value(tensors[t])});
    }
  }
  return layout;
}

LaneRequirements lane_requirements(const Fusion& fusion, const CoordinateAnalysis& analysis) {
  // Generating the group's statements at any width > 1 finds them.
  CoordinateParams params;
  params.rank = static_cast<int>(analysis.outputs.front()->rank());
  params.vector_width = 8;
  if (!analysis.scans.empty()) {
    params.scan_axis = static_cast<int>(analysis.scan_axis);
    return lanes_of(scan_values(fusion, analysis, params), analysis);
  }
  CoordinateGenerator generator(fusion, analysis, params);
  return generator.lane_requirements();
}

LaneRequirements lanes_of(const CoordinateValues& values, const CoordinateAnalysis& analysis) {
  std::vector<const TensorView*> tensors = analysis.inputs;
  tensors.insert(tensors.end(), analysis.outputs.begin(), analysis.outputs.end());
  LaneRequirements lanes;
  lanes.multiples.assign(values.lane_multiples().begin(), values.lane_multiples().end());
  lanes.shareable = values.lanes_share_predicates();
  lanes.flat = values.lanes_may_be_flat() && analysis.scatter == nullptr && analysis.scans.empty();
  for (const VectorAccess& access : values.vector_accesses()) {
    const auto at = std::find(tensors.begin(), tensors.end(), access.tv);
    lanes.vector_accesses.emplace_back(static_cast<size_t>(at - tensors.begin()), access.axis);
  }
  lanes.alignment_terms.assign(values.alignment_terms().begin(), values.alignment_terms().end());
  return lanes;
}

KernelSource generate_coordinate_kernel(
    const Fusion& fusion, const CoordinateAnalysis& analysis, const CoordinateParams& params) {
  if (!analysis.scans.empty()) {
    return generate_scan_kernel(fusion, analysis, params);
  }
  return CoordinateGenerator(fusion, analysis, params).generate();
}

}  // namespace nvfuse
