#include "codegen/scan_codegen.h"

#include <sstream>

#include "codegen/coordinate_codegen.h"
#include "codegen/expr_statement.h"
#include "codegen/kernel_names.h"
#include "ir/printer.h"

namespace nvfuse {

namespace {

bool warp_per_row(const CoordinateParams& params) { return params.scan_axis == params.rank - 1; }

// Half and bf16 sums accumulate in fp32, as torch's do.
std::string accumulator_type(DataType dtype) {
  return dtype == DataType::Half || dtype == DataType::BFloat16 ? "float" : cuda_type_of(dtype);
}

// The coordinates of a lane group: c<axis> per axis, the scan axis `i`
// when a thread walks it, the innermost axis carrying the lanes.
std::vector<LaneCoord> walk_coords(const CoordinateParams& params) {
  std::vector<LaneCoord> coords;
  const int last = params.rank - 1;
  for (int axis = 0; axis < params.rank; ++axis) {
    const bool walked = axis == params.scan_axis && axis != last;
    coords.push_back(
        LaneCoord{walked ? "i" : "c" + std::to_string(axis), axis == last ? 1 : 0, false});
  }
  return coords;
}

// Lane l of `y` = the running sum through element l of `x`, from `carry`
// (the sums before this chunk) on.
void emit_scan_step(CoordinateValues& values, const CoordinateParams& params,
    const std::string& acc, const std::string& type, const std::string& x, const std::string& y,
    const std::string& carry) {
  if (!warp_per_row(params)) {
    values.statement("#pragma unroll");
    values.statement("for (int l = 0; l < kVec; ++l) { " + carry + ".val[l] += nvfuse::cast<" +
        acc + ">(" + x + ".val[l]); " + y + ".val[l] = nvfuse::cast<" + type + ">(" + carry +
        ".val[l]); }");
    return;
  }
  const std::string sums = values.fresh_name();
  values.statement("nvfuse::Array<" + acc + ", kVec> " + sums + ";  // this lane's running sums");
  values.statement(sums + ".val[0] = nvfuse::cast<" + acc + ">(" + x + ".val[0]);");
  values.statement("#pragma unroll");
  values.statement("for (int l = 1; l < kVec; ++l) " + sums + ".val[l] = " + sums +
      ".val[l - 1] + nvfuse::cast<" + acc + ">(" + x + ".val[l]);");
  const std::string total = values.fresh_name();
  const std::string before = values.fresh_name();
  values.statement(acc + " " + total + ";");
  values.statement("const " + acc + " " + before + " = " + carry +
      " + nvfuse::warp_exclusive_sum(" + sums + ".val[kVec - 1], lane, &" + total + ");");
  values.statement("#pragma unroll");
  values.statement("for (int l = 0; l < kVec; ++l) " + y + ".val[l] = nvfuse::cast<" + type + ">(" +
      before + " + " + sums + ".val[l]);");
  values.statement(carry + " += " + total + ";");
}

// Which row (warp per row) or lane group (thread per group) this thread
// takes, and its coordinates on the axes it does not walk.
std::string thread_coords(const CoordinateParams& params) {
  std::ostringstream ss;
  const int last = params.rank - 1;
  const auto coord = [&](int axis, const std::string& divisor, const std::string& scale) {
    ss << "  const Index c" << axis << " = (rest % (" << divisor << "))" << scale << ";\n"
       << "  rest /= " << divisor << ";\n";
  };
  if (warp_per_row(params)) {
    ss << "  const int lane = int(threadIdx.x) % 32;\n"
       << "  const Index row = Index(blockIdx.x) * (kBlock / 32) + Index(threadIdx.x) / 32;\n"
       << "  if (row >= args.numel / args.extent[" << last << "]) {\n"
       << "    return;  // the whole warp: its row is past the end\n"
       << "  }\n";
    if (last > 0) {
      ss << "  Index rest = row;\n";
    }
    for (int axis = last - 1; axis >= 0; --axis) {
      coord(axis, "args.extent[" + std::to_string(axis) + "]", "");
    }
    return ss.str();
  }
  const std::string walked = "args.extent[" + std::to_string(params.scan_axis) + "]";
  ss << "  const Index group = Index(blockIdx.x) * kBlock + Index(threadIdx.x);\n"
     << "  if (group >= args.numel / " << walked << " / kVec) {\n"
     << "    return;\n"
     << "  }\n"
     << "  Index rest = group;\n";
  coord(last, "args.extent[" + std::to_string(last) + "] / kVec", " * kVec");
  for (int axis = last - 1; axis >= 0; --axis) {
    if (axis != params.scan_axis) {
      coord(axis, "args.extent[" + std::to_string(axis) + "]", "");
    }
  }
  return ss.str();
}

}  // namespace

CoordinateValues scan_values(
    const Fusion& fusion, const CoordinateAnalysis& analysis, const CoordinateParams& params) {
  CoordinateValues values(
      fusion, params.vector_width, [](const Val* v) { return "args." + name_of_value(v); },
      analysis.drawn_random_ops, params.vectors_aligned);
  const std::vector<LaneCoord> coords = walk_coords(params);
  const std::string last = std::to_string(params.rank - 1);
  const bool warp = warp_per_row(params);
  std::vector<std::string> carries;
  for (const CumsumOp* scan : analysis.scans) {
    const std::string acc = accumulator_type(scan->output(0)->dtype());
    const std::string carry = values.fresh_name();
    if (warp) {
      values.statement(acc + " " + carry + " = " + acc + "(0);  // the row's sum so far");
    } else {
      values.statement(
          "nvfuse::Array<" + acc + ", kVec> " + carry + ";  // each lane's sum so far");
      values.statement("#pragma unroll");
      values.statement("for (int l = 0; l < kVec; ++l) " + carry + ".val[l] = " + acc + "(0);");
    }
    carries.push_back(carry);
  }
  if (warp) {
    values.open_block("for (Index k = 0; k < args.extent[" + last + "]; k += 32 * kVec)");
    values.statement("const Index c" + last + " = k + Index(lane) * kVec;");
    values.statement("const bool in_row = c" + last + " < args.extent[" + last + "];");
  } else {
    values.open_block(
        "for (Index i = 0; i < args.extent[" + std::to_string(params.scan_axis) + "]; ++i)");
  }
  for (size_t s = 0; s < analysis.scans.size(); ++s) {
    const CumsumOp* scan = analysis.scans[s];
    const auto* out = scan->output(0)->as<TensorView>();
    if (warp) {
      values.open_guard("in_row");  // lanes past the row's end add zeros
    }
    const std::string x = values.value_at(scan->input(0)->as<TensorView>(), coords);
    if (warp) {
      values.close_guard();
    }
    const std::string y = values.fresh_name();
    values.statement("nvfuse::Array<" + cuda_type_of(out->dtype()) + ", kVec> " + y + ";  // " +
        print_expr(*scan));
    emit_scan_step(values, params, accumulator_type(out->dtype()), cuda_type_of(out->dtype()), x, y,
        carries[s]);
    values.provide(out, coords, y);
  }
  if (warp) {
    values.open_block("if (in_row)");
  }
  for (const TensorView* out : analysis.outputs) {
    values.store(out, coords, values.value_at(out, coords));
  }
  if (warp) {
    values.close_block();
  }
  values.close_block();
  return values;
}

KernelSource generate_scan_kernel(
    const Fusion& fusion, const CoordinateAnalysis& analysis, const CoordinateParams& params) {
  std::vector<const TensorView*> tensors = analysis.inputs;
  tensors.insert(tensors.end(), analysis.outputs.begin(), analysis.outputs.end());
  KernelSource source;
  source.name = scan_kernel_name(params);
  source.layout = coordinate_arg_layout(analysis, params, tensors, /*dividers=*/false);
  std::ostringstream ss;
  ss << coordinate_kernel_prelude(analysis, params, source.layout, "scan")
     << "extern \"C\" __global__ void __launch_bounds__(" << params.block_size << ") "
     << source.name << "(const Args args) {\n"
     << "  constexpr int kBlock = " << params.block_size << ";\n"
     << thread_coords(params) << scan_values(fusion, analysis, params).code() << "}\n";
  source.code = ss.str();
  return source;
}

}  // namespace nvfuse
