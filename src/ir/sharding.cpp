#include "ir/sharding.h"

#include <algorithm>
#include <sstream>

#include "ir/all_exprs.h"
#include "ir/errors.h"

namespace nvfuse {

bool Sharding::is_sharded() const {
  return std::any_of(mesh_axis.begin(), mesh_axis.end(), [](int m) { return m >= 0; });
}

int Sharding::logical_axis_on(int axis) const {
  auto it = std::find(mesh_axis.begin(), mesh_axis.end(), axis);
  return it == mesh_axis.end() ? -1 : static_cast<int>(it - mesh_axis.begin());
}

std::string Sharding::to_string() const {
  if (!mesh.has_value()) {
    return "no mesh";
  }
  std::ostringstream ss;
  ss << "mesh " << *mesh;
  bool any = false;
  for (size_t a = 0; a < mesh_axis.size(); ++a) {
    if (mesh_axis[a] >= 0) {
      ss << (any ? ", " : ": ") << "axis " << a << " on " << did_of_mesh_axis(mesh_axis[a]);
      any = true;
    }
  }
  if (!any) {
    ss << ": replicated";
  }
  return ss.str();
}

ParallelType did_of_mesh_axis(int axis) {
  switch (axis) {
    case 0:
      return ParallelType::DIDx;
    case 1:
      return ParallelType::DIDy;
    default:
      NVFUSE_ASSERT(axis == 2, "mesh axis ", axis, " has no DID type");
      return ParallelType::DIDz;
  }
}

Sharding sharding_of(const TensorView& tv) {
  Sharding s;
  s.mesh = tv.device_mesh();
  s.mesh_axis.assign(tv.rank(), -1);
  s.whole_axis.assign(tv.rank(), false);
  const auto& logical = tv.logical();
  for (IterDomain* id : tv.domain().loop()) {
    if (!id->is_device_parallel()) {
      continue;
    }
    const int m = mesh_axis_of(id->parallel_type());
    NVFUSE_CHECK(s.mesh.has_value(), tv.name(), " has an axis on ", id->parallel_type(),
        " but no device mesh; call set_device_mesh first");
    NVFUSE_CHECK(m < s.mesh->rank(), tv.name(), " is parallelized on ", id->parallel_type(),
        " but its mesh ", *s.mesh, " has ", s.mesh->rank(), " axes");
    int64_t axis = -1;
    bool whole = false;
    auto direct = std::find(logical.begin(), logical.end(), id);
    if (direct != logical.end()) {
      axis = direct - logical.begin();
      whole = true;
    } else if (const Expr* def = id->definition(); def != nullptr && def->is<Split>() &&
               def->output(0) == id && !def->as<Split>()->inner_split()) {
      auto in = std::find(logical.begin(), logical.end(), def->input(0));
      const auto parts = def->input(1)->as<Scalar>()->constant_int();
      NVFUSE_CHECK(in != logical.end(), tv.name(),
          ": only an outer split of a logical axis "
          "may be parallelized on ",
          id->parallel_type());
      NVFUSE_CHECK(parts.has_value() && *parts == s.mesh->size(m), tv.name(), ": axis ",
          in - logical.begin(), " is split into ",
          parts.has_value() ? std::to_string(*parts) : std::string("a symbolic count of"),
          " parts but mesh axis ", m, " has ", s.mesh->size(m), " devices");
      axis = in - logical.begin();
    } else {
      NVFUSE_CHECK(false, tv.name(), ": a loop axis on ", id->parallel_type(),
          " must be a logical axis or the outer part of outer_split(axis, devices)");
    }
    NVFUSE_CHECK(s.logical_axis_on(m) < 0, tv.name(), " has two axes on ", id->parallel_type());
    NVFUSE_CHECK(
        s.mesh_axis[axis] < 0, tv.name(), ": axis ", axis, " is parallelized on two mesh axes");
    s.mesh_axis[axis] = m;
    s.whole_axis[axis] = whole;
  }
  return s;
}

void clear_sharding(TensorView* tv) {
  std::vector<IterDomain*> logical = tv->logical();
  for (IterDomain* id : logical) {
    id->parallelize(ParallelType::Serial);
  }
  tv->set_loop_domain(std::move(logical));
  tv->clear_device_mesh();
}

void apply_sharding(TensorView* tv, const Sharding& sharding) {
  NVFUSE_ASSERT(tv->loop_rank() == tv->rank() && sharding.mesh.has_value() &&
          static_cast<int64_t>(sharding.mesh_axis.size()) == tv->rank(),
      "apply_sharding needs an untransformed tensor and a sharding of its rank");
  tv->set_device_mesh(*sharding.mesh);
  // From the last axis down, so that earlier loop positions do not move.
  for (int64_t axis = tv->rank() - 1; axis >= 0; --axis) {
    const int m = sharding.mesh_axis[axis];
    if (m < 0) {
      continue;
    }
    if (!sharding.whole_axis.empty() && sharding.whole_axis[axis]) {
      tv->axis(axis)->parallelize(did_of_mesh_axis(m));
      continue;
    }
    tv->outer_split(axis, sharding.mesh->size(m));
    tv->axis(axis)->parallelize(did_of_mesh_axis(m));
  }
}

}  // namespace nvfuse
