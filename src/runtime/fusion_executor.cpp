#include "runtime/fusion_executor.h"

#include <algorithm>
#include <sstream>

#include "ir/dump.h"
#include "passes/pass_list.h"
#include "runtime/compile_ahead.h"
#include "runtime/coordinate_executor.h"
#include "runtime/cuda/kernel_cache.h"
#include "runtime/cuda/nvtx_range.h"
#include "runtime/host_timing.h"
#include "runtime/input_binding.h"
#include "runtime/kernel_pending.h"
#include "runtime/output_allocation.h"
#include "runtime/pointwise_executor.h"
#include "runtime/reduction_executor.h"
#include "runtime/reference_evaluator.h"
#include "runtime/runtime_program.h"
#include "runtime/small_output_blocks.h"
#include "schedule/reduction_analysis.h"
#include "segment/fusion_plan.h"
#include "segment/kernel_choice.h"

namespace nvfuse {

namespace {

// The executor of the generated kernel `choice` names for `fusion`.
std::unique_ptr<KernelExecutor> kernel_executor_for(const Fusion& fusion, KernelChoice choice) {
  switch (choice.kind) {
    case KernelKind::kReduction:
      return ReductionExecutor::create(
          fusion, std::move(std::get<ReductionAnalysis>(choice.analysis)));
    case KernelKind::kPointwise:
      return PointwiseExecutor::create(
          fusion, std::move(std::get<PointwiseAnalysis>(choice.analysis)));
    case KernelKind::kCoordinate:
      return CoordinateExecutor::create(
          fusion, std::move(std::get<CoordinateAnalysis>(choice.analysis)));
  }
  return nullptr;
}

}  // namespace

std::vector<FusionExecutor::Segment> FusionExecutor::segments_from(
    std::vector<KernelSegment> planned) {
  std::vector<Segment> segments;
  for (KernelSegment& p : planned) {
    Segment segment;
    segment.owned = std::move(p.owned);
    segment.fusion = segment.owned != nullptr ? segment.owned.get() : fusion_.get();
    if (p.choice.has_value()) {
      segment.kernel = kernel_executor_for(*segment.fusion, std::move(*p.choice));
    }
    segment.kind = std::move(p.kind);
    segment.why_no_kernel = std::move(p.why_no_kernel);
    segment.outputs = std::move(p.outputs);
    segments.push_back(std::move(segment));
  }
  return segments;
}

void FusionExecutor::take_kernel_segments(KernelSegmentPlan plan) {
  segments_ = segments_from(std::move(plan.segments));
  fallback_ = segments_from(std::move(plan.fallback));
}

std::string FusionExecutor::segment_header(const Segment& segment, size_t segment_count) const {
  if (segment_count == 1) {
    return "";
  }
  std::string header = "// ==== nvfuse segment: outputs";
  for (size_t i : segment.outputs) {
    header += " " + std::to_string(i);
  }
  return header + " ====\n";
}

FusionExecutor::FusionExecutor(const Fusion& definition) : fusion_(definition.clone()) {
  if (dump_enabled(DumpOption::fusion_ir)) {
    dump("fusion_ir", definition.to_string());
  }
  run_presegmentation_passes(*fusion_);
  FusionPlan plan = plan_fusion(*fusion_);
  if (plan.parts.empty()) {
    take_kernel_segments(std::move(plan.kernels));
  } else {
    add_parts(std::move(plan.parts));
  }
  compiles_ahead_ = kernel_segment_count() >= 2 && may_compile_ahead(*fusion_);
  if (dump_enabled(DumpOption::segments)) {
    dump_segments();
  }
}

size_t FusionExecutor::kernel_segment_count() const {
  size_t count = 0;
  for (const Part& part : parts_) {
    count += part.executor->kernel_segment_count();
  }
  for (const Segment& s : segments_) {
    count += s.kernel != nullptr ? 1 : 0;
  }
  return count;
}

void FusionExecutor::add_parts(std::vector<FusionSegment> plans) {
  for (FusionSegment& plan : plans) {
    // The piece went through the passes with the whole fusion.
    std::unique_ptr<FusionExecutor> executor(
        new FusionExecutor(std::move(plan.fusion), plan.is_host_view));
    parts_.push_back({std::move(plan), std::move(executor)});
  }
  std::vector<const FusionSegment*> planned;
  for (const Part& part : parts_) {
    planned.push_back(&part.plan);
  }
  program_ = build_runtime_program(*fusion_, planned);
}

FusionExecutor::FusionExecutor(std::unique_ptr<Fusion> part, bool is_host_view)
    : fusion_(std::move(part)) {
  if (!is_host_view) {
    take_kernel_segments(plan_kernel_segments(*fusion_));
    return;
  }
  Segment view;
  view.fusion = fusion_.get();
  view.kind = "view";
  view.why_no_kernel = "a bookended view runs as an ATen view";
  for (size_t i = 0; i < fusion_->outputs().size(); ++i) {
    view.outputs.push_back(i);
  }
  segments_.push_back(std::move(view));
}

namespace {

std::vector<std::string> tensor_op_names(const Fusion& fusion) {
  std::vector<std::string> names;
  for (const Expr* expr : fusion.exprs()) {
    if (expr->output(0)->is<TensorView>()) {
      names.push_back(expr->op_name());
    }
  }
  return names;
}

}  // namespace

std::vector<std::pair<std::string, std::vector<std::string>>> FusionExecutor::segment_summary()
    const {
  if (parts_.empty()) {
    return {{"fused", tensor_op_names(*fusion_)}};
  }
  std::vector<std::pair<std::string, std::vector<std::string>>> summary;
  for (const Part& part : parts_) {
    summary.emplace_back(kind_name(part.plan), tensor_op_names(part.executor->prepared_fusion()));
  }
  return summary;
}

void FusionExecutor::dump_segments() const {
  std::ostringstream ss;
  if (!parts_.empty()) {
    ss << parts_.size()
       << " segment(s), cut at the ATen ops and where one kernel cannot take "
          "the whole:\n";
    std::string kind;
    std::string why_not_whole;
    if (!choose_kernel(*fusion_, &kind, &why_not_whole).has_value()) {
      ss << "  (not one kernel: " << why_not_whole << ")\n";
    }
    for (const Part& part : parts_) {
      const Fusion& piece = part.executor->prepared_fusion();
      ss << "  " << (part.plan.is_host_view ? "view: " : part.plan.is_aten ? "ATen: " : "fused: ");
      for (const std::string& name : tensor_op_names(piece)) {
        ss << name << " ";
      }
      const Segment& inner = part.executor->segments_.front();
      ss << "-> "
         << (part.executor->segments_.size() > 1
                    ? std::to_string(part.executor->segments_.size()) + " kernels"
                    : inner.kernel != nullptr ? "a generated " + inner.kind + " kernel"
                    : part.plan.is_host_view  ? "a zero-copy ATen view on the host"
                                              : "the ATen reference evaluator")
         << "\n";
    }
    ss << "  runtime program (value slots %i, freed after their last reader):\n";
    std::istringstream lines(program_.to_string());
    for (std::string line; std::getline(lines, line);) {
      ss << "    " << line << "\n";
    }
    dump("segments", ss.str() + compile_ahead_note());
    return;
  }
  ss << segments_.size() << " segment(s):\n";
  for (const Segment& s : segments_) {
    ss << "  outputs";
    for (size_t i : s.outputs) {
      ss << " " << i;
    }
    ss << ": "
       << (s.kernel != nullptr ? "a generated " + s.kind + " kernel (on CUDA inputs)"
                               : "the ATen reference evaluator (the " + s.kind +
                      " scheduler rejects it: " + s.why_no_kernel + ")")
       << "\n";
  }
  if (!fallback_.empty()) {
    ss << "  (inputs the kernel declines run as " << fallback_.size()
       << " segments, one per reduction class)\n";
  }
  dump("segments", ss.str() + compile_ahead_note());
}

std::string FusionExecutor::compile_ahead_note() const {
  const size_t kernels = kernel_segment_count();
  if (kernels < 2) {
    return "";
  }
  return "  its " + std::to_string(kernels) + " kernels compile " +
      (compiles_ahead_ ? "side by side on the call that first needs them (compile ahead)\n"
                       : "one after another: it writes an input in place or draws random "
                         "numbers, which a compile-ahead pass would do twice\n");
}

namespace {

// The position of a tensor argument without elements, if any. Such calls
// run on the ATen reference evaluator: a kernel's launch geometry has no
// room for zero-size extents (no blocks to launch, yet a sum over an empty
// axis must still write its identity), and ATen computes them as torch.
std::optional<size_t> empty_tensor_argument(const std::vector<Argument>& args) {
  for (size_t i = 0; i < args.size(); ++i) {
    const auto* t = std::get_if<at::Tensor>(&args[i]);
    if (t != nullptr && t->numel() == 0) {
      return i;
    }
  }
  return std::nullopt;
}

}  // namespace

std::string FusionExecutor::cuda_code_for(const std::vector<Argument>& args) {
  if (const auto empty = empty_tensor_argument(args)) {
    NVFUSE_UNSUPPORTED("no generated kernel for these inputs: input ", *empty,
        " has no elements, so the fusion runs on the ATen reference evaluator");
  }
  if (!parts_.empty()) {
    // Later parts need the boundary values of earlier ones: run them.
    std::string code;
    std::vector<bool> from_kernel;
    c10::Device device(c10::kCPU);
    compute_parts(args, from_kernel, device, &code);
    return code;
  }
  const auto code_of = [&](std::vector<Segment>& segments) {
    std::string code;
    for (Segment& s : segments) {
      BoundInputs bound = bind_inputs(*s.fusion, args);
      NVFUSE_CHECK_AS(ErrorKind::kUnsupported, s.kernel != nullptr,
          "this fusion runs on the ATen reference evaluator, not a generated "
          "kernel: the schedulers reject it (",
          s.why_no_kernel, ")");
      code += segment_header(s, segments.size()) + s.kernel->cuda_code_for(args, bound);
    }
    return code;
  };
  if (fallback_.empty()) {
    return code_of(segments_);
  }
  try {
    return code_of(segments_);
  } catch (const Error& e) {
    if (e.kind() != ErrorKind::kUnsupported) {
      throw;
    }
    try {
      return code_of(fallback_);  // the one kernel declines these inputs
    } catch (const Error& fallback_error) {
      if (fallback_error.kind() != ErrorKind::kUnsupported) {
        throw;
      }
      // Both reasons: why the one kernel declined, then why its pieces do.
      NVFUSE_UNSUPPORTED(e.what(), "; split one per reduction class: ", fallback_error.what());
    }
  }
}

std::string FusionExecutor::last_cuda_code() const {
  if (!parts_.empty()) {
    std::string code;
    for (const Part& part : parts_) {
      const std::string last = part.executor->last_cuda_code();
      code += last.empty() ? last : "// ==== nvfuse segment: fused ====\n" + last;
    }
    return code;
  }
  const std::vector<Segment>& segments = last_ran_fallback_ ? fallback_ : segments_;
  std::string code;
  for (const Segment& s : segments) {
    if (s.kernel != nullptr) {
      const std::string last = s.kernel->last_cuda_code();
      code += last.empty() ? last : segment_header(s, segments.size()) + last;
    }
  }
  return code;
}

cuda_driver::FunctionResources FusionExecutor::last_resources() const {
  // The largest over the segments' kernels.
  cuda_driver::FunctionResources most;
  for (const Part& part : parts_) {
    const auto r = part.executor->last_resources();
    most.registers = std::max(most.registers, r.registers);
    most.local_bytes = std::max(most.local_bytes, r.local_bytes);
  }
  for (const Segment& s : last_ran_fallback_ ? fallback_ : segments_) {
    if (s.kernel != nullptr) {
      const auto r = s.kernel->last_resources();
      most.registers = std::max(most.registers, r.registers);
      most.local_bytes = std::max(most.local_bytes, r.local_bytes);
    }
  }
  return most;
}

std::vector<at::Tensor> FusionExecutor::compute_segments(
    const std::vector<Argument>& args, std::vector<bool>& from_kernel, c10::Device& device) {
  std::vector<at::Tensor> values(fusion_->outputs().size());
  from_kernel.assign(values.size(), false);
  last_ran_fallback_ = false;
  for (Segment& s : segments_) {
    if (!run_segment(s, args, !fallback_.empty(), values, from_kernel, device)) {
      last_ran_fallback_ = true;
      for (Segment& part : fallback_) {
        run_segment(part, args, false, values, from_kernel, device);
      }
    }
  }
  return values;
}

std::string FusionExecutor::fused_part_code(Part& part, const std::vector<Argument>& args) {
  std::string code = "// ==== nvfuse segment: fused ====\n";
  try {
    return code + part.executor->cuda_code_for(args);
  } catch (const Error& e) {
    if (e.kind() != ErrorKind::kUnsupported) {
      throw;
    }
    return code + "// (runs on the ATen reference evaluator: " + e.what() + ")\n";
  }
}

std::vector<at::Tensor> FusionExecutor::compute_parts(const std::vector<Argument>& args,
    std::vector<bool>& from_kernel, c10::Device& device, std::string* code) {
  check_argument_count(*fusion_, args);  // parts bind only what they use
  // Parts without tensors run there too; a fusion that reads no tensor (or
  // only CPU scalars) runs where the caller asked.
  device = device_of_arguments(*fusion_, args, device);
  std::vector<at::Tensor> slots(program_.slot_count);
  std::vector<bool> slot_from_kernel(program_.slot_count, false);
  std::vector<Argument> piece_args;
  for (size_t p = 0; p < program_.steps.size(); ++p) {
    const ProgramStep& step = program_.steps[p];  // runs part p
    Part& part = parts_[p];
    piece_args.clear();
    for (const ValueSource& source : step.sources) {
      piece_args.push_back(value_of(source, args, slots));
    }
    if (code != nullptr) {
      if (!part.plan.is_aten) {
        *code += fused_part_code(part, piece_args);
      }
      if (p + 1 == program_.steps.size()) {
        return {};  // nothing after the last part needs its values
      }
    }
    std::vector<bool> part_from_kernel;
    std::vector<at::Tensor> produced = part.executor->compute(piece_args, part_from_kernel, device);
    for (size_t j = 0; j < produced.size(); ++j) {
      slots[step.destinations[j]] = std::move(produced[j]);
      // A bookended view is returned as the view it is (an alias).
      slot_from_kernel[step.destinations[j]] = part_from_kernel[j] || part.plan.is_host_view;
    }
    for (size_t slot : step.frees) {
      slots[slot].reset();  // no later step reads it: the allocator may reuse it
    }
  }
  std::vector<at::Tensor> outputs;
  from_kernel.clear();
  for (const ValueSource& source : program_.outputs) {
    if (source.from_argument) {
      NVFUSE_INPUT_CHECK(std::holds_alternative<at::Tensor>(args[source.index]), "input ",
          source.index, " is returned as an output, so it must be a tensor; got a scalar");
    }
    outputs.push_back(
        source.from_argument ? std::get<at::Tensor>(args[source.index]) : slots[source.index]);
    from_kernel.push_back(!source.from_argument && slot_from_kernel[source.index]);
  }
  return outputs;
}

std::vector<at::Tensor> FusionExecutor::compute(
    const std::vector<Argument>& args, std::vector<bool>& from_kernel, c10::Device& device) {
  return parts_.empty() ? compute_segments(args, from_kernel, device)
                        : compute_parts(args, from_kernel, device);
}

std::vector<at::Tensor> FusionExecutor::compute_compiling_ahead(
    const std::vector<Argument>& args, std::vector<bool>& from_kernel, c10::Device& device) {
  if (!compiles_ahead_ || !compile_ahead() || tiered_compile()) {
    return compute(args, from_kernel, device);
  }
  const c10::Device asked = device;
  try {
    const CompileAheadScope first_pass;
    std::vector<at::Tensor> values = compute(args, from_kernel, device);
    if (first_pass.deferred() == 0) {
      return values;  // every kernel was compiled: this is the call
    }
  } catch (...) {
    // The first pass runs deferred segments on ATen, which may need more
    // memory than their kernels or refuse what they take; the real pass
    // alone says whether the call fails (bad inputs fail it the same way).
  }
  // The kernels the first pass lacked compile side by side now; the real
  // pass waits for each in turn.
  device = asked;
  return compute(args, from_kernel, device);
}

std::vector<at::Tensor> FusionExecutor::execute(
    const std::vector<Argument>& args, c10::Device device) {
  const auto& fusion_outputs = fusion_->outputs();
  // A kernel wrote fresh tensors laid out by their allocation domains; the
  // reference evaluator's values may be views of inputs or laid out by ATen.
  std::vector<bool> from_kernel;
  // Where asked, a call's small outputs share blocks; one block, of the
  // last call's size, once the sizes repeat. Bounded: each output held for
  // long (a saved statistic) holds its whole block.
  constexpr int64_t kLargestFirstBlock = 256 * 1024;
  std::optional<SmallOutputBlocks> small_outputs;
  if (shared_small_outputs()) {
    small_outputs.emplace(small_output_bytes_.load(std::memory_order_relaxed));
  }
  std::vector<at::Tensor> values = compute_compiling_ahead(args, from_kernel, device);
  if (small_outputs.has_value()) {
    small_output_bytes_.store(
        std::min(small_outputs->carved_bytes(), kLargestFirstBlock), std::memory_order_relaxed);
  }
  const HostStepTimer step("09 lay out outputs");
  std::vector<at::Tensor> input_tensors;  // for materialize_output, on demand
  auto inputs_of_args = [&]() -> const std::vector<at::Tensor>& {
    if (input_tensors.empty()) {
      for (const Argument& arg : args) {
        if (const auto* t = std::get_if<at::Tensor>(&arg)) {
          input_tensors.push_back(*t);
        }
      }
    }
    return input_tensors;
  };

  std::vector<at::Tensor> outputs;
  for (size_t i = 0; i < fusion_outputs.size(); ++i) {
    const auto& tv = *fusion_outputs[i]->as<TensorView>();
    if (TensorView* target = fusion_->aliased_input(&tv)) {
      const auto& inputs = fusion_->inputs();
      const size_t index = std::find(inputs.begin(), inputs.end(), target) - inputs.begin();
      at::Tensor destination = std::get<at::Tensor>(args[index]);
      NVFUSE_INPUT_CHECK(destination.sizes() == values[i].sizes(), "input ", index,
          " is updated in place by an output of shape ", values[i].sizes(), " but has shape ",
          destination.sizes());
      if (!values[i].is_same(destination)) {  // a kernel that wrote it directly
        destination.copy_(values[i]);
      }
      continue;
    }
    if (fusion_->is_input(&tv) || from_kernel[i]) {
      outputs.push_back(values[i]);  // an input returned as is, or final
      continue;
    }
    outputs.push_back(materialize_output(tv, values[i], inputs_of_args(), device));
  }
  return outputs;
}

namespace {

std::string describe_arguments(const std::vector<Argument>& args) {
  std::ostringstream ss;
  for (size_t i = 0; i < args.size(); ++i) {
    if (const auto* t = std::get_if<at::Tensor>(&args[i])) {
      ss << "\n  input " << i << ": " << c10::toString(t->scalar_type()) << " sizes " << t->sizes()
         << " strides " << t->strides();
    }
  }
  return ss.str();
}

}  // namespace

// A generated kernel that declines its inputs at run time leaves the segment
// to the reference evaluator (ATen calls): correct, and far slower, so the
// launch dump says so.
void FusionExecutor::dump_declined(const Segment& s, const std::vector<Argument>& args) const {
  std::ostringstream ss;
  ss << "the generated " << s.kind << " kernel of [";
  for (const std::string& name : tensor_op_names(*s.fusion)) {
    ss << " " << name;
  }
  ss << " ] declined these inputs; the reference evaluator (ATen) runs it"
     << describe_arguments(args);
  dump("launch", ss.str());
}

bool FusionExecutor::run_segment(Segment& s, const std::vector<Argument>& args, bool may_decline,
    std::vector<at::Tensor>& values, std::vector<bool>& from_kernel, c10::Device& device) {
  const NvtxRange range("nvfuse segment", s.kind);
  // Every segment keeps all the fusion's inputs: binding validates them.
  std::optional<HostStepTimer> step("04 bind inputs");
  BoundInputs bound = s.binding->bind(*s.fusion, args, device);
  step.emplace("05 kernel or reference run (all of it)");
  device = bound.device;
  std::optional<std::vector<at::Tensor>> kernel_values;
  if (bound.device.is_cuda() && s.kernel != nullptr && !empty_tensor_argument(args).has_value()) {
    take_kernel_pending();
    kernel_values = s.kernel->run(args, bound);
    // A kernel still compiling (tiered compilation) runs the segment on the
    // reference evaluator; another decline is for these inputs' shapes.
    if (!kernel_values.has_value() && may_decline && !take_kernel_pending()) {
      return false;
    }
  }
  const bool kernel = kernel_values.has_value();
  if (!kernel && s.kernel != nullptr && bound.device.is_cuda() &&
      dump_enabled(DumpOption::launch)) {
    dump_declined(s, args);
  }
  std::vector<at::Tensor> segment_values;
  if (kernel) {
    segment_values = std::move(*kernel_values);
  } else {
    // Host views and ATen segments (and declined kernels) run here: their
    // own line in NVFUSE_DUMP=host_time, apart from the generated kernels'.
    const HostStepTimer reference("05r reference evaluator (ATen, views)");
    segment_values = ReferenceEvaluator(*s.fusion, bound.device).run(args);
  }
  for (size_t j = 0; j < s.outputs.size(); ++j) {
    values[s.outputs[j]] = std::move(segment_values[j]);
    from_kernel[s.outputs[j]] = kernel;
  }
  return true;
}

std::shared_ptr<FusionExecutor> executor_for(CachedFusion& entry) {
  NVFUSE_CHECK_AS(ErrorKind::kUnsupported, !entry.sharded,
      "this fusion is sharded over a device mesh; its per-process segments are "
      "not inspectable this way yet (NVFUSE_DUMP=host_ir prints its host program)");
  return FusionCache::get().runtime_state_of<FusionExecutor>(entry);
}

}  // namespace nvfuse
