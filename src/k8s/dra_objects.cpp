#include "k8s/dra_objects.hpp"

#include <cctype>
#include <nlohmann/json.hpp>

#include "k8s/json_object.hpp"
#include "util/json_field.hpp"
#include "util/strings.hpp"

namespace gpubind::k8s {

namespace {

using nlohmann::json;

std::string string_of(const json& o, const char* key) { return json_field::get<std::string>(o, key).value_or(""); }

Attribute attribute_of(const json& v) {
  Attribute a;
  a.number = json_field::get<long long>(v, "int");
  a.flag = json_field::get<bool>(v, "bool");
  a.text = json_field::get<std::string>(v, "string");
  if (!a.text) a.text = json_field::get<std::string>(v, "version");
  a.strings = json_field::get<std::vector<std::string>>(v, "strings").value_or(std::vector<std::string>{});
  if (a.strings.empty()) a.strings = json_field::get<std::vector<std::string>>(v, "versions").value_or(std::vector<std::string>{});
  if (a.strings.empty() && a.text) a.strings = {*a.text};
  a.numbers = json_field::get<std::vector<long long>>(v, "ints").value_or(std::vector<long long>{});
  if (a.numbers.empty() && a.number) a.numbers = {*a.number};
  return a;
}

Attributes attributes_of(const json& device, const std::string& driver) {
  Attributes out;
  const json* attrs = json_field::member(device, "attributes");
  if (const json* basic = json_field::member(device, "basic"); basic && basic->is_object())  // resource.k8s.io/v1beta1
    attrs = json_field::member(*basic, "attributes");
  if (!attrs || !attrs->is_object()) return out;
  for (const auto& [name, value] : attrs->items())
    out[name.find('/') == std::string::npos ? driver + "/" + name : name] = attribute_of(value);
  return out;
}

Status add_slice(const json& slice, const std::string& what, std::vector<SliceDevice>& out) {
  const json* spec = json_field::member(slice, "spec");
  if (!spec || !spec->is_object()) return Error{what, "a ResourceSlice without spec"};
  std::string driver = string_of(*spec, "driver");
  const json* pool = json_field::member(*spec, "pool");
  std::string pool_name = pool ? string_of(*pool, "name") : "";
  if (driver.empty() || pool_name.empty()) return Error{what, "a ResourceSlice without spec.driver or spec.pool.name"};
  const json* devices = json_field::member(*spec, "devices");
  if (!devices || devices->is_null()) return Ok{};
  if (!devices->is_array()) return Error{what, "spec.devices of a " + driver + " slice is not a list"};
  for (const json& d : *devices) {
    std::string name = string_of(d, "name");
    if (name.empty()) return Error{what, "a device of driver " + driver + " pool " + pool_name + " without a name"};
    out.push_back({driver, pool_name, string_of(*spec, "nodeName"), name, attributes_of(d, driver)});
  }
  return Ok{};
}

}  // namespace

bool is_cpu_driver(const std::string& driver) { return driver == kCpuDriver; }

std::optional<CpuDeviceGroup> cpu_device_group(const std::string& device) {
  if (device == "cpudevmachine") return CpuDeviceGroup{CpuDeviceGroup::Kind::machine, std::nullopt};
  for (auto [prefix, kind] : {std::pair{"cpudevnuma", CpuDeviceGroup::Kind::numa}, std::pair{"cpudevsocket", CpuDeviceGroup::Kind::socket},
                              std::pair{"cpudev", CpuDeviceGroup::Kind::cpu}}) {
    std::string_view p = prefix;
    if (!device.starts_with(p)) continue;
    auto n = parse_uint(device.substr(p.size()));
    if (!n) return std::nullopt;
    return CpuDeviceGroup{kind, kind == CpuDeviceGroup::Kind::cpu ? std::nullopt : std::optional<unsigned>(*n)};
  }
  return std::nullopt;
}

const Attribute* SliceDevice::find(const std::string& qualified) const {
  auto it = attributes.find(qualified);
  return it == attributes.end() ? nullptr : &it->second;
}

std::optional<long long> SliceDevice::number(const std::string& qualified) const {
  const Attribute* a = find(qualified);
  return a ? a->number : std::nullopt;
}

std::optional<std::string> SliceDevice::text(const std::string& qualified) const {
  const Attribute* a = find(qualified);
  return a ? a->text : std::nullopt;
}

Result<std::vector<SliceDevice>> parse_resource_slices(const std::string& text, const std::string& what) {
  auto j = parse_json_object(text, what);
  if (!j) return j.error();
  std::vector<SliceDevice> out;
  if (const json* items = json_field::member(*j, "items")) {
    if (!items->is_array()) return Error{what, "items is not a list"};
    for (const json& slice : *items)
      if (Status st = add_slice(slice, what, out); !st) return st.error();
  } else if (Status st = add_slice(*j, what, out); !st) {
    return st.error();
  }
  return out;
}

const SliceDevice* find_slice_device(const std::vector<SliceDevice>& slices, const std::string& driver, const std::string& pool,
                                     const std::string& name) {
  for (const SliceDevice& d : slices)
    if (d.driver == driver && d.name == name && (pool.empty() || d.pool == pool)) return &d;
  return nullptr;
}

std::optional<std::string> pci_of(const SliceDevice& d) {
  for (const std::string& attribute : {std::string(kPciBusIdAttribute), std::string("dra.net/pciAddress"), d.driver + "/pciAddr"})
    if (auto pci = d.text(attribute); pci && !pci->empty()) return pci;
  return std::nullopt;
}

std::string pcie_root_name(const std::vector<std::string>& pcie_path) {
  if (pcie_path.empty() || !pcie_path.front().starts_with("hb:")) return "";
  std::string bridge = pcie_path.front().substr(3);
  return bridge.size() == 7 && bridge[4] == ':' ? "pci" + to_lower(bridge) : "";
}

namespace {

// The top-level JSON values of a stream ("{...}\n{...}"), each as its text; nullopt when the text
// between them is not whitespace or a value does not close.
std::optional<std::vector<std::string>> json_stream(const std::string& text) {
  std::vector<std::string> out;
  size_t i = 0;
  while (true) {
    while (i < text.size() && std::isspace((unsigned char)text[i])) ++i;
    if (i == text.size()) return out;
    if (text[i] != '{') return std::nullopt;
    size_t start = i, depth = 0;
    bool in_string = false;
    for (; i < text.size(); ++i) {
      char c = text[i];
      if (in_string) {
        if (c == '\\') ++i;
        else if (c == '"') in_string = false;
      } else if (c == '"') {
        in_string = true;
      } else if (c == '{' || c == '[') {
        ++depth;
      } else if ((c == '}' || c == ']') && --depth == 0) {
        break;
      }
    }
    if (i >= text.size()) return std::nullopt;
    out.push_back(text.substr(start, ++i - start));
  }
}

}  // namespace

Result<DeviceMetadata> parse_device_metadata(const std::string& text, const std::string& what) {
  auto objects = json_stream(text);
  if (!objects) return Error{what, "not a stream of JSON objects"};
  std::vector<std::string> seen;
  for (const std::string& o : *objects) {
    auto j = parse_json_object(o, what);
    if (!j) return j.error();
    std::string version = string_of(*j, "apiVersion");
    if (version != "metadata.resource.k8s.io/v1beta1" && version != "metadata.resource.k8s.io/v1alpha1") {
      seen.push_back(version.empty() ? "no apiVersion" : version);
      continue;
    }
    DeviceMetadata m;
    m.api_version = version;
    if (const json* meta = json_field::member(*j, "metadata")) {
      m.claim = string_of(*meta, "name");
      m.namespace_name = string_of(*meta, "namespace");
      m.uid = string_of(*meta, "uid");
    }
    m.pod_claim_name = string_of(*j, "podClaimName");
    const json* requests = json_field::member(*j, "requests");
    if (requests && !requests->is_null() && !requests->is_array()) return Error{what, "requests is not a list"};
    for (const json& r : requests && requests->is_array() ? *requests : json::array()) {
      const json* devices = json_field::member(r, "devices");
      for (const json& d : devices && devices->is_array() ? *devices : json::array()) {
        std::string driver = string_of(d, "driver");
        m.devices.push_back({string_of(r, "name"), {driver, string_of(d, "pool"), "", string_of(d, "name"), attributes_of(d, driver)}});
      }
    }
    return m;
  }
  if (seen.empty()) return DeviceMetadata{};
  return Error{what, "no DeviceMetadata of a version gpubind reads (metadata.resource.k8s.io/v1beta1, v1alpha1): " + join(seen, ", ")};
}

Result<std::vector<CdiCpuClaim>> parse_cdi_cpu_spec(const std::string& text, const std::string& what) {
  auto j = parse_json_object(text, what);
  if (!j) return j.error();
  constexpr std::string_view kPrefix = "DRA_CPUSET_";
  std::vector<CdiCpuClaim> out;
  const json* devices = json_field::member(*j, "devices");
  if (!devices || !devices->is_array()) return out;
  for (const json& d : *devices) {
    const json* edits = json_field::member(d, "containerEdits");
    for (const std::string& env :
         json_field::get<std::vector<std::string>>(edits ? *edits : json(), "env").value_or(std::vector<std::string>{})) {
      auto eq = env.find('=');
      if (!env.starts_with(kPrefix) || eq == std::string::npos || eq == kPrefix.size()) continue;
      auto cpus = CpuSet::parse_list(env.substr(eq + 1));
      if (!cpus) return Error{what, env.substr(0, eq) + " \"" + env.substr(eq + 1) + "\": " + cpus.error().why};
      out.push_back({env.substr(kPrefix.size(), eq - kPrefix.size()), *cpus});
    }
  }
  return out;
}

namespace {

// "--name=value" or "--name value" (Go's flag package; "-name" too); the last one given.
std::optional<std::string> flag_value(const std::vector<std::string>& args, std::string_view name) {
  std::optional<std::string> out;
  for (size_t i = 0; i < args.size(); ++i) {
    std::string_view a = args[i];
    if (a.starts_with("--")) a.remove_prefix(2);
    else if (a.starts_with("-")) a.remove_prefix(1);
    else continue;
    if (a == name && i + 1 < args.size()) out = args[i + 1];
    else if (a.starts_with(name) && a.size() > name.size() && a[name.size()] == '=') out = std::string(a.substr(name.size() + 1));
  }
  return out;
}

bool flag_given(const std::vector<std::string>& args, std::string_view name) {
  for (std::string_view a : args) {
    while (a.starts_with("-")) a.remove_prefix(1);
    if (a == name || (a.starts_with(name) && a.size() > name.size() && a[name.size()] == '=')) return true;
  }
  return false;
}

Status check_one_of(const std::string& value, std::initializer_list<const char*> allowed, const std::string& what, const char* key) {
  for (const char* a : allowed)
    if (value == a) return Ok{};
  std::vector<std::string> list(allowed.begin(), allowed.end());
  return Error{what, std::string(key) + " \"" + value + "\" is not one the driver knows (" + join(list, ", ") + ")"};
}

}  // namespace

CpuDriverConfig cpu_driver_flags(const std::vector<std::string>& args) {
  CpuDriverConfig c;
  if (auto v = flag_value(args, "config")) c.config_file = *v;
  return c;
}

Result<CpuDriverConfig> parse_cpu_driver_config(const std::vector<std::string>& args, const std::string* file_json,
                                                const std::string& what) {
  CpuDriverConfig c = cpu_driver_flags(args);
  std::optional<std::string> reserved;
  if (file_json) {
    auto j = parse_json_object(*file_json, what + " " + c.config_file);
    if (!j) return j.error();
    if (auto v = json_field::get<std::string>(*j, "cpuDeviceMode")) c.cpu_device_mode = *v;
    if (auto v = json_field::get<std::string>(*j, "groupBy")) c.group_by = *v;
    if (auto v = json_field::get<std::string>(*j, "reservedCPUs")) reserved = *v;
  }
  if (auto v = flag_value(args, "cpu-device-mode")) c.cpu_device_mode = *v;
  if (auto v = flag_value(args, "group-by")) c.group_by = *v;
  if (auto v = flag_value(args, "reserved-cpus")) reserved = *v;
  if (flag_given(args, "expose-pcie-roots")) {  // a Go bool flag: bare, or "=false"; never a separate value
    std::string v = "true";
    for (const std::string& a : args)
      if (auto eq = a.find("expose-pcie-roots="); eq != std::string::npos && a.find_first_not_of('-') == eq) v = a.substr(eq + 18);
    c.expose_pcie_roots = v != "false" && v != "0";
  }
  if (Status st = check_one_of(c.cpu_device_mode, {"grouped", "individual"}, what, "cpuDeviceMode"); !st) return st.error();
  if (Status st = check_one_of(c.group_by, {"numanode", "socket", "machine"}, what, "groupBy"); !st) return st.error();
  if (reserved && !trim(*reserved).empty()) {
    auto cpus = CpuSet::parse_list(std::string(trim(*reserved)));
    if (!cpus) return Error{what, "reservedCPUs \"" + *reserved + "\": " + cpus.error().why};
    c.reserved_cpus = *cpus;
  }
  return c;
}

std::string cpu_claim_uid_of_cdi(const std::string& cdi_id) {
  constexpr std::string_view kKind = "dra.k8s.io/cpu=claim-";
  return cdi_id.starts_with(kKind) && cdi_id.size() > kKind.size() ? cdi_id.substr(kKind.size()) : "";
}

}  // namespace gpubind::k8s
