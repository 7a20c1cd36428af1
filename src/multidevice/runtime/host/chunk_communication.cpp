#include "multidevice/runtime/host/chunk_communication.h"

#include <ATen/ATen.h>

#include "ir/errors.h"

namespace nvfuse {

CommunicationWork post_chunk_communication(
    const Communication& comm, const Team& team, at::Tensor dst, const at::Tensor& src) {
  NVFUSE_ASSERT(dst.is_contiguous(), "a chunk buffer of ", comm.to_string(), " is not contiguous");
  switch (comm.type) {
    case CommunicationType::Allgather: {
      if (team.size() == 1) {
        dst.select(0, 0).copy_(src);
        return CommunicationWork();
      }
      // The shards stacked along dim 0, as the base collectives take them.
      at::Tensor flat = dst.flatten(0, 1);
      at::Tensor local = src.contiguous();
      return team.group()._allgather_base(flat, local);
    }
    case CommunicationType::ReduceScatter: {
      if (team.size() == 1) {
        dst.copy_(src.select(0, 0));
        return CommunicationWork();
      }
      c10d::ReduceScatterOptions options;
      options.reduceOp = c10d::ReduceOp(c10d::ReduceOp::SUM);
      at::Tensor flat = src.contiguous().flatten(0, 1);
      at::Tensor local = dst;
      return team.group()._reduce_scatter_base(local, flat, options);
    }
    default:
      NVFUSE_ASSERT(false, comm.to_string(), " is not pipelined");
      return CommunicationWork();
  }
}

}  // namespace nvfuse
