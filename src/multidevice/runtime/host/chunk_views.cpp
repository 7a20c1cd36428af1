#include "multidevice/runtime/host/chunk_views.h"

#include "ir/errors.h"

namespace nvfuse {

namespace {

void check_divides(
    int64_t extent, int64_t parts, int64_t axis, const std::string& name, const char* what) {
  NVFUSE_CHECK_AS(ErrorKind::kInput, parts > 0 && extent % parts == 0, name, ": axis ", axis,
      " of local extent ", extent, " does not split into ", parts, " ", what);
}

}  // namespace

at::Tensor view_chunk(const at::Tensor& t, ChunkView view, int64_t axis, int64_t chunks,
    int64_t devices, int64_t index, const std::string& name, int64_t member) {
  switch (view) {
    case ChunkView::kSelect:
      return t.select(axis, index);
    case ChunkView::kSelectWhole:
      return t.select(axis, index).select(axis, 0);
    case ChunkView::kRows: {
      check_divides(t.size(axis), chunks, axis, name, "stream chunks");
      const int64_t c = t.size(axis) / chunks;
      return t.narrow(axis, index * c, c);
    }
    case ChunkView::kInterleaved: {
      check_divides(
          t.size(axis), devices * chunks, axis, name, "device shards of equal stream chunks");
      const int64_t c = t.size(axis) / (devices * chunks);
      return t.unflatten(axis, {devices, chunks, c}).select(axis + 1, index);
    }
    case ChunkView::kSourceRows: {
      check_divides(t.size(axis), devices, axis, name, "device shards");
      const int64_t rows = t.size(axis) / devices;
      return t.narrow(axis, (member + index) % devices * rows, rows);
    }
    case ChunkView::kDestinationRows: {
      check_divides(t.size(axis), devices, axis, name, "device shards");
      const int64_t rows = t.size(axis) / devices;
      return t.narrow(axis, (member + 1 + index) % devices * rows, rows);
    }
  }
  NVFUSE_ASSERT(false, "unknown chunk view");
  return t;
}

}  // namespace nvfuse
