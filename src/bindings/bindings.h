// The pybind11 bindings, one init function per area (one file each).
#pragma once

#include <pybind11/complex.h>
#include <pybind11/pybind11.h>
#include <pybind11/stl.h>

#include <array>

#include "ir/scalar_value.h"

namespace nvfuse {

void init_enums(pybind11::module_& m);
void init_errors(pybind11::module_& m);
void init_recording(pybind11::module_& m);
void init_cache(pybind11::module_& m);
void init_execute(pybind11::module_& m);
void init_multidevice(pybind11::module_& m);

// A Python bool/int/float/complex as a ScalarValue, or nullopt for any other
// object.
std::optional<ScalarValue> scalar_from_python(pybind11::handle obj);
pybind11::object scalar_to_python(const ScalarValue& value);

}  // namespace nvfuse

namespace pybind11::detail {

// Python numbers <-> ScalarValue, keeping the Python type (bool stays bool).
template <>
struct type_caster<nvfuse::ScalarValue> {
  PYBIND11_TYPE_CASTER(nvfuse::ScalarValue, const_name("Number"));
  bool load(handle src, bool /*convert*/) {
    auto v = nvfuse::scalar_from_python(src);
    if (!v.has_value()) {
      return false;
    }
    value = *v;
    return true;
  }
  static handle cast(const nvfuse::ScalarValue& v, return_value_policy, handle) {
    return nvfuse::scalar_to_python(v).release();
  }
};

}  // namespace pybind11::detail
