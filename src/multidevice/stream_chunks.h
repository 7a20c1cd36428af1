// The user's stream annotation of a sharded fusion (seed 004): a loop axis
// parallelized on ParallelType.stream asks for the tensor's work in chunks,
// each on a stream of its own, so that one chunk's communication overlaps
// the previous chunk's GEMM (multidevice/runtime/host/).
//
// Two spellings:
// - a logical axis itself (the seed's A [S, DIDx(D), M/(S*D), K] with
//   axis 0 on stream): one chunk per index of that axis;
// - the outer part of outer_split(axis, S) of a logical axis, or of the
//   local part of its device split ([D, S, M/(D*S), K]): S chunks of that
//   axis.
#pragma once

#include <optional>
#include <unordered_map>

#include "ir/fusion.h"

namespace nvfuse {

struct StreamChunks {
  int64_t axis = -1;   // the logical axis cut into chunks
  int64_t count = -1;  // chunks; -1: the axis's extent (a logical stream axis)
  bool is_logical_axis() const { return count < 0; }
};

// The stream annotation of `tv`, if any. A stream axis that is neither
// spelling, or two stream axes, is a DefinitionError naming the tensor.
std::optional<StreamChunks> stream_chunks_of(const TensorView& tv);

// Every tensor's stream annotation, read before the sharding passes
// (which rebuild some tensors' loop domains); an annotated tensor's loop
// domain is then its logical domain with its device splits only, so later
// passes see no stream axis.
std::unordered_map<const TensorView*, StreamChunks> take_stream_annotations(Fusion& fusion);

}  // namespace nvfuse
