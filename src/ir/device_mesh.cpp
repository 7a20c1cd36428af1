#include "ir/device_mesh.h"

#include <algorithm>
#include <functional>
#include <unordered_set>

#include "ir/errors.h"

namespace nvfuse {

// Copies `devices`: with a move, the argument order of evaluation may empty
// it before its size is read.
DeviceMesh::DeviceMesh(std::vector<int64_t> devices)
    : DeviceMesh(std::vector<int64_t>{static_cast<int64_t>(devices.size())}, devices) {}

DeviceMesh::DeviceMesh(std::vector<int64_t> shape, std::vector<int64_t> devices)
    : shape_(std::move(shape)), devices_(std::move(devices)) {
  int64_t count = 1;
  for (int64_t extent : shape_) {
    NVFUSE_CHECK(extent > 0, "DeviceMesh: every mesh extent must be positive");
    count *= extent;
  }
  NVFUSE_CHECK(count == size(), "DeviceMesh: a mesh of shape ", shape_.size(), "-D with ", count,
      " slots was given ", size(), " devices");
  std::unordered_set<int64_t> seen;
  for (int64_t device : devices_) {
    NVFUSE_CHECK(device >= 0, "DeviceMesh: device id ", device, " is negative");
    NVFUSE_CHECK(
        seen.insert(device).second, "DeviceMesh: device ", device, " appears more than once");
  }
}

int64_t DeviceMesh::size(int64_t axis) const {
  NVFUSE_CHECK(axis >= 0 && axis < rank(), "DeviceMesh: axis ", axis, " is out of range for a ",
      rank(), "-D mesh");
  return shape_[axis];
}

bool DeviceMesh::contains(int64_t device) const {
  return std::find(devices_.begin(), devices_.end(), device) != devices_.end();
}

std::optional<std::vector<int64_t>> DeviceMesh::coordinates_of(int64_t device) const {
  auto it = std::find(devices_.begin(), devices_.end(), device);
  if (it == devices_.end()) {
    return std::nullopt;
  }
  int64_t linear = it - devices_.begin();
  std::vector<int64_t> coords(shape_.size());
  for (int64_t axis = rank() - 1; axis >= 0; --axis) {
    coords[axis] = linear % shape_[axis];
    linear /= shape_[axis];
  }
  return coords;
}

std::vector<int64_t> DeviceMesh::slice_through(int64_t device, int64_t axis) const {
  auto coords = coordinates_of(device);
  NVFUSE_ASSERT(coords.has_value(), "device ", device, " is not in ", *this);
  std::vector<int64_t> team;
  for (int64_t i = 0; i < size(axis); ++i) {
    (*coords)[axis] = i;
    int64_t linear = 0;
    for (int64_t a = 0; a < rank(); ++a) {
      linear = linear * shape_[a] + (*coords)[a];
    }
    team.push_back(devices_[linear]);
  }
  return team;
}

size_t DeviceMesh::hash() const {
  size_t h = 0;
  for (int64_t v : shape_) {
    h = h * 131 + std::hash<int64_t>()(v);
  }
  for (int64_t v : devices_) {
    h = h * 131 + std::hash<int64_t>()(v);
  }
  return h;
}

std::string DeviceMesh::to_python() const {
  // Row-major nesting: a bracket opens where every inner index is 0 and
  // closes where every inner index is at its end.
  std::string text = "DeviceMesh(";
  const size_t n = devices_.size();
  for (size_t i = 0; i < n; ++i) {
    size_t stride = n;
    for (int64_t extent : shape_) {
      if (i % stride == 0) {
        text += "[";
      }
      stride /= static_cast<size_t>(extent);
    }
    text += std::to_string(devices_[i]);
    stride = 1;
    for (auto it = shape_.rbegin(); it != shape_.rend(); ++it) {
      stride *= static_cast<size_t>(*it);
      if ((i + 1) % stride == 0) {
        text += "]";
      }
    }
    if (i + 1 < n) {
      text += ", ";
    }
  }
  if (n == 0) {
    text += "[]";
  }
  return text + ")";
}

std::ostream& operator<<(std::ostream& os, const DeviceMesh& mesh) {
  os << "DeviceMesh(shape=[";
  for (size_t i = 0; i < mesh.shape().size(); ++i) {
    os << (i ? ", " : "") << mesh.shape()[i];
  }
  os << "], devices=[";
  for (size_t i = 0; i < mesh.devices().size(); ++i) {
    os << (i ? ", " : "") << mesh.devices()[i];
  }
  return os << "])";
}

}  // namespace nvfuse
