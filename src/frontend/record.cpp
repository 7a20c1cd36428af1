#include "frontend/record.h"

#include <functional>
#include <sstream>

#include "ir/errors.h"
#include "ir/exprs.h"

namespace nvfuse {

std::string StateRef::name() const {
  const char* prefix = kind == StateKind::kTensor ? "T" : kind == StateKind::kScalar ? "S" : "V";
  return prefix + std::to_string(index);
}

namespace {

template <typename T, typename Print>
std::string list_to_python(const std::vector<T>& values, Print print) {
  std::ostringstream ss;
  ss << "[";
  for (size_t i = 0; i < values.size(); ++i) {
    ss << (i ? ", " : "") << print(values[i]);
  }
  ss << "]";
  return ss.str();
}

size_t combine(size_t seed, size_t value) {
  return seed ^ (value + 0x9e3779b97f4a7c15ULL + (seed << 6) + (seed >> 2));
}

size_t hash_arg(const ArgValue& value) {
  size_t h = value.index();
  std::visit(
      [&h](const auto& v) {
        using T = std::decay_t<decltype(v)>;
        if constexpr (std::is_same_v<T, std::monostate>) {
        } else if constexpr (std::is_same_v<T, StateRef>) {
          h = combine(h, static_cast<size_t>(v.kind));
          h = combine(h, std::hash<int64_t>()(v.index));
        } else if constexpr (std::is_same_v<T, std::vector<StateRef>>) {
          for (const StateRef& ref : v) {
            h = combine(h, std::hash<int64_t>()(ref.index));
          }
        } else if constexpr (std::is_same_v<T, ScalarValue>) {
          h = combine(h, v.hash());
        } else if constexpr (std::is_same_v<T, DataType> || std::is_same_v<T, ParallelType>) {
          h = combine(h, static_cast<size_t>(v));
        } else if constexpr (std::is_same_v<T, DeviceMesh>) {
          h = combine(h, v.hash());
        } else if constexpr (std::is_same_v<T, std::vector<std::optional<bool>>>) {
          for (const auto& c : v) {
            h = combine(h, c.has_value() ? (*c ? 2 : 1) : 0);
          }
        } else if constexpr (std::is_same_v<T, std::vector<int64_t>> ||
            std::is_same_v<T, std::vector<bool>>) {
          for (const auto& e : v) {
            h = combine(h, std::hash<int64_t>()(static_cast<int64_t>(e)));
          }
        } else {
          h = combine(h, std::hash<T>()(v));
        }
      },
      value);
  return h;
}

}  // namespace

std::string to_python(const ArgValue& value) {
  return std::visit(
      [](const auto& v) -> std::string {
        using T = std::decay_t<decltype(v)>;
        if constexpr (std::is_same_v<T, std::monostate>) {
          return "None";
        } else if constexpr (std::is_same_v<T, StateRef>) {
          return v.name();
        } else if constexpr (std::is_same_v<T, std::vector<StateRef>>) {
          return list_to_python(v, [](const StateRef& r) { return r.name(); });
        } else if constexpr (std::is_same_v<T, bool>) {
          return v ? "True" : "False";
        } else if constexpr (std::is_same_v<T, int64_t>) {
          return std::to_string(v);
        } else if constexpr (std::is_same_v<T, ScalarValue>) {
          return v.to_python();
        } else if constexpr (std::is_same_v<T, DataType>) {
          return std::string("DataType.") + name_of(v);
        } else if constexpr (std::is_same_v<T, std::vector<int64_t>>) {
          return list_to_python(v, [](int64_t x) { return std::to_string(x); });
        } else if constexpr (std::is_same_v<T, std::vector<bool>>) {
          return list_to_python(v, [](bool x) { return std::string(x ? "True" : "False"); });
        } else if constexpr (std::is_same_v<T, DeviceMesh>) {
          return v.to_python();
        } else if constexpr (std::is_same_v<T, ParallelType>) {
          return std::string("ParallelType.") + python_name_of(v);
        } else {
          return list_to_python(v, [](const std::optional<bool>& x) {
            return std::string(!x.has_value() ? "None" : *x ? "True" : "False");
          });
        }
      },
      value);
}

namespace {

const char* table_method(RecordKind kind) {
  switch (kind) {
#define NVFUSE_RECORD_METHOD_CASE(kind, method) \
  case RecordKind::kind:                        \
    return method;
    NVFUSE_RECORD_KINDS(NVFUSE_RECORD_METHOD_CASE)
#undef NVFUSE_RECORD_METHOD_CASE
  }
  return "";
}

}  // namespace

std::optional<RecordKind> record_kind_of_method(const std::string& method) {
#define NVFUSE_RECORD_LOOKUP(kind, name)     \
  if (*(name) != '\0' && method == (name)) { \
    return RecordKind::kind;                 \
  }
  NVFUSE_RECORD_KINDS(NVFUSE_RECORD_LOOKUP)
#undef NVFUSE_RECORD_LOOKUP
  return std::nullopt;
}

std::string Record::method() const {
  if (kind == RecordKind::Pointwise) {
    return std::string("fd.ops.") + name_of(op);
  }
  if (kind == RecordKind::Reduction) {
    return std::string("fd.ops.") + reduction_name(op);
  }
  return table_method(kind);
}

std::string Record::to_python() const {
  std::ostringstream ss;
  for (size_t i = 0; i < outputs.size(); ++i) {
    ss << (i ? ", " : "") << outputs[i].name();
  }
  if (!outputs.empty()) {
    ss << " = ";
  }
  ss << method() << "(";
  for (size_t i = 0; i < args.size(); ++i) {
    ss << (i ? ", " : "");
    if (!args[i].keyword.empty()) {
      ss << args[i].keyword << "=";
    }
    ss << nvfuse::to_python(args[i].value);
  }
  ss << ")";
  return ss.str();
}

const ArgValue* Record::find(const std::string& keyword) const {
  for (const RecordArg& arg : args) {
    if (arg.keyword == keyword) {
      return &arg.value;
    }
  }
  return nullptr;
}

const ArgValue* Record::find_or_throw(const std::string& keyword) const {
  const ArgValue* value = find(keyword);
  NVFUSE_ASSERT(value != nullptr, method(), " record lacks `", keyword, "`");
  return value;
}

const ArgValue& Record::positional(size_t index) const {
  size_t seen = 0;
  for (const RecordArg& arg : args) {
    if (arg.keyword.empty() && seen++ == index) {
      return arg.value;
    }
  }
  NVFUSE_ASSERT(false, method(), " record lacks positional argument ", index);
  return args.front().value;
}

size_t Record::hash() const {
  size_t h = combine(static_cast<size_t>(kind), static_cast<size_t>(op));
  for (const RecordArg& arg : args) {
    h = combine(h, std::hash<std::string>()(arg.keyword));
    h = combine(h, hash_arg(arg.value));
  }
  for (const StateRef& out : outputs) {
    h = combine(h, std::hash<int64_t>()(out.index));
  }
  return h;
}

}  // namespace nvfuse
