// Runs a sharded fusion in one process of a multi-device world: the host
// program of compute segments (each a FusionExecutor over local shards:
// generated kernels on CUDA, the reference evaluator on CPU) and host steps
// (communications through the c10d communicator, and local slices).
//
// Built once per cached fusion: sharding propagation, decomposition of the
// reshardings (multidevice/insert_communications.h), the cut at the host
// steps (segment/aten_segmenter.h) and localization of each compute
// segment (multidevice/localize.h). Every process builds the same program.
#pragma once

#include <memory>
#include <optional>
#include <string>
#include <unordered_map>
#include <unordered_set>
#include <vector>

#include "frontend/fusion_cache.h"
#include "ir/sharding.h"
#include "multidevice/insert_communications.h"
#include "multidevice/runtime/host/host_instructions.h"
#include "multidevice/stream_chunks.h"
#include "multidevice/runtime/post_communication.h"
#include "runtime/aten_types.h"
#include "runtime/fusion_executor.h"

namespace nvfuse {

class MultiDeviceExecutor : public RuntimeState {
 public:
  explicit MultiDeviceExecutor(const Fusion& definition);

  // `args`: this process's local shards (and scalars), in definition order.
  // Returns its local shard of each output; undefined for an output whose
  // mesh does not hold this device. An output that updates an input in
  // place (add_output(t, alias_input)) is written into that input's shard
  // and not returned, as on one device.
  std::vector<at::Tensor> execute(const std::vector<Argument>& args);

  // Each input's and output's mesh and sharded axes (after propagation);
  // outputs include the in-place ones.
  const std::vector<Sharding>& input_shardings() const { return input_shardings_; }
  std::vector<Sharding> output_shardings() const;
  bool is_in_place(size_t output) const { return in_place_[output].has_value(); }
  // The host program as text (NVFUSE_DUMP=host_ir).
  std::string host_program() const;
  // The host program as structure: per step its kind ("compute",
  // "communicate", "local slice", "pipeline") and depth 0, a pipeline's
  // instructions after it at depth 1 and more.
  std::vector<std::pair<int, std::string>> host_outline() const;
  const Fusion& prepared_fusion() const { return *fusion_; }

 private:
  struct Step {
    FusionSegment plan;  // compute: the localized fusion, run by `executor`
    std::unique_ptr<FusionExecutor> executor;
    const Communication* communication = nullptr;
    Team team;  // this device's team of `communication`
    const Expr* local_slice = nullptr;
    // A local slice's output sharding, and the axes it slices.
    Sharding slice;
    std::vector<int64_t> sliced_axes;
    // Compute steps run on the devices of this mesh only.
    std::optional<DeviceMesh> mesh;
    // A communication and its GEMM as one pipelined loop (team: its
    // communication's).
    std::shared_ptr<const HostLoopProgram> pipeline;
    // The same with the copy engine, where it applies (symmetric_memory.h).
    std::shared_ptr<const HostLoopProgram> copy_engine_pipeline;
  };
  // The loop a pipeline step runs on these inputs (multidevice/overlap_backend.h).
  const HostLoopProgram& pipeline_for_call(
      const Step& step, const std::vector<at::Tensor>& inputs) const;
  // The loop host_program() and host_outline() show: the copy engine's
  // under "symm_mem", else the c10d loop.
  static const HostLoopProgram& printed_pipeline(const Step& step);

  void check_inputs(const std::vector<Argument>& args, int64_t world_size) const;
  // An in-place output must be distributed as the input it updates.
  void check_in_place_shardings() const;
  // Creates every team's group (all processes, same order) and this
  // device's teams, once per communicator configuration.
  void prepare_teams(Communicator& communicator);
  at::Tensor run_local_slice(const Step& step, const at::Tensor& whole, int64_t device) const;
  // A pipelined loop (the program the backend and the inputs' device
  // choose) on this device's values of its inputs; returns its result.
  at::Tensor run_pipeline(const Step& step, std::vector<at::Tensor> inputs, int64_t me) const;
  // The communications that a pipelined loop takes over, with their GEMM
  // (multidevice/runtime/host/lower_*.h), by the GEMM.
  void lower_pipelines(const std::unordered_map<const TensorView*, StreamChunks>& annotations);

  std::unique_ptr<Fusion> fusion_;
  HostSteps host_steps_;
  std::unordered_map<const Expr*, std::shared_ptr<const HostLoopProgram>> pipeline_of_gemm_;
  std::unordered_map<const Expr*, std::shared_ptr<const HostLoopProgram>> copy_engine_of_gemm_;
  std::unordered_set<const Expr*> pipelined_communications_;
  std::vector<Step> steps_;
  std::vector<Sharding> input_shardings_;
  std::vector<std::optional<size_t>> in_place_;  // per output: the input it updates
  int64_t max_device_ = 0;                       // the highest device id of any mesh
  std::string max_device_tensor_;                // a tensor on a mesh holding it
  int64_t teams_generation_ = -1;
};

// The multi-device executor of a cached fusion, created on first use.
std::shared_ptr<MultiDeviceExecutor> multidevice_executor_for(CachedFusion& entry);

}  // namespace nvfuse
