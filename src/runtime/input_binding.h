// Checks execute()'s arguments against the fusion's inputs and binds their
// sizes to the symbolic extents. Every mismatch is a typed error naming the
// input, what the definition expects and what was given.
#pragma once

#include <c10/core/Device.h>

#include <vector>

#include "ir/expression_evaluator.h"
#include "ir/fusion.h"
#include "runtime/aten_types.h"

namespace nvfuse {

struct BoundInputs {
  ExpressionEvaluator extents;
  // Where the fusion runs: the device of the tensor inputs (is_cpu scalars
  // aside); the CPU when there are none.
  c10::Device device = c10::Device(c10::kCPU);
};

// `device` is where the fusion runs when no tensor input says (a part of a
// cut fusion that reads no tensor runs where the whole fusion does).
BoundInputs bind_inputs(const Fusion& fusion, const std::vector<Argument>& args,
    c10::Device device = c10::Device(c10::kCPU));

// The device of the first tensor input that is not a CPU scalar
// (`fallback`, where the caller asked the fusion to run, when there is
// none), without validating anything.
c10::Device device_of_arguments(
    const Fusion& fusion, const std::vector<Argument>& args, c10::Device fallback);

// An InputError listing the expected inputs unless there is one argument
// per fusion input (bind_inputs checks it too).
void check_argument_count(const Fusion& fusion, const std::vector<Argument>& args);

// "a Float tensor defined with shape=[-1, 1]" / "an Int scalar".
std::string describe_input(const Val& input);

}  // namespace nvfuse
