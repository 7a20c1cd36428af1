// Alias analysis ("bookending"): the metadata-only exprs at the edges of a
// fusion that run as zero-copy ATen views on the host instead of inside a
// kernel, so kernels work on the un-viewed tensors and outputs alias what
// they are views of.
//
// Which exprs (slice, permute, squeeze, reshape; broadcast and expand only
// in chains that no kernel reads):
//  - Input side: the expr views a *source* (a fusion input, an ATen
//    segment's result, or another host view), and either it is a reshape
//    (no kernel computes one), or the fusion has a reduction (where a view
//    op would otherwise be cut out as a copy kernel of its own), or it is
//    a permute in a fusion of otherwise elementwise exprs (the transpose
//    scheduler then reads the permuted tensor a tile at a time), or its
//    result only reaches ATen exprs and fusion outputs through views (a
//    chain such as linear -> slice -> reshape -> permute -> attention, or
//    the broadcast of cross-entropy's labels into a gather).
//  - Output side: the expr's result is used only by fusion outputs, ATen
//    exprs and host views, and it is not a slice of a kernel's result (the
//    kernel would then write elements nobody reads), and the output has no
//    stride_order of its own.
// Why not a broadcast or expand that a kernel reads: kernels broadcast for
// free, and bookending the weight's broadcast in seed 002's layer norm
// handed the kernel a 3-D stride-0 input that dropped its vectorization to
// 1. Why not every slice or permute in a reduction-free fusion: the
// coordinate kernel already reads them at no extra traffic, and each host
// view adds host latency. (It reads a permuted tensor element by element,
// though; with only elementwise work around, the transpose kernel wins.)
#pragma once

#include <unordered_set>

#include "ir/fusion.h"
#include "segment/aten_segmenter.h"

namespace nvfuse {

std::unordered_set<const Expr*> find_host_views(const Fusion& fusion, FusionReductions reductions);

// True for the expr kinds that bookending may move to the host ahead of a
// kernel (slice, permute, squeeze, reshape).
bool is_view_expr(const Expr& expr);

}  // namespace nvfuse
