#include "runtime/runtime_program.h"

#include <algorithm>
#include <sstream>
#include <unordered_map>

namespace nvfuse {

namespace {

bool has_expanded_axis(const TensorView& tv) {
  const auto& axes = tv.logical();
  return std::any_of(
      axes.begin(), axes.end(), [](const auto* axis) { return axis->is_expanded(); });
}

// `value` with stride 0 on the axes that `tv` expands: the values along
// such an axis are all equal, so its first index stands for every index.
at::Tensor as_expanded(const TensorView& tv, const at::Tensor& value) {
  std::vector<int64_t> strides = value.strides().vec();
  bool changed = false;
  for (int64_t axis = 0; axis < tv.rank(); ++axis) {
    if (tv.logical()[axis]->is_expanded() && strides[axis] != 0) {
      strides[axis] = 0;
      changed = true;
    }
  }
  return changed ? value.as_strided(value.sizes(), strides, value.storage_offset()) : value;
}

std::string describe(const ValueSource& source) {
  return source.from_argument ? "arg " + std::to_string(source.index)
                              : "%" + std::to_string(source.index);
}

}  // namespace

Argument value_of(const ValueSource& source, const std::vector<Argument>& args,
    const std::vector<at::Tensor>& slots) {
  if (source.from_argument) {
    return args[source.index];
  }
  const at::Tensor& value = slots[source.index];
  return source.expanded_as != nullptr ? as_expanded(*source.expanded_as, value) : value;
}

RuntimeProgram build_runtime_program(
    const Fusion& fusion, const std::vector<const FusionSegment*>& plans) {
  RuntimeProgram program;
  std::unordered_map<const Val*, ValueSource> where;
  const auto& inputs = fusion.inputs();
  for (size_t i = 0; i < inputs.size(); ++i) {
    where[inputs[i]] = {/*from_argument=*/true, i};
  }
  std::vector<size_t> last_use;  // per slot: the last step reading or making it
  for (size_t p = 0; p < plans.size(); ++p) {
    const FusionSegment& plan = *plans[p];
    ProgramStep step;
    step.kind = kind_name(plan);
    for (size_t position : plan.inputs) {
      step.sources.push_back({/*from_argument=*/true, position});
    }
    for (const Val* boundary : plan.boundary) {
      ValueSource source = where.at(boundary);  // made by an earlier step
      const auto& tv = *boundary->as<TensorView>();
      source.expanded_as = has_expanded_axis(tv) ? &tv : nullptr;
      if (!source.from_argument) {
        last_use[source.index] = p;
      }
      step.sources.push_back(source);
    }
    for (const Val* out : plan.outputs) {
      const size_t slot = program.slot_count++;
      where[out] = {/*from_argument=*/false, slot};
      step.destinations.push_back(slot);
      last_use.push_back(p);
    }
    program.steps.push_back(std::move(step));
  }
  std::vector<bool> returned(program.slot_count, false);
  for (const Val* out : fusion.outputs()) {
    const ValueSource source = where.at(out);
    if (!source.from_argument) {
      returned[source.index] = true;
    }
    program.outputs.push_back(source);
  }
  for (size_t slot = 0; slot < program.slot_count; ++slot) {
    if (!returned[slot]) {
      program.steps[last_use[slot]].frees.push_back(slot);
    }
  }
  return program;
}

std::string RuntimeProgram::to_string() const {
  std::ostringstream ss;
  for (size_t p = 0; p < steps.size(); ++p) {
    const ProgramStep& step = steps[p];
    ss << p << " " << step.kind << " (";
    for (size_t i = 0; i < step.sources.size(); ++i) {
      ss << (i > 0 ? ", " : "") << describe(step.sources[i]);
    }
    ss << ") ->";
    for (size_t slot : step.destinations) {
      ss << " %" << slot;
    }
    if (!step.frees.empty()) {
      ss << "; free";
      for (size_t slot : step.frees) {
        ss << " %" << slot;
      }
    }
    ss << "\n";
  }
  ss << "outputs:";
  for (const ValueSource& source : outputs) {
    ss << " " << describe(source);
  }
  return ss.str() + "\n";
}

}  // namespace nvfuse
