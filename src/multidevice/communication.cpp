#include "multidevice/communication.h"

#include <algorithm>
#include <sstream>

#include "ir/all_exprs.h"
#include "ir/errors.h"

namespace nvfuse {

const char* name_of(CommunicationType type) {
  switch (type) {
#define NVFUSE_COMMUNICATION_TYPE_NAME(name) \
  case CommunicationType::name:              \
    return #name;
    NVFUSE_COMMUNICATION_TYPES(NVFUSE_COMMUNICATION_TYPE_NAME)
#undef NVFUSE_COMMUNICATION_TYPE_NAME
  }
  return "?";
}

bool is_rooted(CommunicationType type) {
  return type == CommunicationType::Gather || type == CommunicationType::Scatter ||
      type == CommunicationType::Reduce || type == CommunicationType::Broadcast;
}

bool is_reducing(CommunicationType type) {
  return type == CommunicationType::Reduce || type == CommunicationType::Allreduce ||
      type == CommunicationType::ReduceScatter;
}

std::vector<int64_t> Communication::team_of(int64_t device) const {
  std::vector<int64_t> team;
  if (type == CommunicationType::SendRecv) {
    team = root == peer ? std::vector<int64_t>{root} : std::vector<int64_t>{root, peer};
  } else if (mesh_axis < 0) {
    team = mesh.devices();
  } else if (mesh.contains(device)) {
    team = mesh.slice_through(device, mesh_axis);
  }
  // A rooted communication's root takes part even from outside the mesh.
  if (is_rooted(type) && root >= 0 && !team.empty() &&
      std::find(team.begin(), team.end(), root) == team.end()) {
    team.push_back(root);
  }
  if (std::find(team.begin(), team.end(), device) == team.end()) {
    return {};
  }
  return team;
}

std::vector<std::vector<int64_t>> Communication::teams() const {
  std::vector<std::vector<int64_t>> all;
  std::vector<int64_t> devices = mesh.devices();
  if (root >= 0 && !mesh.contains(root)) {
    devices.push_back(root);
  }
  for (int64_t device : devices) {
    std::vector<int64_t> team = team_of(device);
    if (!team.empty() && std::find(all.begin(), all.end(), team) == all.end()) {
      all.push_back(std::move(team));
    }
  }
  return all;
}

std::string Communication::to_string() const {
  std::ostringstream ss;
  ss << name_of(type) << " " << tensor->name();
  if (axis >= 0) {
    ss << " axis " << axis;
  }
  if (to_axis >= 0) {
    ss << " -> axis " << to_axis;
  }
  if (reduce_op.has_value()) {
    ss << " (" << reduction_name(*reduce_op) << ")";
  }
  if (root >= 0) {
    ss << " root " << root;
  }
  ss << " over";
  for (const auto& team : teams()) {
    ss << " {";
    for (size_t i = 0; i < team.size(); ++i) {
      ss << (i ? "," : "") << team[i];
    }
    ss << "}";
  }
  return ss.str();
}

}  // namespace nvfuse
