#include "multidevice/runtime/host/lower_gemm_reduce_scatter_by_copy_engine.h"

#include <ATen/ATen.h>

#include "ir/all_exprs.h"
#include "multidevice/runtime/host/chunk_views.h"
#include "multidevice/runtime/host/lower_gemm_reduce_scatter.h"
#include "multidevice/runtime/host/gemm_result.h"
#include "multidevice/runtime/host/run_host_instructions.h"
#include "runtime/aten_types.h"

namespace nvfuse {

std::optional<HostLoopProgram> lower_gemm_reduce_scatter_by_copy_engine(
    const Fusion& fusion, const Communication& comm) {
  const Expr* found = gemm_before_reduce_scatter(fusion, comm);
  if (found == nullptr) {
    return std::nullopt;
  }
  const Expr& gemm = *found;
  const auto& partial = *comm.tensor;
  const auto& out = *comm.expr->output(0)->as<TensorView>();
  const auto& a = *gemm.input(0)->as<TensorView>();
  HostLoopProgram p;
  p.title = std::string("pipelined ") + (gemm.is<LinearOp>() ? "linear" : "matmul") +
      " + ReduceScatter (copy engine)";
  p.communication = &comm;
  p.gemm = &gemm;
  p.result_value = &out;
  p.chunk_per_device = true;
  p.fixed_streams = 2;
  p.chunk_source = "one per destination device, this one last";
  const Slot a_slot = p.add_slot(a.name());
  const Slot b_slot = p.add_slot(gemm.input(1)->as<TensorView>()->name());
  p.inputs = {&a, gemm.input(1)};
  const Slot partials = p.add_slot(partial.name());
  p.result = p.add_slot(out.name());
  const Slot a_rows = p.add_slot(a.name() + "_j");
  const Slot partial_j = p.add_slot(partial.name() + "_j");
  const bool linear = gemm.is<LinearOp>();
  const at::ScalarType out_dtype = to_aten(out.dtype());

  ForChunks loop;
  loop.body = {
      SetStream{2},
      ViewChunk{a_rows, a_slot, ChunkView::kDestinationRows, 0},
      ViewChunk{partial_j, partials, ChunkView::kSelect, 0},
      Gemm{&gemm, partial_j, a_rows, b_slot},
      RecordEvent{},
      SetStream{1},
      WaitEvent{},
      PushPartial{partial_j},
  };
  p.instructions = {
      GetCurrentStream{},
      Allocate{partials, "[devices, *shape of " + out.name() + "]",
          [=](const HostFrame& f) {
            const at::Tensor& whole = f.slots[a_slot];
            std::vector<int64_t> sizes = gemm_result_sizes(
                whole, f.slots[b_slot], linear, 0, f.team->size(), /*gathered=*/false);
            sizes.insert(sizes.begin(), f.team->size());
            return at::empty(sizes, whole.options().dtype(out_dtype));
          }},
      allocate_gemm_result(p, a_slot, b_slot, gemm, 0, /*gathered=*/false),
      ReservePartials{p.result},
      WaitStreams{false},
      // Before the first push, on the copy stream while the first GEMM
      // runs.
      SetStream{1},
      Barrier{"every device has summed the previous call's partial results"},
      std::move(loop),
      // Every use of the symmetric buffer stays on the copy stream, one
      // stream for all calls: a later call's pushes queue behind this
      // call's sum whichever stream the caller uses.
      SetStream{1},
      Barrier{"every partial result has arrived"},
      SumPartials{p.result},
      RestoreStream{},
      WaitStreams{true},
  };
  return p;
}

}  // namespace nvfuse
