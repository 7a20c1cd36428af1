#include "multidevice/runtime/host/lower_gemm_reduce_scatter.h"

#include <ATen/ATen.h>

#include "ir/all_exprs.h"
#include "multidevice/runtime/host/chunk_views.h"
#include "multidevice/runtime/host/gemm_result.h"
#include "multidevice/runtime/host/run_host_instructions.h"
#include "runtime/aten_types.h"

namespace nvfuse {

const Expr* gemm_before_reduce_scatter(const Fusion& fusion, const Communication& comm) {
  if (comm.type != CommunicationType::ReduceScatter || comm.axis != 0 ||
      comm.reduce_op.value_or(OpType::add) != OpType::add) {
    return nullptr;
  }
  const Expr* gemm = comm.tensor->definition();
  if (gemm == nullptr || !is_pipelinable_gemm(*gemm, /*allow_bias=*/false) ||
      !feeds_only(fusion, *comm.tensor, *comm.expr) ||
      !is_one_sorted_team(comm, *comm.expr->output(0)->as<TensorView>())) {
    return nullptr;
  }
  return gemm;
}

std::optional<HostLoopProgram> lower_gemm_reduce_scatter(
    const Fusion& fusion, const Communication& comm, const StreamAnnotations& annotations) {
  const Expr* gemm = gemm_before_reduce_scatter(fusion, comm);
  if (gemm == nullptr) {
    return std::nullopt;
  }
  const auto& partial = *comm.tensor;
  const auto& out = *comm.expr->output(0)->as<TensorView>();
  const auto& a = *gemm->input(0)->as<TensorView>();
  const std::optional<StreamChunks> asked = annotation_among(annotations, {&partial, &out, &a});
  if (asked.has_value() && (asked->axis != 0 || asked->is_logical_axis())) {
    return std::nullopt;
  }
  const int64_t devices = comm.mesh.size();
  HostLoopProgram p;
  p.title =
      std::string("pipelined ") + (gemm->is<LinearOp>() ? "linear" : "matmul") + " + ReduceScatter";
  p.communication = &comm;
  p.gemm = gemm;
  p.result_value = &out;
  p.fixed_chunks = asked.has_value() ? asked->count : 0;
  p.chunk_source =
      asked.has_value() ? std::to_string(asked->count) + " from a stream split" : "chosen per call";
  if (asked.has_value()) {
    check_chunks_divide(a, 0, devices, asked->count);
  }
  const Slot a_slot = p.add_slot(a.name());
  const Slot b_slot = p.add_slot(gemm->input(1)->as<TensorView>()->name());
  p.inputs = {&a, gemm->input(1)};
  p.chunked_slot = a_slot;
  p.chunked_divisor = devices;
  const Slot partial_slot = p.add_slot(partial.name());
  p.result = p.add_slot(out.name());
  const Slot a_chunk = p.add_slot(a.name() + "_i");
  const Slot partial_chunk = p.add_slot(partial.name() + "_i");
  const Slot out_chunk = p.add_slot(out.name() + "_i");
  const bool linear = gemm->is<LinearOp>();
  const std::string a_name = a.name();
  const at::ScalarType out_dtype = to_aten(out.dtype());

  ForChunks loop;
  loop.body = {
      SetWorkerStream{},
      ViewChunk{a_chunk, a_slot, ChunkView::kInterleaved, 0},
      ViewChunk{partial_chunk, partial_slot, ChunkView::kSelect, 0},
      Gemm{gemm, partial_chunk, a_chunk, b_slot},
      ViewChunk{out_chunk, p.result, ChunkView::kRows, 0},
      PostCommunication{&comm, out_chunk, partial_chunk},
  };
  p.instructions = {
      GetCurrentStream{},
      Allocate{partial_slot, "[chunks, devices, *rows of " + a_name + "_i, N]",
          [=](const HostFrame& f) {
            const at::Tensor& whole = f.slots[a_slot];
            std::vector<int64_t> sizes =
                view_chunk(whole, ChunkView::kInterleaved, 0, f.chunks, f.team->size(), 0, a_name)
                    .sizes()
                    .vec();
            sizes.back() = gemm_columns(f.slots[b_slot], linear);
            sizes.insert(sizes.begin(), f.chunks);
            return at::empty(sizes, whole.options().dtype(out_dtype));
          }},
      allocate_gemm_result(p, a_slot, b_slot, *gemm, 0, /*gathered=*/false),
      WaitStreams{false},
      std::move(loop),
      RestoreStream{},
      WaitCommunication{/*all=*/true},
      WaitStreams{true},
  };
  return p;
}

}  // namespace nvfuse
