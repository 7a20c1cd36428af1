#include "multidevice/runtime/post_communication.h"

#include <ATen/ATen.h>

#include <algorithm>
#include <numeric>

#include "ir/errors.h"

namespace nvfuse {

namespace {

c10d::ReduceOp reduce_op_of(const Communication& comm) {
  switch (comm.reduce_op.value_or(OpType::add)) {
    case OpType::add:
      return c10d::ReduceOp(c10d::ReduceOp::SUM);
    case OpType::mul:
      return c10d::ReduceOp(c10d::ReduceOp::PRODUCT);
    case OpType::maximum:
      return c10d::ReduceOp(c10d::ReduceOp::MAX);
    case OpType::minimum:
      return c10d::ReduceOp(c10d::ReduceOp::MIN);
    default:
      NVFUSE_UNSUPPORTED("combining partial results with ", name_of(*comm.reduce_op));
  }
}

}  // namespace

Team::Team(std::vector<int64_t> members, Communicator& communicator)
    : members_(std::move(members)), sorted_(members_) {
  std::sort(sorted_.begin(), sorted_.end());
  if (members_.size() > 1) {
    group_ = communicator.group(members_);
    NVFUSE_ASSERT(group_, "no process group for a team this device is in");
  }
}

int64_t Team::group_rank(int64_t device) const {
  return std::lower_bound(sorted_.begin(), sorted_.end(), device) - sorted_.begin();
}

at::Tensor Team::reorder(const at::Tensor& chunks, bool to_group_order) const {
  if (members_ == sorted_) {
    return chunks;
  }
  std::vector<int64_t> index(members_.size());
  for (size_t k = 0; k < members_.size(); ++k) {
    const int64_t g = group_rank(members_[k]);
    if (to_group_order) {
      index[g] = static_cast<int64_t>(k);
    } else {
      index[k] = g;
    }
  }
  return chunks.index_select(
      0, at::tensor(index, at::TensorOptions().dtype(at::kLong).device(chunks.device())));
}

namespace {

void wait(const c10::intrusive_ptr<c10d::Work>& work) { work->wait(); }

// Waits now, or hands the work to the caller.
void finish(const CommunicationWork& work, CommunicationWork* deferred) {
  if (deferred != nullptr) {
    *deferred = work;
  } else {
    wait(work);
  }
}

// `t` split along `axis` into `parts` chunks stacked on a new dim 0,
// contiguous (what the base collectives send).
at::Tensor chunks_along(const at::Tensor& t, int64_t axis, int64_t parts) {
  const int64_t extent = t.size(axis);
  NVFUSE_CHECK_AS(ErrorKind::kInput, extent % parts == 0, "an axis of extent ", extent,
      " does not split evenly over ", parts, " devices");
  return t.unflatten(axis, {parts, extent / parts}).movedim(axis, 0).contiguous();
}

// Chunks stacked on dim 0 as the base collectives take them: dim 0 holds
// the chunks' dim 0 end to end (0-d chunks stay a 1-D stack).
at::Tensor stacked(const at::Tensor& chunks) {
  return chunks.dim() > 1 ? chunks.flatten(0, 1) : chunks;
}

// The inverse of chunks_along: chunks on dim 0 joined along `axis` of each
// chunk.
at::Tensor join_along(const at::Tensor& chunks, int64_t axis) {
  return chunks.movedim(0, axis).flatten(axis, axis + 1);
}

// The sizes of root's tensor, sent to a team that does not know them (the
// receivers of a Broadcast, Scatter or SendRecv).
std::vector<int64_t> share_sizes(const Team& team, int64_t root, const at::Tensor& input,
    const CommunicationSite& site, int64_t receiver = -1) {
  const auto options = at::TensorOptions().dtype(at::kLong).device(site.tensor_device);
  at::Tensor sizes = site.device == root
      ? at::tensor(input.sizes().vec(), at::TensorOptions().dtype(at::kLong)).to(site.tensor_device)
      : at::empty({site.rank}, options);
  if (receiver >= 0) {
    std::vector<at::Tensor> buffer{sizes};
    if (site.device == root) {
      wait(team.group().send(buffer, static_cast<int>(team.group_rank(receiver)), 0));
    } else {
      wait(team.group().recv(buffer, static_cast<int>(team.group_rank(root)), 0));
    }
  } else {
    std::vector<at::Tensor> buffer{sizes};
    c10d::BroadcastOptions options_b;
    options_b.rootRank = team.group_rank(root);
    wait(team.group().broadcast(buffer, options_b));
  }
  at::Tensor host = sizes.cpu();
  return std::vector<int64_t>(host.data_ptr<int64_t>(), host.data_ptr<int64_t>() + host.numel());
}

at::Tensor empty(const std::vector<int64_t>& sizes, const CommunicationSite& site) {
  return at::empty(sizes, at::TensorOptions().dtype(site.dtype).device(site.tensor_device));
}

}  // namespace

at::Tensor post_communication(const Communication& comm, const Team& team, const at::Tensor& input,
    const CommunicationSite& site, CommunicationWork* deferred) {
  if (deferred != nullptr) {
    *deferred = CommunicationWork();
  }
  const std::vector<int64_t>& members = team.members();
  const int64_t d = team.size();
  switch (comm.type) {
    case CommunicationType::Allgather: {
      if (d == 1) {
        return input;
      }
      at::Tensor local = input.contiguous();
      std::vector<int64_t> sizes = local.sizes().vec();
      sizes.insert(sizes.begin(), d);
      at::Tensor gathered = empty(sizes, site);
      // The base collectives take the shards stacked along dim 0.
      at::Tensor flat = stacked(gathered);
      wait(team.group()._allgather_base(flat, local));
      return join_along(team.reorder(gathered, false), comm.axis);
    }
    case CommunicationType::Allreduce: {
      if (d == 1) {
        return input;
      }
      std::vector<at::Tensor> buffer{input.contiguous()};
      c10d::AllreduceOptions options;
      options.reduceOp = reduce_op_of(comm);
      finish(team.group().allreduce(buffer, options), deferred);
      return buffer[0];
    }
    case CommunicationType::ReduceScatter: {
      if (d == 1) {
        return input;
      }
      at::Tensor chunks = team.reorder(chunks_along(input, comm.axis, d), true).contiguous();
      std::vector<int64_t> sizes = input.sizes().vec();
      sizes[comm.axis] /= d;
      at::Tensor local = empty(sizes, site);
      c10d::ReduceScatterOptions options;
      options.reduceOp = reduce_op_of(comm);
      at::Tensor flat = stacked(chunks);
      finish(team.group()._reduce_scatter_base(local, flat, options), deferred);
      return local;
    }
    case CommunicationType::AllToAll: {
      if (d == 1) {
        return input;
      }
      // Chunk k of the to-axis goes to the k-th device; what arrives from
      // the k-th device is its shard of the from-axis.
      at::Tensor send = team.reorder(chunks_along(input, comm.to_axis, d), true).contiguous();
      at::Tensor received = at::empty_like(send);
      std::vector<int64_t> no_splits;
      at::Tensor flat_received = stacked(received);
      at::Tensor flat_send = stacked(send);
      wait(team.group().alltoall_base(flat_received, flat_send, no_splits, no_splits));
      return join_along(team.reorder(received, false), comm.axis).contiguous();
    }
    case CommunicationType::Broadcast: {
      const std::vector<int64_t> sizes = share_sizes(team, comm.root, input, site);
      std::vector<at::Tensor> buffer{
          site.device == comm.root ? input.contiguous() : empty(sizes, site)};
      c10d::BroadcastOptions options;
      options.rootRank = team.group_rank(comm.root);
      wait(team.group().broadcast(buffer, options));
      return comm.mesh.contains(site.device) ? buffer[0] : at::Tensor();
    }
    case CommunicationType::Scatter: {
      std::vector<int64_t> sizes = share_sizes(team, comm.root, input, site);
      const int64_t shards = comm.mesh.size();
      sizes[comm.axis] /= shards;
      at::Tensor local = empty(sizes, site);
      std::vector<at::Tensor> outputs{local};
      std::vector<std::vector<at::Tensor>> inputs;
      if (site.device == comm.root) {
        // One chunk per group rank; a root outside the mesh sends itself
        // a spare copy of chunk 0.
        at::Tensor chunks = chunks_along(input, comm.axis, shards);
        std::vector<at::Tensor> per_rank(d);
        for (int64_t k = 0; k < d; ++k) {
          const int64_t shard = k < shards ? k : 0;
          per_rank[team.group_rank(members[k])] = chunks[shard];
        }
        inputs.push_back(per_rank);
      }
      c10d::ScatterOptions options;
      options.rootRank = team.group_rank(comm.root);
      wait(team.group().scatter(outputs, inputs, options));
      return comm.mesh.contains(site.device) ? local : at::Tensor();
    }
    case CommunicationType::Gather: {
      // The lowering rejects a root outside the mesh (it would hold no shard).
      at::Tensor local = input.contiguous();
      std::vector<at::Tensor> inputs{local};
      std::vector<std::vector<at::Tensor>> outputs;
      if (site.device == comm.root) {
        std::vector<at::Tensor> received;
        for (int64_t k = 0; k < d; ++k) {
          received.push_back(at::empty_like(local));
        }
        outputs.push_back(received);
      }
      c10d::GatherOptions options;
      options.rootRank = team.group_rank(comm.root);
      wait(team.group().gather(outputs, inputs, options));
      if (site.device != comm.root) {
        return at::Tensor();
      }
      std::vector<at::Tensor> in_shard_order;
      for (int64_t k = 0; k < d; ++k) {
        in_shard_order.push_back(outputs[0][team.group_rank(members[k])]);
      }
      return at::cat(in_shard_order, comm.axis);
    }
    case CommunicationType::SendRecv: {
      if (comm.root == comm.peer) {
        return input;
      }
      const std::vector<int64_t> sizes = share_sizes(team, comm.root, input, site, comm.peer);
      if (site.device == comm.root) {
        std::vector<at::Tensor> buffer{input.contiguous()};
        wait(team.group().send(buffer, static_cast<int>(team.group_rank(comm.peer)), 1));
        return at::Tensor();
      }
      std::vector<at::Tensor> buffer{empty(sizes, site)};
      wait(team.group().recv(buffer, static_cast<int>(team.group_rank(comm.root)), 1));
      return buffer[0];
    }
    case CommunicationType::Reduce: {
      if (d == 1) {
        return input;
      }
      // In place: the partial result is read by nothing but this Reduce.
      std::vector<at::Tensor> buffer{input.contiguous()};
      c10d::ReduceOptions options;
      options.reduceOp = reduce_op_of(comm);
      options.rootRank = team.group_rank(comm.root);
      wait(team.group().reduce(buffer, options));
      return site.device == comm.root ? buffer[0] : at::Tensor();
    }
  }
  NVFUSE_UNSUPPORTED(comm.to_string(), " is not run yet");
}

}  // namespace nvfuse
