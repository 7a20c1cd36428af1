// FusionExecutor::segment_definitions: the segments execute() runs, printed
// back as Python definitions for fd.segment().
#include <algorithm>

#include "frontend/fusion_to_python.h"
#include "runtime/fusion_executor.h"
#include "runtime/input_binding.h"

namespace nvfuse {

namespace {

// Binds the root sizes (and scalar values) of `fusion`'s first
// `args.size()` inputs from the call's arguments: enough to evaluate every
// size of a segment, whose other inputs' sizes derive from these.
void bind_leading_inputs(
    const Fusion& fusion, const std::vector<const Argument*>& args, ExpressionEvaluator& sizes) {
  for (size_t i = 0; i < args.size(); ++i) {
    const Val* input = fusion.inputs()[i];
    if (const auto* value = std::get_if<ScalarValue>(args[i])) {
      if (input->is<Scalar>() && !sizes.is_bound(input->as<Scalar>())) {
        sizes.bind(input->as<Scalar>(), *value);
      }
      continue;
    }
    const at::Tensor& tensor = std::get<at::Tensor>(*args[i]);
    const auto& axes = input->as<TensorView>()->logical();
    for (size_t a = 0; a < axes.size(); ++a) {
      const Scalar* extent = axes[a]->logical_extent();
      if (!extent->is_constant() && extent->definition() == nullptr && !sizes.is_bound(extent)) {
        sizes.bind(extent, ScalarValue(static_cast<int64_t>(tensor.size(a))));
      }
    }
  }
}

std::string python_of(const Fusion& fusion, ExpressionEvaluator& sizes) {
  return fusion_to_python(fusion, [&](const Scalar* s) -> std::optional<int64_t> {
    const std::optional<ScalarValue> value = sizes.evaluate(s);
    if (!value.has_value() || !value->is_int()) {
      return std::nullopt;
    }
    return value->as_int();
  });
}

std::vector<int64_t> positions_of(const Fusion& fusion, const Val* value) {
  std::vector<int64_t> positions;
  for (size_t p = 0; p < fusion.outputs().size(); ++p) {
    if (fusion.outputs()[p] == value) {
      positions.push_back(static_cast<int64_t>(p));
    }
  }
  return positions;
}

}  // namespace

std::vector<FusionExecutor::SegmentDefinition> FusionExecutor::segment_definitions(
    const std::vector<Argument>& args) const {
  // Validates the arguments (typed errors naming the input).
  BoundInputs bound = bind_inputs(*fusion_, args);
  std::vector<SegmentDefinition> definitions;
  if (parts_.empty()) {
    SegmentDefinition whole;
    whole.kind = "fused";
    whole.python = python_of(*fusion_, bound.extents);
    for (size_t i = 0; i < fusion_->inputs().size(); ++i) {
      whole.sources.emplace_back(-1, static_cast<int64_t>(i));
    }
    for (const Val* out : fusion_->outputs()) {
      whole.destinations.push_back(positions_of(*fusion_, out));
    }
    definitions.push_back(std::move(whole));
    return definitions;
  }
  for (const Part& part : parts_) {
    const Fusion& piece = part.executor->prepared_fusion();
    SegmentDefinition definition;
    definition.kind = kind_name(part.plan);
    std::vector<const Argument*> kept;
    for (size_t position : part.plan.inputs) {
      kept.push_back(&args[position]);
      definition.sources.emplace_back(-1, static_cast<int64_t>(position));
    }
    for (const Val* boundary : part.plan.boundary) {
      for (size_t j = 0; j < parts_.size(); ++j) {
        const auto& outs = parts_[j].plan.outputs;
        const auto it = std::find(outs.begin(), outs.end(), boundary);
        if (it != outs.end()) {
          definition.sources.emplace_back(static_cast<int64_t>(j), it - outs.begin());
          break;
        }
      }
    }
    NVFUSE_ASSERT(definition.sources.size() == piece.inputs().size(),
        "fd.segment: a segment input has no producer");
    ExpressionEvaluator sizes;
    bind_leading_inputs(piece, kept, sizes);
    definition.python = python_of(piece, sizes);
    for (const Val* out : part.plan.outputs) {
      definition.destinations.push_back(positions_of(*fusion_, out));
    }
    definitions.push_back(std::move(definition));
  }
  return definitions;
}

}  // namespace nvfuse
