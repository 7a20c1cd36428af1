#include "bindings/bindings.h"
#include "frontend/fusion_cache.h"
#include "runtime/fusion_executor.h"

namespace py = pybind11;

namespace nvfuse {

void init_cache(py::module_& m) {
  m.def(
      "finalize",
      [](RecordingState& state) { return FusionCache::get().insert_or_find(std::move(state)); },
      "Adds the recorded definition to the fusion cache (or finds its twin) "
      "and returns the fusion id. The state is consumed.");
  m.def("num_fusions", [] { return FusionCache::get().num_fusions(); });
  m.def("reset_cache", [] { FusionCache::get().reset(); });
  m.def("set_max_runtime_states",
      [](int64_t max) { FusionCache::get().set_max_runtime_states(max); });
  m.def("max_runtime_states", [] { return FusionCache::get().max_runtime_states(); });
  m.def("num_runtime_states", [] { return FusionCache::get().num_runtime_states(); });
  m.def("cached_repro_script", [](int64_t id) { return FusionCache::get().at(id).repro_script(); });
  m.def("cached_python_definition", [](int64_t id) {
    const CachedFusion& entry = FusionCache::get().at(id);
    return python_definition(entry.records, "nvfuse_fusion_id" + std::to_string(id));
  });
  m.def(
      "cached_inputs_and_outputs",
      [](int64_t id) {
        std::vector<int64_t> inputs;
        std::vector<int64_t> outputs;
        for (const Record& r : FusionCache::get().at(id).records) {
          const bool symbolic_scalar =
              r.kind == RecordKind::DefineScalar && r.args.size() == 1;  // dtype alone: no value
          if (r.kind == RecordKind::DefineTensor || symbolic_scalar) {
            inputs.push_back(r.outputs.front().index);
          }
          const bool aliased = r.args.size() > 1 && r.args[1].keyword.empty();
          if (r.kind == RecordKind::AddOutput && !aliased) {
            outputs.push_back(std::get<StateRef>(r.args[0].value).index);
          }
        }
        return py::make_tuple(inputs, outputs);
      },
      "(input state indices, returned output state indices): fd.inputs(), "
      "fd.outputs()");
  m.def(
      "cached_fusion_ir", [](int64_t id) { return FusionCache::get().at(id).fusion->to_string(); });
  m.def("cached_last_cuda_code",
      [](int64_t id) { return executor_for(FusionCache::get().at(id))->last_cuda_code(); });
  m.def("cached_last_kernel_info", [](int64_t id) {
    const auto resources = executor_for(FusionCache::get().at(id))->last_resources();
    pybind11::dict info;
    info["registers"] = resources.registers;
    info["local_bytes"] = resources.local_bytes;
    return info;
  });
  m.def(
      "cached_prepared_fusion_ir",
      [](int64_t id) {
        return executor_for(FusionCache::get().at(id))->prepared_fusion().to_string();
      },
      "The IR after the pre-segmentation passes");
}

}  // namespace nvfuse
