#include "multidevice/stream_chunks.h"

#include <algorithm>

#include "ir/all_exprs.h"
#include "ir/errors.h"
#include "ir/sharding.h"

namespace nvfuse {

namespace {

// The logical axis that `id` is, or that an outer split of it (or of the
// inner, per-device part of its device split) cuts; -1 for anything else.
int64_t logical_axis_under(const TensorView& tv, const IterDomain* id) {
  const auto& logical = tv.logical();
  auto direct = std::find(logical.begin(), logical.end(), id);
  if (direct != logical.end()) {
    return direct - logical.begin();
  }
  const Expr* def = id->definition();
  if (def == nullptr || !def->is<Split>()) {
    return -1;
  }
  const auto* source = def->input(0)->as<IterDomain>();
  auto split_logical = std::find(logical.begin(), logical.end(), source);
  if (split_logical != logical.end()) {
    return split_logical - logical.begin();
  }
  // The per-device part of a device split: the inner output of an outer
  // split whose outer output is on a mesh axis.
  const Expr* device_split = source->definition();
  if (device_split == nullptr || !device_split->is<Split>() || device_split->output(1) != source ||
      !device_split->output(0)->as<IterDomain>()->is_device_parallel()) {
    return -1;
  }
  auto outer = std::find(logical.begin(), logical.end(), device_split->input(0));
  return outer == logical.end() ? -1 : outer - logical.begin();
}

}  // namespace

std::optional<StreamChunks> stream_chunks_of(const TensorView& tv) {
  std::optional<StreamChunks> chunks;
  for (IterDomain* id : tv.domain().loop()) {
    if (id->parallel_type() != ParallelType::Stream) {
      continue;
    }
    NVFUSE_CHECK(!chunks.has_value(), tv.name(), " has two loop axes on ParallelType.stream");
    StreamChunks c;
    c.axis = logical_axis_under(tv, id);
    NVFUSE_CHECK(c.axis >= 0, tv.name(),
        ": a loop axis on ParallelType.stream must be a logical axis or the outer part of "
        "outer_split(axis, chunks)");
    const Expr* def = id->definition();
    if (def != nullptr) {
      const auto* split = def->as<Split>();
      const auto parts = split->input(1)->as<Scalar>()->constant_int();
      NVFUSE_CHECK(!split->inner_split() && split->output(0) == id && parts.has_value(), tv.name(),
          ": a stream axis must be the outer part of outer_split(axis, chunks) by a "
          "constant chunk count");
      c.count = *parts;
    }
    chunks = c;
  }
  return chunks;
}

std::unordered_map<const TensorView*, StreamChunks> take_stream_annotations(Fusion& fusion) {
  std::unordered_map<const TensorView*, StreamChunks> annotations;
  for (TensorView* tv : tensors_of(fusion)) {
    if (auto chunks = stream_chunks_of(*tv)) {
      annotations[tv] = *chunks;
      // Back to the logical domain and its device splits only.
      const Sharding sharding = sharding_of(*tv);
      clear_sharding(tv);
      if (sharding.mesh.has_value()) {
        apply_sharding(tv, sharding);
      }
    }
  }
  return annotations;
}

}  // namespace nvfuse
