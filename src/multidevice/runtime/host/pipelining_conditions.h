// What the pipelined lowerings (lower_allgather_gemm.h,
// lower_gemm_reduce_scatter.h) need of a communication and its GEMM; a
// pair that does not meet them runs as before (the whole communication,
// then the whole GEMM).
#pragma once

#include <optional>
#include <string>
#include <unordered_map>

#include "multidevice/communication.h"
#include "multidevice/stream_chunks.h"

namespace nvfuse {

using StreamAnnotations = std::unordered_map<const TensorView*, StreamChunks>;

// A matmul of [..., K] by a [K, N] matrix, or a linear by an [N, K]
// weight (with a bias when `allow_bias`), whose left operand has rank 2 or
// more.
bool is_pipelinable_gemm(const Expr& expr, bool allow_bias);

// One team of ascending devices: the whole of a 1-D mesh in sorted order
// (so c10d's group ranks are the shard positions), which `out` lives on.
bool is_one_sorted_team(const Communication& comm, const TensorView& out);

// `value` feeds `only_use` and nothing else, and is not a fusion output.
bool feeds_only(const Fusion& fusion, const Val& value, const Expr& only_use);

// The first stream annotation among `tensors` (nullptr entries skipped).
std::optional<StreamChunks> annotation_among(
    const StreamAnnotations& annotations, std::initializer_list<const TensorView*> tensors);

// A constant chunk count the user asked for must divide the constant
// local rows: a DefinitionError naming `tensor` where it does not.
void check_chunks_divide(const TensorView& tensor, int64_t axis, int64_t devices, int64_t chunks);

}  // namespace nvfuse
