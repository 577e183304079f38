#include "lowbit/ir/attributes.h"

#include "lowbit/common/error.h"

namespace lowbit {
namespace {
template <class T>
const T* get_as(const std::map<std::string, AttrValue>& m, const std::string& name, const char* kind) {
  auto it = m.find(name);
  if (it == m.end()) return nullptr;
  if (auto* p = std::get_if<T>(&it->second)) return p;
  throw Error("attribute '" + name + "' is not " + kind);
}
}  // namespace

int64_t Attributes::get_int(const std::string& name, int64_t def) const {
  auto p = get_as<int64_t>(map_, name, "an int");
  return p ? *p : def;
}
float Attributes::get_float(const std::string& name, float def) const {
  auto it = map_.find(name);
  if (it != map_.end())
    if (auto* i = std::get_if<int64_t>(&it->second)) return static_cast<float>(*i);
  auto p = get_as<float>(map_, name, "a float");
  return p ? *p : def;
}
std::string Attributes::get_string(const std::string& name, const std::string& def) const {
  auto p = get_as<std::string>(map_, name, "a string");
  return p ? *p : def;
}
std::vector<int64_t> Attributes::get_ints(const std::string& name, const std::vector<int64_t>& def) const {
  auto p = get_as<std::vector<int64_t>>(map_, name, "a list of ints");
  return p ? *p : def;
}
std::vector<float> Attributes::get_floats(const std::string& name, const std::vector<float>& def) const {
  auto p = get_as<std::vector<float>>(map_, name, "a list of floats");
  return p ? *p : def;
}
const Tensor* Attributes::get_tensor(const std::string& name) const {
  return get_as<Tensor>(map_, name, "a tensor");
}

}  // namespace lowbit
