// nvfuse.multidevice's C++ side: DeviceMesh, the communicator's
// configuration (with the Python group factory), and what a sharded
// fusion's executor tells Python (output shardings, host program).
#include <torch/csrc/autograd/python_variable.h>

#include <algorithm>
#include <type_traits>

#include "bindings/bindings.h"
#include "frontend/fusion_cache.h"
#include "multidevice/runtime/communicator.h"
#include "multidevice/overlap_backend.h"
#include "multidevice/runtime/host/symmetric_memory.h"
#include "multidevice/runtime/multidevice_executor.h"

namespace py = pybind11;

namespace nvfuse {

namespace {

// Creates a team's group from Python (nvfuse.multidevice.communicator),
// holding the GIL only for the call; the function keeps no Python object,
// so it can outlive the interpreter.
std::string new_group_from_python(const std::vector<int64_t>& ranks) {
  py::gil_scoped_acquire gil;
  return py::module_::import("nvfuse.multidevice.communicator")
      .attr("_new_team_group")(ranks)
      .cast<std::string>();
}

// The symmetric-memory calls of the copy-engine all-gather, made in
// Python (nvfuse.multidevice.symmetric_memory), holding the GIL only for
// the call.
py::object symmetric_memory_module() {
  return py::module_::import("nvfuse.multidevice.symmetric_memory");
}

py::object as_python(const at::Tensor& t) {
  return py::reinterpret_steal<py::object>(THPVariable_Wrap(t));
}
py::object as_python(int64_t v) { return py::int_(v); }
py::object as_python(const std::string& s) { return py::str(s); }

// One symmetric-memory call in Python; a Python failure (no peer access,
// an old torch) becomes an UnsupportedError naming the backend. The
// arguments become Python objects only once the GIL is held (execute runs
// without it), and are released before it is given back.
template <typename Result = void, typename... Args>
Result call_symmetric_memory(const char* function, const Args&... args) {
  py::gil_scoped_acquire gil;
  try {
    py::object answer = symmetric_memory_module().attr(function)(as_python(args)...);
    if constexpr (!std::is_void_v<Result>) {
      return answer.cast<Result>();
    }
  } catch (py::error_already_set& e) {
    NVFUSE_UNSUPPORTED("the symm_mem overlap backend failed in ", function, ": ", e.what(),
        "; nvfuse.multidevice.set_overlap_backend(\"nccl\") avoids it");
  }
  if constexpr (!std::is_void_v<Result>) {
    return Result{};  // not reached: the check above throws
  }
}

SymmetricMemoryHooks python_symmetric_memory_hooks() {
  SymmetricMemoryHooks hooks;
  hooks.publish = [](const at::Tensor& local, const std::string& group) {
    call_symmetric_memory("_publish", local, group);
  };
  hooks.pull = [](const at::Tensor& dst, int64_t peer, const std::string& group) {
    call_symmetric_memory("_pull", dst, peer, group);
  };
  hooks.barrier = [](const std::string& group) { call_symmetric_memory("_barrier", group); };
  hooks.reserve = [](const at::Tensor& like, int64_t nbytes, const std::string& group) {
    call_symmetric_memory("_reserve", like, nbytes, group);
  };
  hooks.push = [](const at::Tensor& src, int64_t peer, int64_t slot, const std::string& group) {
    call_symmetric_memory("_push", src, peer, slot, group);
  };
  hooks.sum = [](const at::Tensor& out, int64_t slots, const std::string& group) {
    call_symmetric_memory("_sum_slots", out, slots, group);
  };
  hooks.peers_reachable = [](const at::Tensor& like, const std::string& group) {
    return call_symmetric_memory<bool>("_peers_reachable", like, group);
  };
  return hooks;
}

std::shared_ptr<MultiDeviceExecutor> sharded_executor(int64_t fusion_id) {
  CachedFusion& entry = FusionCache::get().at(fusion_id);
  NVFUSE_CHECK(entry.sharded, "fusion ", fusion_id, " is not sharded over a device mesh");
  return multidevice_executor_for(entry);
}

}  // namespace

void init_multidevice(py::module_& m) {
  py::class_<DeviceMesh>(m, "DeviceMesh")
      .def(py::init<std::vector<int64_t>, std::vector<int64_t>>(), py::arg("shape"),
          py::arg("devices"))
      .def_property_readonly("shape", &DeviceMesh::shape)
      .def_property_readonly("devices", &DeviceMesh::devices)
      .def_property_readonly("size", [](const DeviceMesh& mesh) { return mesh.size(); })
      .def("__repr__", &DeviceMesh::to_python)
      .def("__eq__", [](const DeviceMesh& a, const DeviceMesh& b) { return a == b; })
      .def("__hash__", &DeviceMesh::hash);

  m.def(
      "configure_communicator",
      [](int64_t rank, int64_t world_size, int64_t local_rank) {
        Communicator::get().configure(rank, world_size, local_rank, new_group_from_python);
      },
      py::arg("rank"), py::arg("world_size"), py::arg("local_rank"),
      "Sets this process's rank; team groups are then created through "
      "nvfuse.multidevice.communicator._new_team_group");
  m.def("communicator_is_configured", [] { return Communicator::get().is_configured(); });
  set_symmetric_memory_hooks(python_symmetric_memory_hooks());
  m.def(
      "set_overlap_backend",
      [](const std::string& name) {
        set_overlap_backend(overlap_backend_named(name, "set_overlap_backend"));
      },
      py::arg("name"),
      "How the pipelined all-gather + GEMM and GEMM + reduce-scatter loops communicate: "
      "\"auto\" (the default: the copy engine where it was measured faster and every device "
      "of the team reads its peers' memory, else c10d), \"nccl\" (c10d collectives) or "
      "\"symm_mem\" (copy-engine reads of torch's symmetric memory)");
  m.def(
      "overlap_backend", [] { return overlap_backend_name(overlap_backend()); },
      "The overlap backend now: \"auto\", \"nccl\" or \"symm_mem\"");
  m.def(
      "release_communicator",
      [] {
        FusionCache::get().release_sharded_runtime_states();
        Communicator::get().release();
      },
      "Frees the sharded fusions' compiled states (their process groups) and "
      "the communicator's groups: called at exit, before torch.distributed is "
      "torn down");
  m.def(
      "has_device_mesh", [](int64_t fusion_id) { return FusionCache::get().at(fusion_id).sharded; },
      py::arg("fusion_id"));
  m.def(
      "output_shardings",
      [](int64_t fusion_id) {
        py::list result;
        const std::shared_ptr<MultiDeviceExecutor> held = sharded_executor(fusion_id);
        const MultiDeviceExecutor& executor = *held;
        const std::vector<Sharding> shardings = executor.output_shardings();
        for (size_t o = 0; o < shardings.size(); ++o) {
          const Sharding& s = shardings[o];
          if (!executor.is_in_place(o)) {
            result.append(py::make_tuple(*s.mesh, s.mesh_axis, s.whole_axis));
          }
        }
        return result;
      },
      py::arg("fusion_id"),
      "[(DeviceMesh, mesh axis per logical axis or -1)] per returned output "
      "(in-place updates of inputs are not returned)");
  m.def(
      "state_sharding",
      [](int64_t fusion_id, int64_t state_index) {
        CachedFusion& entry = FusionCache::get().at(fusion_id);
        NVFUSE_CHECK(state_index >= 0 && state_index < static_cast<int64_t>(entry.states.size()),
            "fusion ", fusion_id, " has no state ", state_index);
        const auto* tv = std::get_if<TensorView*>(&entry.states[state_index]);
        NVFUSE_TYPE_CHECK(tv != nullptr, "state ", state_index, " is not a tensor");
        const std::shared_ptr<MultiDeviceExecutor> held = sharded_executor(fusion_id);
        MultiDeviceExecutor& executor = *held;
        const auto& inputs = entry.fusion->inputs();
        const auto& outputs = entry.fusion->outputs();
        Sharding s;
        if (auto it = std::find(inputs.begin(), inputs.end(), *tv); it != inputs.end()) {
          s = executor.input_shardings()[it - inputs.begin()];
        } else if (auto out = std::find(outputs.begin(), outputs.end(), *tv);
                   out != outputs.end()) {
          s = executor.output_shardings()[out - outputs.begin()];
        } else {
          NVFUSE_CHECK(false, "T", state_index, " is neither an input nor an output of fusion ",
              fusion_id, "; only those have shards a process passes or gets");
        }
        return py::make_tuple(*s.mesh, s.mesh_axis, s.whole_axis);
      },
      py::arg("fusion_id"), py::arg("state_index"),
      "(DeviceMesh, mesh axis per logical axis or -1, whole-axis flags) of an "
      "input or output tensor");
  m.def(
      "input_shardings",
      [](int64_t fusion_id) {
        py::list result;
        for (const Sharding& s : sharded_executor(fusion_id)->input_shardings()) {
          result.append(s.mesh.has_value()
                  ? py::object(py::make_tuple(*s.mesh, s.mesh_axis, s.whole_axis))
                  : py::object(py::none()));
        }
        return result;
      },
      py::arg("fusion_id"),
      "[(DeviceMesh, mesh axis per logical axis or -1, whole-axis flags)] per "
      "input; None for scalars");
  m.def(
      "host_program", [](int64_t fusion_id) { return sharded_executor(fusion_id)->host_program(); },
      py::arg("fusion_id"));
  m.def(
      "host_outline", [](int64_t fusion_id) { return sharded_executor(fusion_id)->host_outline(); },
      py::arg("fusion_id"),
      "[(depth, kind)]: the host program's steps, a pipelined loop's instructions "
      "nested under it");
}

}  // namespace nvfuse
