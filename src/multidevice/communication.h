// A collective, as seed 001 settles it: a type, a team, a root (for the
// rooted kinds) and a reduce op (for the reducing kinds). Every process
// holds the same communications; the team of each is computed from the
// meshes, the sharded axes and the running device, so on a 2-D mesh one
// communication stands for several disjoint teams (an Allgather over mesh
// axis 1 of {{0,1,2,3},{4,5,6,7}} is one among {0,1,2,3} and one among
// {4,5,6,7}), and a device in none of them skips it.
#pragma once

#include <optional>
#include <string>
#include <vector>

#include "ir/device_mesh.h"
#include "ir/fusion.h"
#include "ir/op_table.h"

namespace nvfuse {

#define NVFUSE_COMMUNICATION_TYPES(X) \
  X(Allgather)                        \
  X(Gather)                           \
  X(Scatter)                          \
  X(Reduce)                           \
  X(Allreduce)                        \
  X(ReduceScatter)                    \
  X(Broadcast)                        \
  X(SendRecv)                         \
  X(AllToAll)

enum class CommunicationType {
#define NVFUSE_COMMUNICATION_TYPE_ENUM(name) name,
  NVFUSE_COMMUNICATION_TYPES(NVFUSE_COMMUNICATION_TYPE_ENUM)
#undef NVFUSE_COMMUNICATION_TYPE_ENUM
};

const char* name_of(CommunicationType type);
bool is_rooted(CommunicationType type);
bool is_reducing(CommunicationType type);

struct Communication {
  CommunicationType type = CommunicationType::Allgather;
  // The resharding expr it serves, and the tensors whose data it moves: for
  // gathers and scatters the expr's input and what the expr reads instead
  // of it; for reductions the expr's (partial) output.
  const Expr* expr = nullptr;
  const TensorView* tensor = nullptr;
  // Where the teams come from: the devices of `mesh` that differ only in
  // their coordinate along `mesh_axis` form one team (-1: the whole mesh).
  DeviceMesh mesh;
  int mesh_axis = -1;
  // Logical axis of `tensor` that is gathered, scattered or exchanged
  // (AllToAll: the one sharded before; `to_axis` the one sharded after).
  int64_t axis = -1;
  int64_t to_axis = -1;
  int64_t root = -1;  // rooted kinds; SendRecv: the sender
  int64_t peer = -1;  // SendRecv: the receiver
  std::optional<OpType> reduce_op;

  // The team `device` is in, or empty when it takes no part.
  std::vector<int64_t> team_of(int64_t device) const;
  // Every distinct team, in mesh order.
  std::vector<std::vector<int64_t>> teams() const;
  // "Allgather T1 axis 0 over teams {0,1,2,3} {4,5,6,7}".
  std::string to_string() const;
};

}  // namespace nvfuse
