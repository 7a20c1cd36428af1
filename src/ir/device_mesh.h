// An n-D array of device ids that a tensor is distributed over.
#pragma once

#include <cstdint>
#include <optional>
#include <ostream>
#include <string>
#include <vector>

namespace nvfuse {

class DeviceMesh {
 public:
  DeviceMesh() = default;
  // A 1-D mesh of `devices`.
  explicit DeviceMesh(std::vector<int64_t> devices);
  // An n-D mesh: `devices` in row-major order over `shape`. Rejects
  // duplicates, negative ids and a shape that does not match the count.
  DeviceMesh(std::vector<int64_t> shape, std::vector<int64_t> devices);

  const std::vector<int64_t>& shape() const { return shape_; }
  const std::vector<int64_t>& devices() const { return devices_; }
  int64_t rank() const { return static_cast<int64_t>(shape_.size()); }
  int64_t size() const { return static_cast<int64_t>(devices_.size()); }
  int64_t size(int64_t axis) const;
  bool empty() const { return devices_.empty(); }
  bool contains(int64_t device) const;
  // Coordinates of `device` in the mesh, or nullopt when it is not in it.
  std::optional<std::vector<int64_t>> coordinates_of(int64_t device) const;
  // The devices that share all coordinates with `device` except along
  // `axis`: the team of a collective over that mesh axis.
  std::vector<int64_t> slice_through(int64_t device, int64_t axis) const;

  bool operator==(const DeviceMesh& other) const {
    return shape_ == other.shape_ && devices_ == other.devices_;
  }
  bool operator!=(const DeviceMesh& other) const { return !(*this == other); }
  size_t hash() const;
  // "DeviceMesh([[0, 1], [2, 3]])": the devices nested by the shape, as the
  // Python constructor takes them.
  std::string to_python() const;

 private:
  std::vector<int64_t> shape_;
  std::vector<int64_t> devices_;
};

std::ostream& operator<<(std::ostream& os, const DeviceMesh& mesh);

}  // namespace nvfuse
