#pragma once
#include <map>
#include <string>
#include <variant>
#include <vector>

#include "lowbit/ir/tensor.h"

namespace lowbit {

using AttrValue = std::variant<int64_t, float, std::string, std::vector<int64_t>, std::vector<float>,
                               std::vector<std::string>, Tensor>;

// Node attributes by name. Getters return the default when absent and throw lowbit::Error
// (naming the attribute) when present with the wrong kind.
class Attributes {
 public:
  bool has(const std::string& name) const { return map_.count(name) != 0; }
  void set(const std::string& name, AttrValue v) { map_[name] = std::move(v); }
  void erase(const std::string& name) { map_.erase(name); }

  int64_t get_int(const std::string& name, int64_t def) const;
  float get_float(const std::string& name, float def) const;
  std::string get_string(const std::string& name, const std::string& def) const;
  std::vector<int64_t> get_ints(const std::string& name, const std::vector<int64_t>& def = {}) const;
  std::vector<float> get_floats(const std::string& name, const std::vector<float>& def = {}) const;
  const Tensor* get_tensor(const std::string& name) const;

  const std::map<std::string, AttrValue>& all() const { return map_; }

 private:
  std::map<std::string, AttrValue> map_;
};

}  // namespace lowbit
