// A scatter in the coordinate kernel, out = in.scatter(dim, index, src):
// the kernel walks the index tensor's elements; at each it computes the
// index and src (with whatever elementwise or coordinate work makes them,
// fused) and writes src's value at the element's coordinates with `dim`
// replaced by the index: into the output, which the executor has filled
// with a copy of `in` before the launch, or into the output's row staged
// in shared memory (codegen/scatter_codegen.h). Each lane writes on its
// own: the lanes' indices differ, so their addresses do too.
#include "codegen/coordinate_values.h"
#include "codegen/kernel_names.h"
#include "codegen/scatter_codegen.h"

#include <sstream>

#include "codegen/expr_statement.h"
#include "codegen/kernel_args.h"
#include "ir/printer.h"

namespace nvfuse {

void CoordinateValues::scatter(
    const ScatterOp& expr, const std::vector<LaneCoord>& coords, bool into_row) {
  const auto* out = expr.output(0)->as<TensorView>();
  const int64_t dim = expr.dim();
  const std::string index = value_at(tensor_input(expr, 1), coords);
  const std::string value = value_at(tensor_input(expr, 2), coords);
  const std::string bound = int64_of(extent_of(expr.input(0), dim));
  std::vector<LaneCoord> at = coords;
  at[dim] = LaneCoord{lanes(
                          "Index",
                          [&](const std::string& l) {
                            return "Index(nvfuse::scatter_index(nvfuse::int64(" + index + ".val[" +
                                l + "]), " + bound + "))";
                          },
                          print_expr(expr)),
      0, true};
  const std::string target = into_row
      ? "nvfuse_row<" + cuda_type_of(out->dtype()) + ">()[" + at[dim].lane("l") + "]"
      : "args." + name_of_value(out) + "[" + offset_of(out, at, "l") + "]";
  // Several lanes (or threads) may write one element where indices repeat:
  // which write lands is unspecified, as in torch.
  line("#pragma unroll");
  line("for (int l = 0; l < kVec; ++l) {");
  line("  if (" + at[dim].lane("l") + " >= 0) " + target + " = " + value + ".val[l];");
  line("}");
}

std::string scatter_rows_kernel(
    const ScatterOp& scatter, const CoordinateParams& params, const std::string& row_extent) {
  const auto* in = scatter.input(0)->as<TensorView>();
  const auto* out = scatter.output(0)->as<TensorView>();
  const std::string x = "args." + name_of_value(in);
  const std::string y = "args." + name_of_value(out);
  const std::string type = cuda_type_of(in->dtype());
  const std::string array = "nvfuse::Array<" + type + ", kVec>";
  const int last = params.rank - 1;
  const std::string x_step = "args.stride_" + name_of_value(in) + "[" + std::to_string(last) + "]";
  const std::string y_step = "args.stride_" + name_of_value(out) + "[" + std::to_string(last) + "]";
  std::ostringstream ss;
  ss << "extern \"C\" __global__ void __launch_bounds__(" << params.block_size << ") "
     << coordinate_kernel_name(params) << "(const Args args) {\n"
     << "  constexpr int kBlock = " << params.block_size << ";\n"
     << "  const Index n = Index(" << row_extent << ");  // a row of the output\n"
     << "  const Index row_groups = args.extent[" << last << "] / kVec;  // of the index\n"
     << "  " << type << "* row = nvfuse_row<" << type << ">();\n"
     << "  Index rows = 1;\n";
  for (int axis = 0; axis < last; ++axis) {
    ss << "  rows *= args.extent[" << axis << "];\n";
  }
  ss << "  for (Index r = blockIdx.x; r < rows; r += gridDim.x) {\n"
     << "    [[maybe_unused]] Index rest = r;\n"
     << "    Index x_at = 0;\n"
     << "    Index y_at = 0;\n";
  for (int axis = last - 1; axis >= 0; --axis) {
    const std::string a = std::to_string(axis);
    ss << "    x_at += rest % args.extent[" << a << "] * args.stride_" << name_of_value(in) << "["
       << a << "];\n"
       << "    y_at += rest % args.extent[" << a << "] * args.stride_" << name_of_value(out) << "["
       << a << "];\n"
       << "    rest /= args.extent[" << a << "];\n";
  }
  // A row between global memory (`tensor` from offset `at`, elements `step`
  // apart) and the staged row: 16-byte vectors where the global row allows,
  // else element by element; coalesced either way.
  const auto copy_row = [&](const std::string& tensor, const std::string& at,
                            const std::string& step, bool into_row) {
    const std::string base = tensor + " + " + at;
    const std::string global_vector = "reinterpret_cast<" + std::string(into_row ? "const " : "") +
        array + "*>(" + base + " + k)";
    const std::string row_vector =
        "reinterpret_cast<" + std::string(into_row ? "" : "const ") + array + "*>(row + k)";
    const std::string element = tensor + "[" + at + " + k * " + step + "]";
    const std::string vector_copy = into_row
        ? "*" + row_vector + " = nvfuse::load_read_only<false>(" + global_vector + ")"
        : "*" + global_vector + " = *" + row_vector;
    const std::string element_copy = into_row ? "row[k] = " + element : element + " = row[k]";
    return "    if (n % kVec == 0 && nvfuse::vector_ok<kVec>(" + base + ", " + step +
        ")) {\n"
        "      for (Index k = threadIdx.x * kVec; k < n; k += kBlock * kVec) {\n"
        "        " +
        vector_copy +
        ";\n"
        "      }\n"
        "    } else {\n"
        "      for (Index k = threadIdx.x; k < n; k += kBlock) {\n"
        "        " +
        element_copy +
        ";\n"
        "      }\n"
        "    }\n";
  };
  ss << "    // 1. the input's row into shared memory\n"
     << copy_row(x, "x_at", x_step, true) << "    __syncthreads();\n"
     << "    // 2. the index row's writes into it\n"
     << "    for (Index j = threadIdx.x; j < row_groups; j += kBlock) {\n"
     << "      group(args, r * row_groups + j);\n"
     << "    }\n"
     << "    __syncthreads();\n"
     << "    // 3. the row out\n"
     << copy_row(y, "y_at", y_step, false) << "    __syncthreads();  // the row is reused\n"
     << "  }\n"
     << "}\n";
  return ss.str();
}

}  // namespace nvfuse
