#include "multidevice/runtime/host/lower_allgather_gemm_by_copy_engine.h"

#include <ATen/ATen.h>

#include "ir/all_exprs.h"
#include "ir/sharding.h"
#include "multidevice/runtime/host/lower_allgather_gemm.h"
#include "multidevice/runtime/host/gemm_result.h"
#include "multidevice/runtime/host/run_host_instructions.h"
#include "runtime/aten_types.h"

namespace nvfuse {

std::optional<HostLoopProgram> lower_allgather_gemm_by_copy_engine(
    const Fusion& fusion, const Communication& comm) {
  const Expr* found = gemm_after_allgather(fusion, comm);
  if (found == nullptr || comm.axis != 0 || sharding_of(*comm.tensor).whole_axis[0]) {
    return std::nullopt;
  }
  const Expr& gemm = *found;
  const auto& a = *comm.tensor;
  const auto& out = *gemm.output(0)->as<TensorView>();
  HostLoopProgram p;
  p.title = std::string("pipelined Allgather (copy engine) + ") +
      (gemm.is<LinearOp>() ? "linear" : "matmul");
  p.communication = &comm;
  p.gemm = &gemm;
  p.result_value = &out;
  p.chunk_per_device = true;
  p.fixed_streams = 2;
  p.chunk_source = "one per source device, this one first";
  const Slot a_slot = p.add_slot(a.name());
  const Slot b_slot = p.add_slot(gemm.input(1)->as<TensorView>()->name());
  p.inputs = {&a, gemm.input(1)};
  Slot bias_slot = -1;
  if (gemm.inputs().size() == 3) {
    bias_slot = p.add_slot(gemm.input(2)->as<TensorView>()->name());
    p.inputs.push_back(gemm.input(2));
  }
  const Slot shards = p.add_slot(comm.expr->output(0)->as<TensorView>()->name());
  p.result = p.add_slot(out.name());
  const Slot shard = p.add_slot(a.name() + "_j");
  const Slot out_rows = p.add_slot(out.name() + "_j");

  ForChunks loop;
  loop.first = 1;
  loop.body = {
      SetStream{1},
      PullShard{shard, shards},
      RecordEvent{},
      SetStream{2},
      WaitEvent{},
      ViewChunk{out_rows, p.result, ChunkView::kSourceRows, 0},
      Gemm{&gemm, out_rows, shard, b_slot, bias_slot},
  };
  p.instructions = {
      GetCurrentStream{},
      Allocate{shards, "[devices, *shape of " + a.name() + "]",
          [=](const HostFrame& f) {
            const at::Tensor& whole = f.slots[a_slot];
            std::vector<int64_t> sizes = whole.sizes().vec();
            sizes.insert(sizes.begin(), f.team->size());
            return at::empty(sizes, whole.options());
          }},
      allocate_gemm_result(p, a_slot, b_slot, gemm, 0, /*gathered=*/true),
      WaitStreams{false},
      // This device's own rows first, with its own shard: no transfer.
      SetStream{2},
      ViewChunk{out_rows, p.result, ChunkView::kSourceRows, 0},
      Gemm{&gemm, out_rows, a_slot, b_slot, bias_slot},
      // Publishing runs on the copy stream meanwhile.
      SetStream{1},
      PublishShard{a_slot},
      std::move(loop),
      RestoreStream{},
      WaitStreams{true},
  };
  return p;
}

}  // namespace nvfuse
