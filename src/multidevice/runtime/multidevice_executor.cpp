#include "multidevice/runtime/multidevice_executor.h"

#include <algorithm>
#include <sstream>
#include <unordered_set>

#include "ir/all_exprs.h"
#include "ir/dump.h"
#include "ir/errors.h"
#include "ir/printer.h"
#include "multidevice/local_shard.h"
#include "multidevice/localize.h"
#include "multidevice/runtime/host/lower_allgather_gemm.h"
#include "multidevice/runtime/host/lower_allgather_gemm_by_copy_engine.h"
#include "multidevice/runtime/host/lower_gemm_reduce_scatter_by_copy_engine.h"
#include "multidevice/runtime/host/lower_gemm_reduce_scatter.h"
#include "multidevice/overlap_backend.h"
#include "multidevice/runtime/host/run_host_instructions.h"
#include "multidevice/runtime/host/symmetric_memory.h"
#include "passes/pass_list.h"
#include "runtime/input_binding.h"

namespace nvfuse {

namespace {

// Per output: the position of the input it updates in place, if any.
std::vector<std::optional<size_t>> in_place_targets(const Fusion& fusion) {
  std::vector<std::optional<size_t>> targets;
  const auto& inputs = fusion.inputs();
  for (const Val* out : fusion.outputs()) {
    const TensorView* target = fusion.aliased_input(out);
    targets.push_back(target == nullptr
            ? std::nullopt
            : std::optional<size_t>(
                  std::find(inputs.begin(), inputs.end(), target) - inputs.begin()));
  }
  return targets;
}

}  // namespace

MultiDeviceExecutor::MultiDeviceExecutor(const Fusion& definition) : fusion_(definition.clone()) {
  // Before insert_communications, which may replace outputs (and drops
  // their aliases; positions stay).
  in_place_ = in_place_targets(*fusion_);
  const auto stream_annotations = take_stream_annotations(*fusion_);
  run_sharding_passes(*fusion_);
  check_in_place_shardings();
  for (TensorView* tv : tensors_of(*fusion_)) {
    NVFUSE_CHECK(tv->device_mesh().has_value(), tv->name(),
        " has no device mesh and none reaches it from its neighbours; give it one "
        "with set_device_mesh");
    sharding_of(*tv);  // rejects malformed DID axes, naming the tensor
    for (int64_t device : tv->device_mesh()->devices()) {
      if (device > max_device_) {
        max_device_ = device;
        max_device_tensor_ = tv->name();
      }
    }
  }
  for (const Val* in : fusion_->inputs()) {
    input_shardings_.push_back(
        in->is<TensorView>() ? sharding_of(*in->as<TensorView>()) : Sharding{});
  }
  host_steps_ = insert_communications(*fusion_);
  lower_pipelines(stream_annotations);
  std::unordered_map<const Expr*, const Communication*> communication_of;
  std::unordered_set<const Expr*> cuts;
  for (const Communication& comm : host_steps_.communications) {
    communication_of[comm.expr] = &comm;
    cuts.insert(comm.expr);
  }
  for (const auto& [gemm, program] : pipeline_of_gemm_) {
    cuts.insert(gemm);
  }
  cuts.insert(host_steps_.local_slices.begin(), host_steps_.local_slices.end());
  std::vector<FusionSegment> plans = segment_at_host_steps(*fusion_, cuts);
  if (plans.empty()) {
    FusionSegment whole;
    whole.fusion = fusion_->clone();
    for (size_t i = 0; i < fusion_->inputs().size(); ++i) {
      whole.inputs.push_back(i);
    }
    whole.outputs.assign(fusion_->outputs().begin(), fusion_->outputs().end());
    plans.push_back(std::move(whole));
  }
  for (FusionSegment& plan : plans) {
    Step step;
    const Expr* def = plan.outputs.front()->definition();
    if (pipelined_communications_.count(def)) {
      continue;  // run by its pipelined loop
    }
    if (auto pipeline = pipeline_of_gemm_.find(def); pipeline != pipeline_of_gemm_.end()) {
      step.pipeline = pipeline->second;
      if (auto copy_engine = copy_engine_of_gemm_.find(def);
          copy_engine != copy_engine_of_gemm_.end()) {
        step.copy_engine_pipeline = copy_engine->second;
      }
    } else if (plan.is_aten && def != nullptr && cuts.count(def)) {
      auto it = communication_of.find(def);
      if (it != communication_of.end()) {
        step.communication = it->second;
      } else {
        step.local_slice = def;
        step.slice = sharding_of(*def->output(0)->as<TensorView>());
        const Sharding before = sharding_of(*def->input(0)->as<TensorView>());
        for (size_t a = 0; a < step.slice.mesh_axis.size(); ++a) {
          if (step.slice.mesh_axis[a] >= 0 && before.mesh_axis[a] < 0) {
            step.sliced_axes.push_back(static_cast<int64_t>(a));
          }
        }
      }
    } else {
      step.mesh = plan.outputs.front()->as<TensorView>()->device_mesh();
      localize(*plan.fusion);
      step.executor = std::make_unique<FusionExecutor>(*plan.fusion);
    }
    step.plan = std::move(plan);
    steps_.push_back(std::move(step));
  }
  if (dump_enabled(DumpOption::host_ir) || dump_enabled(DumpOption::communication)) {
    dump("host_ir", host_program());
  }
}

void MultiDeviceExecutor::lower_pipelines(
    const std::unordered_map<const TensorView*, StreamChunks>& annotations) {
  for (const Communication& comm : host_steps_.communications) {
    std::optional<HostLoopProgram> program = lower_allgather_gemm(*fusion_, comm, annotations);
    if (!program.has_value()) {
      program = lower_gemm_reduce_scatter(*fusion_, comm, annotations);
    }
    if (program.has_value()) {
      pipelined_communications_.insert(comm.expr);
      const Expr* gemm = program->gemm;
      pipeline_of_gemm_[gemm] = std::make_shared<const HostLoopProgram>(std::move(*program));
      std::optional<HostLoopProgram> copy_engine =
          lower_allgather_gemm_by_copy_engine(*fusion_, comm);
      if (!copy_engine.has_value()) {
        copy_engine = lower_gemm_reduce_scatter_by_copy_engine(*fusion_, comm);
      }
      if (copy_engine.has_value()) {
        copy_engine_of_gemm_[gemm] =
            std::make_shared<const HostLoopProgram>(std::move(*copy_engine));
      }
    }
  }
}

const HostLoopProgram& MultiDeviceExecutor::printed_pipeline(const Step& step) {
  const bool copy_engine =
      overlap_backend() == OverlapBackend::kSymmetricMemory && step.copy_engine_pipeline != nullptr;
  return copy_engine ? *step.copy_engine_pipeline : *step.pipeline;
}

const HostLoopProgram& MultiDeviceExecutor::pipeline_for_call(
    const Step& step, const std::vector<at::Tensor>& inputs) const {
  const at::Tensor& a = inputs[0];
  OverlapCall call;
  call.has_copy_engine_loop = step.copy_engine_pipeline != nullptr;
  call.cuda = a.is_cuda();
  call.team_size = step.team.size();
  call.reduce_scatter = step.pipeline->communication->type == CommunicationType::ReduceScatter;
  // The GEMM's first operand: this device's shard of the rows for an
  // all-gather, every destination's rows for a reduce-scatter. Shards are
  // even (local_shard.h refuses uneven splits), so every member of the team
  // counts the same rows and makes the same choice, which the peer
  // question, a collective, and the loops' barriers rely on.
  if (a.dim() > 0 && a.size(-1) > 0) {
    call.rows_per_device = a.numel() / a.size(-1) / (call.reduce_scatter ? call.team_size : 1);
  }
  const bool copy_engine = use_copy_engine(overlap_backend(), call, [&] {
    const SymmetricMemoryHooks& hooks = symmetric_memory_hooks();
    return hooks.peers_reachable && hooks.peers_reachable(a, step.team.group().getGroupName());
  });
  return copy_engine ? *step.copy_engine_pipeline : *step.pipeline;
}

std::string MultiDeviceExecutor::host_program() const {
  std::ostringstream ss;
  for (const Step& step : steps_) {
    if (step.pipeline != nullptr) {
      ss << "  " << printed_pipeline(step).to_string("    ");
      if (overlap_backend() == OverlapBackend::kAuto && step.copy_engine_pipeline != nullptr) {
        ss << "  or, on GPUs that read each other's memory where the copy engine pays off "
              "(overlap backend \"auto\"):\n    "
           << step.copy_engine_pipeline->to_string("      ");
      }
    } else if (step.communication != nullptr) {
      ss << "  communicate: " << step.communication->to_string() << " -> "
         << step.communication->expr->output(0)->as<TensorView>()->name() << "\n";
    } else if (step.local_slice != nullptr) {
      ss << "  local slice: " << step.local_slice->input(0)->as<TensorView>()->name() << " -> "
         << step.local_slice->output(0)->as<TensorView>()->name() << " ("
         << sharding_of(*step.local_slice->output(0)->as<TensorView>()).to_string() << ")\n";
    } else {
      ss << "  compute on " << *step.mesh << ":";
      for (const Val* out : step.plan.outputs) {
        ss << " " << out->as<TensorView>()->name();
      }
      ss << " from";
      for (size_t i : step.plan.inputs) {
        ss << " input " << i;
      }
      for (const Val* b : step.plan.boundary) {
        ss << " " << b->as<TensorView>()->name();
      }
      ss << "\n";
    }
  }
  return ss.str();
}

std::vector<std::pair<int, std::string>> MultiDeviceExecutor::host_outline() const {
  std::vector<std::pair<int, std::string>> outline;
  for (const Step& step : steps_) {
    if (step.pipeline != nullptr) {
      outline.emplace_back(0, "pipeline");
      for (auto [depth, kind] : printed_pipeline(step).outline()) {
        outline.emplace_back(depth + 1, std::move(kind));
      }
    } else {
      outline.emplace_back(0,
          step.communication != nullptr     ? "communicate"
              : step.local_slice != nullptr ? "local slice"
                                            : "compute");
    }
  }
  return outline;
}

std::vector<Sharding> MultiDeviceExecutor::output_shardings() const {
  std::vector<Sharding> shardings;
  for (const Val* out : fusion_->outputs()) {
    shardings.push_back(sharding_of(*out->as<TensorView>()));
  }
  return shardings;
}

void MultiDeviceExecutor::check_inputs(
    const std::vector<Argument>& args, int64_t world_size) const {
  check_argument_count(*fusion_, args);
  NVFUSE_CHECK_AS(ErrorKind::kInput, max_device_ < world_size, "the mesh of ", max_device_tensor_,
      " needs device ", max_device_, ", but this world has ", world_size, " processes");
  const int64_t me = Communicator::get().rank();
  for (size_t i = 0; i < args.size(); ++i) {
    const Val* input = fusion_->inputs()[i];
    const auto* tensor = std::get_if<at::Tensor>(&args[i]);
    const Sharding& sharding = input_shardings_[i];
    if (!input->is<TensorView>() || tensor == nullptr || !sharding.mesh->contains(me)) {
      continue;
    }
    const auto& tv = *input->as<TensorView>();
    NVFUSE_CHECK_AS(ErrorKind::kInput, tensor->dim() == tv.rank(), "input ", i, " (", tv.name(),
        ") has ", tensor->dim(), " dimensions, but its local shard has ", tv.rank());
    for (int64_t a = 0; a < tv.rank(); ++a) {
      const int m = sharding.mesh_axis[a];
      const auto global = tv.logical()[a]->logical_extent()->constant_int();
      if (m < 0 || !global.has_value()) {
        continue;
      }
      const int64_t devices = sharding.mesh->size(m);
      NVFUSE_CHECK_AS(ErrorKind::kInput, *global % devices == 0, "input ", i, " (", tv.name(),
          "): axis ", a, " of extent ", *global, " does not split evenly over ", devices,
          " devices");
      const int64_t local = sharding.whole_axis[a] ? 1 : *global / devices;
      NVFUSE_CHECK_AS(ErrorKind::kInput, tensor->size(a) == local, "input ", i, " (", tv.name(),
          "): axis ", a, " has extent ", tensor->size(a), ", but it is ", *global, " sharded over ",
          devices, " devices on ", did_of_mesh_axis(m),
          ", so each process passes its local shard of extent ", local);
    }
  }
}

void MultiDeviceExecutor::check_in_place_shardings() const {
  for (size_t o = 0; o < in_place_.size(); ++o) {
    if (!in_place_[o].has_value()) {
      continue;
    }
    const auto& out = *fusion_->outputs()[o]->as<TensorView>();
    const auto& in = *fusion_->inputs()[*in_place_[o]]->as<TensorView>();
    const Sharding out_sharding = sharding_of(out);
    const Sharding in_sharding = sharding_of(in);
    NVFUSE_CHECK_AS(ErrorKind::kUnsupported, out_sharding == in_sharding, "add_output(", out.name(),
        ", alias_input=", in.name(), "): the output is distributed as ", out_sharding.to_string(),
        " but the input it updates as ", in_sharding.to_string(),
        "; an in-place update must keep the input's sharding, so each process "
        "writes its own shard");
  }
}

void MultiDeviceExecutor::prepare_teams(Communicator& communicator) {
  const int64_t generation = communicator.generation();
  if (teams_generation_ == generation) {
    return;
  }
  // Every process creates every team's group, in the same order.
  for (const Communication& comm : host_steps_.communications) {
    for (const auto& team : comm.teams()) {
      if (team.size() > 1) {
        communicator.group(team);
      }
    }
  }
  for (Step& step : steps_) {
    const Communication* comm =
        step.pipeline != nullptr ? step.pipeline->communication : step.communication;
    if (comm != nullptr) {
      step.team = Team(comm->team_of(communicator.rank()), communicator);
    }
  }
  teams_generation_ = generation;
}

at::Tensor MultiDeviceExecutor::run_local_slice(
    const Step& step, const at::Tensor& whole, int64_t device) const {
  if (!step.slice.mesh->contains(device) || !whole.defined()) {
    return at::Tensor();
  }
  at::Tensor local = whole;
  for (int64_t a : step.sliced_axes) {
    const auto [begin, end] = local_range(step.slice, device, a, whole.sizes().vec());
    local = local.narrow(a, begin, end - begin);
  }
  return local;
}

at::Tensor MultiDeviceExecutor::run_pipeline(
    const Step& step, std::vector<at::Tensor> inputs, int64_t me) const {
  // Both loops read the same inputs and make the same result.
  const HostLoopProgram& program = pipeline_for_call(step, inputs);
  HostFrame frame;
  frame.team = &step.team;
  frame.member = step.team.group_rank(me);  // ascending teams: the shard position
  if (step.team.size() > 1) {
    frame.group = step.team.group().getGroupName();
  }
  frame.slots = std::move(inputs);
  frame.slots.resize(program.slot_names.size());
  run_host_loop_program(program, frame);
  return frame.slots[program.result];
}

std::vector<at::Tensor> MultiDeviceExecutor::execute(const std::vector<Argument>& args) {
  Communicator& communicator = Communicator::get();
  NVFUSE_CHECK_AS(ErrorKind::kInput, communicator.is_configured(),
      "this fusion is sharded over a device mesh: run it in a multi-process world "
      "(torchrun) and call nvfuse.multidevice.init() (FusionDefinition.execute does)");
  const int64_t me = communicator.rank();
  check_inputs(args, communicator.world_size());
  prepare_teams(communicator);
  std::unordered_map<const Val*, at::Tensor> values;
  c10::Device tensor_device = c10::kCPU;
  bool found_device = false;
  for (size_t i = 0; i < args.size(); ++i) {
    if (const auto* t = std::get_if<at::Tensor>(&args[i])) {
      values[fusion_->inputs()[i]] = *t;
      if (!found_device && t->defined() && t->dim() > 0) {
        tensor_device = t->device();
        found_device = true;
      }
    }
  }
  // Collectives left in flight, by the value they produce: waited on
  // before that value is read, and all of them before returning.
  std::unordered_map<const Val*, CommunicationWork> in_flight;
  const auto value_of = [&](const Val* v) {
    if (auto work = in_flight.find(v); work != in_flight.end()) {
      work->second->wait();
      in_flight.erase(work);
    }
    auto it = values.find(v);
    return it == values.end() ? at::Tensor() : it->second;
  };
  for (Step& step : steps_) {
    if (step.pipeline != nullptr) {
      if (!step.team.empty()) {
        std::vector<at::Tensor> inputs;
        for (const Val* in : step.pipeline->inputs) {
          inputs.push_back(value_of(in));
        }
        values[step.pipeline->result_value] = run_pipeline(step, std::move(inputs), me);
      }
      continue;
    }
    if (step.communication != nullptr) {
      const Communication& comm = *step.communication;
      if (step.team.empty()) {
        continue;  // this device takes no part
      }
      const CommunicationSite site{
          me, tensor_device, to_aten(comm.tensor->dtype()), comm.tensor->rank()};
      CommunicationWork work;
      values[comm.expr->output(0)] =
          post_communication(comm, step.team, value_of(comm.tensor), site, &work);
      if (work) {
        in_flight[comm.expr->output(0)] = std::move(work);
      }
      continue;
    }
    if (step.local_slice != nullptr) {
      values[step.local_slice->output(0)] =
          run_local_slice(step, value_of(step.local_slice->input(0)), me);
      continue;
    }
    if (!step.mesh->contains(me)) {
      continue;
    }
    std::vector<Argument> step_args;
    for (size_t i : step.plan.inputs) {
      step_args.push_back(args[i]);
    }
    for (const Val* b : step.plan.boundary) {
      at::Tensor value = value_of(b);
      NVFUSE_ASSERT(value.defined(), "no local value of ", b->as<TensorView>()->name());
      step_args.emplace_back(value);
    }
    std::vector<at::Tensor> outs = step.executor->execute(step_args);
    for (size_t i = 0; i < outs.size(); ++i) {
      values[step.plan.outputs[i]] = outs[i];
    }
  }
  for (auto& [value, work] : in_flight) {
    work->wait();
  }
  std::vector<at::Tensor> outputs;
  for (size_t o = 0; o < fusion_->outputs().size(); ++o) {
    auto it = values.find(fusion_->outputs()[o]);
    at::Tensor value = it == values.end() ? at::Tensor() : it->second;
    if (in_place_[o].has_value()) {
      // Written into this process's shard of the input; not returned.
      const auto* shard = std::get_if<at::Tensor>(&args[*in_place_[o]]);
      if (value.defined() && shard != nullptr && shard->defined()) {
        shard->copy_(value);
      }
      continue;
    }
    outputs.push_back(value);
  }
  return outputs;
}

std::shared_ptr<MultiDeviceExecutor> multidevice_executor_for(CachedFusion& entry) {
  return FusionCache::get().runtime_state_of<MultiDeviceExecutor>(entry);
}

}  // namespace nvfuse
