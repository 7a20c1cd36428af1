// execute(): Python objects -> Arguments, outputs -> torch tensors. The only
// binding file that includes torch's Python headers.
#include <pybind11/functional.h>
#include <torch/csrc/autograd/python_variable.h>

#include "bindings/bindings.h"
#include "ir/dump.h"
#include "multidevice/runtime/multidevice_executor.h"
#include "runtime/reference_evaluator.h"
#include "runtime/cuda/dynamic_library.h"
#include "runtime/cuda/nvtx_range.h"
#include "runtime/coordinate_executor.h"
#include "runtime/fusion_executor.h"
#include "runtime/host_timing.h"
#include "runtime/layout_copies.h"
#include "runtime/pointwise_executor.h"
#include "runtime/reduction_executor.h"
#include "runtime/compile_ahead.h"
#include "runtime/small_output_blocks.h"
#include "runtime/cuda/kernel_cache.h"
#include "runtime/cuda/nvrtc.h"

namespace py = pybind11;

namespace nvfuse {

namespace {

std::vector<Argument> arguments_from_python(const py::sequence& inputs) {
  std::vector<Argument> args;
  args.reserve(inputs.size());
  for (size_t i = 0; i < inputs.size(); ++i) {
    py::handle obj = inputs[i];
    if (THPVariable_Check(obj.ptr())) {
      args.emplace_back(THPVariable_Unpack(obj.ptr()));
      continue;
    }
    auto scalar = scalar_from_python(obj);
    NVFUSE_INPUT_TYPE_CHECK(scalar.has_value(), "input ", i,
        ": expected a torch.Tensor or a Python number, got an object of type ",
        py::str(py::type::of(obj).attr("__name__")).cast<std::string>());
    args.emplace_back(*scalar);
  }
  return args;
}

// Executes a cached fusion, on the multi-device executor when it is
// sharded. Internal errors carry the fusion's repro script. `device` is
// where a fusion that reads no tensor runs.
std::vector<at::Tensor> execute_cached_fusion(
    int64_t fusion_id, const std::vector<Argument>& args, c10::Device device) {
  const NvtxRange range("nvfuse fusion", fusion_id);
  std::optional<HostStepTimer> step("03 cache lookup");
  CachedFusion& entry = FusionCache::get().at(fusion_id);
  step.reset();
  try {
    if (entry.sharded) {
      return multidevice_executor_for(entry)->execute(args);
    }
    return executor_for(entry)->execute(args, device);
  } catch (const Error& e) {
    if (e.kind() != ErrorKind::kInternal) {
      throw;
    }
    throw Error(e.kind(), std::string(e.what()) + "\nRepro script:\n" + entry.repro_script());
  } catch (const c10::Error& e) {
    // An ATen call outside the reference evaluator's own (which names its
    // expr) refused these inputs: still a typed error, never a bare one.
    throw Error(ErrorKind::kInput,
        std::string("an ATen call refused these inputs: ") + e.what_without_backtrace());
  }
}

// call_signature's bytes: per item, a tag, then a tensor's dtype, device,
// layout, rank, sizes and strides, or another object's type.
template <typename T>
void append_bytes(std::string& out, T value) {
  out.append(reinterpret_cast<const char*>(&value), sizeof(T));
}

py::bytes call_signature(const py::sequence& items) {
  std::string out;
  out.reserve(items.size() * 72);
  for (size_t i = 0; i < items.size(); ++i) {
    py::handle obj = items[i];
    if (!THPVariable_Check(obj.ptr())) {
      out.push_back('o');
      append_bytes(out, reinterpret_cast<uintptr_t>(Py_TYPE(obj.ptr())));
      continue;
    }
    const at::Tensor& t = THPVariable_Unpack(obj.ptr());
    out.push_back('t');
    append_bytes(out, static_cast<int8_t>(t.scalar_type()));
    append_bytes(out, static_cast<int8_t>(t.device().type()));
    append_bytes(out, static_cast<int8_t>(t.device().index()));
    append_bytes(out, static_cast<int8_t>(t.layout()));
    append_bytes(out, static_cast<int8_t>(t.dim()));
    for (int64_t size : t.sizes()) {
      append_bytes(out, size);
    }
    if (t.layout() == c10::kStrided) {
      for (int64_t stride : t.strides()) {
        append_bytes(out, stride);
      }
    }
  }
  return py::bytes(out);
}

// The tensors of a Python sequence, each checked (`caller` names the
// function in the error).
std::vector<at::Tensor> tensors_of(const char* caller, const py::sequence& tensors) {
  std::vector<at::Tensor> result;
  result.reserve(tensors.size());
  for (size_t i = 0; i < tensors.size(); ++i) {
    py::handle obj = tensors[i];
    NVFUSE_INPUT_TYPE_CHECK(THPVariable_Check(obj.ptr()), caller, ": item ", i,
        " of tensors: expected a torch.Tensor, got an object of type ",
        py::str(py::type::of(obj).attr("__name__")).cast<std::string>());
    result.push_back(THPVariable_Unpack(obj.ptr()));
  }
  return result;
}

// The tensors as a Python list, moved out of the vector.
py::list list_of(std::vector<at::Tensor> tensors) {
  py::list result;
  for (at::Tensor& t : tensors) {
    result.append(py::reinterpret_steal<py::object>(THPVariable_Wrap(std::move(t))));
  }
  return result;
}

}  // namespace

void init_execute(py::module_& m) {
  m.def("call_signature", &call_signature, py::arg("items"),
      "Bytes that two calls' items share exactly when every tensor has the same dtype, "
      "device, layout, sizes and strides and every other item the same type: a region's "
      "per-call cache key, built without Python tuples");
  m.def(
      "cuda_code_for",
      [](int64_t fusion_id, const py::sequence& inputs) {
        std::vector<Argument> args = arguments_from_python(inputs);
        return executor_for(FusionCache::get().at(fusion_id))->cuda_code_for(args);
      },
      py::arg("fusion_id"), py::arg("inputs"));
  m.def(
      "segment_definitions",
      [](int64_t fusion_id, const py::sequence& inputs) {
        std::vector<Argument> args = arguments_from_python(inputs);
        py::list result;
        for (auto& d : executor_for(FusionCache::get().at(fusion_id))->segment_definitions(args)) {
          result.append(py::make_tuple(d.kind, d.python, d.sources, d.destinations));
        }
        return result;
      },
      py::arg("fusion_id"), py::arg("inputs"),
      "[(kind, python, sources, destinations)] per segment (fd.segment)");
  m.def(
      "segment_summary",
      [](int64_t fusion_id) {
        return executor_for(FusionCache::get().at(fusion_id))->segment_summary();
      },
      py::arg("fusion_id"),
      "[(kind, op names)] per segment: kind 'fused' (generated kernels, or "
      "the reference evaluator on CPU) or 'aten' (one ATen call)");
  m.def(
      "set_pointwise_tuning",
      [](int block_size, int max_unroll, int elements_per_thread, int transpose_tile,
          int transpose_vector, int heavy_math_budget) {
        set_pointwise_tuning({block_size, max_unroll, elements_per_thread, transpose_tile,
            transpose_vector, heavy_math_budget});
      },
      py::arg("block_size"), py::arg("max_unroll"), py::arg("elements_per_thread") = 16,
      py::arg("transpose_tile") = 0, py::arg("transpose_vector") = 0,
      py::arg("heavy_math_budget") = PointwiseTuning{}.heavy_math_budget,
      "Launch-shape defaults of the pointwise scheduler (for tuning runs); "
      "the transpose kernel's tile and vector width, 0 for the defaults; the "
      "budget of elements a thread times heavy math ops per element (0: none)");
  m.def("pointwise_tuning", [] {
    const PointwiseTuning t = pointwise_tuning();
    return py::make_tuple(t.block_size, t.max_unroll, t.elements_per_thread, t.transpose_tile,
        t.transpose_vector, t.heavy_math_budget);
  });
  m.def(
      "set_coordinate_tuning",
      [](int block_size, int bytes_per_thread, int max_unroll) {
        set_coordinate_tuning({block_size, bytes_per_thread, max_unroll});
      },
      py::arg("block_size"), py::arg("bytes_per_thread") = 16, py::arg("max_unroll") = 4,
      "Launch-shape defaults of the coordinate scheduler (for tuning runs)");
  m.def("coordinate_tuning", [] {
    const CoordinateTuning t = coordinate_tuning();
    return py::make_tuple(t.block_size, t.bytes_per_thread, t.max_unroll);
  });
  m.def(
      "set_reduction_tuning",
      [](int elements_per_thread, int max_persistent_threads, int chunked_threads, int pipelining,
          int max_cluster, int carry_exps, int staging, int streamed_cluster, int outer_rows,
          int width_buckets) {
        set_reduction_tuning(
            {elements_per_thread, max_persistent_threads, chunked_threads, pipelining, max_cluster,
                carry_exps, staging, streamed_cluster, outer_rows, width_buckets});
      },
      py::arg("elements_per_thread"), py::arg("max_persistent_threads") = 1024,
      py::arg("chunked_threads") = 1024, py::arg("pipelining") = 1, py::arg("max_cluster") = 16,
      py::arg("carry_exps") = 1, py::arg("staging") = 1, py::arg("streamed_cluster") = 16,
      py::arg("outer_rows") = 8, py::arg("width_buckets") = 0,
      "Launch-shape defaults of the inner reduction scheduler (for tuning runs); width_buckets 1 "
      "shares one kernel among the row widths of a bucket (fewer compiles, slower kernels)");
  m.def("reduction_tuning", [] {
    const ReductionTuning t = reduction_tuning();
    return py::make_tuple(t.elements_per_thread, t.max_persistent_threads, t.chunked_threads,
        t.pipelining, t.max_cluster, t.carry_exps, t.staging, t.streamed_cluster, t.outer_rows,
        t.width_buckets);
  });
  m.def(
      "copy_into_layouts",
      [](const py::sequence& tensors, const std::vector<std::vector<int64_t>>& strides) {
        std::vector<at::Tensor> sources = tensors_of("copy_into_layouts", tensors);
        std::vector<at::Tensor> copies;
        {
          py::gil_scoped_release no_gil;
          copies = copy_into_layouts(sources, strides);
        }
        return list_of(std::move(copies));
      },
      py::arg("tensors"), py::arg("strides"),
      "Fresh copies of `tensors`, each laid out with its dense `strides`: CUDA tensors by one "
      "kernel launch per element size (a step's weight layout conversions), others by ATen");
  m.def(
      "copy_into_padded",
      [](const py::sequence& tensors, const std::vector<std::vector<int64_t>>& sizes,
          const std::vector<std::vector<int64_t>>& strides) {
        std::vector<at::Tensor> sources = tensors_of("copy_into_padded", tensors);
        std::vector<at::Tensor> copies;
        {
          py::gil_scoped_release no_gil;
          copies = copy_into_padded(sources, sizes, strides);
        }
        return list_of(std::move(copies));
      },
      py::arg("tensors"), py::arg("sizes"), py::arg("strides"),
      "copy_into_layouts into copies of the `sizes` given, larger than their tensors along one "
      "axis at most, zeros past each tensor's extent there (a GEMM operand padded to aligned "
      "rows)");
  m.def("layout_copies_source", &layout_copies_source, py::arg("element_size"),
      "The CUDA source of copy_into_layouts' kernel for elements of 1, 2, 4 or 8 bytes");
  m.def(
      "nvrtc_compile",
      [](const std::string& source, const std::string& name, int arch,
          const std::vector<std::string>& options) {
        CompiledBinary binary = compile_cuda(source, name, arch, options);
        py::dict result;
        result["is_ptx"] = binary.is_ptx;
        result["bytes"] = binary.image.size();
        result["image"] = py::bytes(binary.image);  // for cuobjdump -sass
        result["log"] = binary.log;
        return result;
      },
      py::arg("source"), py::arg("name"), py::arg("arch") = 90,
      py::arg("options") = std::vector<std::string>{},
      "Compiles generated code with NVRTC (no GPU needed) and `options` "
      "after nvfuse's own (\"--ptxas-options=-v\" puts each kernel's "
      "registers and spills in the log); raises InternalError with NVRTC's "
      "log on a compile error");
  m.def(
      "nvrtc_version",
      []() {
        const NvrtcVersion version = nvrtc_version();
        return std::to_string(version.major) + "." + std::to_string(version.minor);
      },
      "The version of the NVRTC library nvfuse loads (raises when none is found)");
  m.def("take_host_times", &take_host_times,
      "NVFUSE_DUMP=host_time's per-step table of the calls timed so far ('' when none), "
      "clearing the totals (the process prints what is left at exit)");
  m.def("set_dump", &set_dump_options, py::arg("options"),
      "What NVFUSE_DUMP prints from now on: a comma list of option names");
  m.def("get_dump", &dump_options, "The dump options on now, as a comma list");
  m.def("set_tiered_compile", &set_tiered_compile, py::arg("on"),
      "Tiered compilation: a kernel not compiled yet compiles in the background while its "
      "segment runs on the ATen reference evaluator (NVFUSE_TIERED_COMPILE=1 at start)");
  m.def("tiered_compile", &tiered_compile, "Whether tiered compilation is on");
  m.def("set_compile_ahead", &set_compile_ahead, py::arg("on"),
      "Compiling ahead (on by default; NVFUSE_COMPILE_AHEAD=0 at start turns it off): a fusion "
      "of several kernels compiles every kernel a call lacks at once, on threads of their own, "
      "rather than one after another");
  m.def("compile_ahead", &compile_ahead, "Whether compiling ahead is on");
  m.def("set_shared_small_outputs", &set_shared_small_outputs, py::arg("on"),
      "Whether a call's CUDA outputs of at most 16 KiB are carved from blocks shared among them "
      "(one caching-allocator call for several; on by default, NVFUSE_SHARED_SMALL_OUTPUTS=0 "
      "at start turns it off)");
  m.def("shared_small_outputs", &shared_small_outputs,
      "Whether small outputs share blocks (set_shared_small_outputs)");
  m.def("set_cudnn_attention", &set_cudnn_attention, py::arg("on"),
      "Whether sdpfa_fwd/sdpfa_bwd without dropout run cuDNN's attention where it applies (on by "
      "default) or always torch's flash kernels, as nvFuser did (as_nvfuser() turns it off)");
  m.def("cudnn_attention", &cudnn_attention_on, "Whether sdpfa ops may run cuDNN's attention");
  m.def(
      "set_dump_sink",
      [](std::function<void(const std::string&)> sink) { set_dump_sink(std::move(sink)); },
      py::arg("sink").none(true),
      "A function that receives each dump's text instead of stderr (None: stderr)");
  m.def("start_dump_capture", &start_dump_capture,
      "Collects this thread's NVFUSE_DUMP output until finish_dump_capture");
  m.def("finish_dump_capture", &finish_dump_capture,
      "The dump output collected since start_dump_capture");
  m.def("add_nvrtc_search_directory", &add_nvrtc_search_directory,
      "A folder to look for libnvrtc.so in before the system's");
  m.def(
      "execute",
      [](int64_t fusion_id, const py::sequence& inputs, int cuda_device) {
        const HostStepTimer whole("01 _C.execute (all of it)");
        std::vector<Argument> args;
        {
          const HostStepTimer step("02 arguments from Python");
          args = arguments_from_python(inputs);
        }
        const c10::Device device = cuda_device < 0
            ? c10::Device(c10::kCPU)
            : c10::Device(c10::kCUDA, static_cast<c10::DeviceIndex>(cuda_device));
        std::vector<at::Tensor> outputs;
        {
          py::gil_scoped_release no_gil;
          outputs = execute_cached_fusion(fusion_id, args, device);
        }
        const HostStepTimer step("10 outputs to Python");
        return list_of(std::move(outputs));
      },
      py::arg("fusion_id"), py::arg("inputs"), py::arg("cuda_device") = -1,
      "cuda_device: where a fusion that reads no tensor runs (-1: the CPU)");
}

}  // namespace nvfuse
