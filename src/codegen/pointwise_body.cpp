#include "codegen/pointwise_body.h"

#include <algorithm>
#include <sstream>

#include "codegen/expr_statement.h"

namespace nvfuse {

std::vector<const TensorView*> kernel_tensors(const PointwiseAnalysis& analysis) {
  std::vector<const TensorView*> tensors = analysis.inputs;
  tensors.insert(tensors.end(), analysis.outputs.begin(), analysis.outputs.end());
  return tensors;
}

KernelArgLayout pointwise_arg_layout(
    const PointwiseAnalysis& analysis,
    const PointwiseParams& params) {
  KernelArgLayout layout;
  layout.index_32bit = params.index_32bit;
  const std::vector<const TensorView*> tensors = kernel_tensors(analysis);
  for (size_t t = 0; t < tensors.size(); ++t) {
    layout.add({ArgField::kTensorPointer, static_cast<int>(t), 1,
                tensors[t]->dtype(), name_of_value(tensors[t])});
    layout.args.back().read_only = t < analysis.inputs.size();
  }
  for (size_t i = 0; i < analysis.value_inputs.size(); ++i) {
    const Val* v = analysis.value_inputs[i];
    layout.add({ArgField::kValue, static_cast<int>(i), 1, v->dtype(),
                name_of_value(v)});
  }
  const int rank = params.collapsed_rank;
  layout.add({ArgField::kNumel, 0, 1, DataType::Null, "numel"});
  layout.add({ArgField::kExtents, 0, rank, DataType::Null, "extent"});
  for (size_t t = 0; t < tensors.size(); ++t) {
    layout.add({ArgField::kStrides, static_cast<int>(t), rank,
                DataType::Null, "stride_" + name_of_value(tensors[t])});
  }
  return layout;
}

std::string fused_element_function(
    const Fusion& fusion,
    const PointwiseAnalysis& analysis) {
  const std::vector<const TensorView*> tensors = kernel_tensors(analysis);
  const size_t input_count = analysis.inputs.size();
  const auto is_value_input = [&](const Val* v) {
    return std::find(analysis.value_inputs.begin(), analysis.value_inputs.end(),
                     v) != analysis.value_inputs.end();
  };
  std::ostringstream ss;
  ss << "// One element of the fusion: inputs in, outputs out.\n"
     << "__device__ __forceinline__ void fused(\n    const Args& args";
  for (size_t t = 0; t < tensors.size(); ++t) {
    const bool output = t >= input_count;
    ss << ",\n    " << (output ? "" : "const ")
       << cuda_type_of(tensors[t]->dtype()) << (output ? "& out_" : " ")
       << name_of_value(tensors[t]);
  }
  ss << ") {\n";
  for (const Expr* expr : fusion.exprs()) {
    if (expr->output(0)->is<TensorView>()) {
      ss << "  " << expr_statement(*expr, is_value_input);
    }
  }
  for (size_t t = input_count; t < tensors.size(); ++t) {
    ss << "  out_" << name_of_value(tensors[t]) << " = "
       << name_of_value(tensors[t]) << ";\n";
  }
  ss << "}\n";
  return ss.str();
}

}  // namespace nvfuse
