#include "topo/json.hpp"

#include <cstdio>

#include "util/strings.hpp"

namespace gpubind::topo {

using ojson = nlohmann::ordered_json;
using nlohmann::json;

namespace {

std::string hex(unsigned v, int digits) {
  char buf[16];
  std::snprintf(buf, sizeof buf, "0x%0*x", digits, v);
  return buf;
}

// Reading: every accessor checks the type and names the field it failed on, so a hand-edited
// file gets "gpus[2].cpus: expected a string" rather than an exception from the parser.

Result<const json*> field(const json& obj, const char* key, const std::string& where, bool required = true) {
  if (!obj.is_object()) return Error{"topology JSON " + where, "expected an object"};
  auto it = obj.find(key);
  if (it == obj.end()) {
    if (required) return Error{"topology JSON " + where, std::string("missing field '") + key + "'"};
    return static_cast<const json*>(nullptr);
  }
  return &*it;
}

Result<std::string> get_string(const json& obj, const char* key, const std::string& where, bool required = true) {
  auto f = field(obj, key, where, required);
  if (!f) return f.error();
  if (!*f) return std::string();
  if (!(*f)->is_string()) return Error{"topology JSON " + where + "." + key, "expected a string"};
  return (*f)->get<std::string>();
}

Result<uint64_t> get_uint(const json& obj, const char* key, const std::string& where, bool required = true) {
  auto f = field(obj, key, where, required);
  if (!f) return f.error();
  if (!*f) return uint64_t(0);
  if (!(*f)->is_number_unsigned() && !((*f)->is_number_integer() && (*f)->get<int64_t>() >= 0))
    return Error{"topology JSON " + where + "." + key, "expected a non-negative integer"};
  return (*f)->get<uint64_t>();
}

Result<uint64_t> get_hex(const json& obj, const char* key, const std::string& where) {
  auto s = get_string(obj, key, where, false);
  if (!s) return s.error();
  if (s->empty()) return uint64_t(0);
  auto v = parse_uint(*s, 16);
  if (!v) return Error{"topology JSON " + where + "." + key, "'" + *s + "' is not a hex number"};
  return *v;
}

Result<CpuSet> get_cpus(const json& obj, const char* key, const std::string& where) {
  auto s = get_string(obj, key, where);
  if (!s) return s.error();
  auto c = CpuSet::parse_list(*s);
  if (!c) return Error{"topology JSON " + where + "." + key, c.error().message()};
  if (!c->empty() && *c->last() > kMaxCpuId) return Error{"topology JSON " + where + "." + key, cpu_limit_problem(*c->last())};
  return *c;
}

Result<std::optional<CpuSet>> get_opt_cpus(const json& obj, const char* key, const std::string& where) {
  auto f = field(obj, key, where);
  if (!f) return f.error();
  if ((*f)->is_null()) return std::optional<CpuSet>();
  auto c = get_cpus(obj, key, where);
  if (!c) return c.error();
  return std::optional<CpuSet>(*c);
}

Result<std::vector<unsigned>> get_uint_array(const json& v, const std::string& where) {
  if (!v.is_array()) return Error{"topology JSON " + where, "expected an array of integers"};
  std::vector<unsigned> out;
  for (const json& e : v) {
    if (!e.is_number_unsigned()) return Error{"topology JSON " + where, "expected an array of non-negative integers"};
    out.push_back(e.get<unsigned>());
  }
  return out;
}

Result<std::vector<std::string>> get_string_array(const json& obj, const char* key, const std::string& where) {
  auto f = field(obj, key, where, false);
  if (!f) return f.error();
  std::vector<std::string> out;
  if (!*f) return out;
  if (!(*f)->is_array()) return Error{"topology JSON " + where + "." + key, "expected an array of strings"};
  for (const json& e : **f) {
    if (!e.is_string()) return Error{"topology JSON " + where + "." + key, "expected an array of strings"};
    out.push_back(e.get<std::string>());
  }
  return out;
}

Status read_device(const json& j, const std::string& where, PciDevice& d) {
  auto pci = field(j, "pci", where);
  if (!pci) return pci.error();
  if (!(*pci)->is_null() && !(*pci)->is_string()) return Error{"topology JSON " + where + ".pci", "expected a string or null"};
  d.pci = (*pci)->is_null() ? "" : (*pci)->get<std::string>();
  auto vid = get_hex(j, "vendor_id", where);
  auto did = get_hex(j, "device_id", where);
  auto cls = get_hex(j, "class_id", where);
  if (!vid) return vid.error();
  if (!did) return did.error();
  if (!cls) return cls.error();
  d.vendor_id = uint16_t(*vid);
  d.device_id = uint16_t(*did);
  d.class_id = uint32_t(*cls);
  auto os = get_string_array(j, "os_names", where);
  if (!os) return os.error();
  d.os_names = *os;
  auto numa = field(j, "numa", where);
  if (!numa) return numa.error();
  if (!(*numa)->is_null()) {
    auto v = get_uint_array(**numa, where + ".numa");
    if (!v) return v.error();
    d.numa = *v;
  }
  auto cpus = get_opt_cpus(j, "cpus", where);
  if (!cpus) return cpus.error();
  d.cpus = *cpus;
  auto path = get_string_array(j, "pcie_path", where);
  if (!path) return path.error();
  d.pcie_path = *path;
  return Ok{};
}

void write_device(const PciDevice& d, ojson& j) {
  j["pci"] = d.pci.empty() ? ojson() : ojson(d.pci);
  j["vendor_id"] = hex(d.vendor_id, 4);
  j["device_id"] = hex(d.device_id, 4);
  j["class_id"] = hex(d.class_id, 4);
  j["os_names"] = d.os_names;
  j["numa"] = numa_to_json(d.numa);
  j["cpus"] = cpus_to_json(d.cpus);
  j["pcie_path"] = d.pcie_path;
}

}  // namespace

ojson numa_to_json(const std::optional<std::vector<unsigned>>& numa) {
  return numa ? ojson(*numa) : ojson();
}

ojson cpus_to_json(const std::optional<CpuSet>& cpus) { return cpus ? ojson(cpus->to_list()) : ojson(); }

ojson to_json(const Topology& t) {
  ojson j;
  j["schema_version"] = kTopologySchemaVersion;
  j["origin"] = t.origin;
  j["hostname"] = t.hostname;
  j["cpus"] = t.cpus.to_list();
  j["allowed_cpus"] = t.allowed_cpus.to_list();
  j["packages"] = ojson::array();
  for (const Package& p : t.packages) j["packages"].push_back({{"os_index", p.os_index}, {"cpus", p.cpus.to_list()}});
  j["numa_nodes"] = ojson::array();
  for (const NumaNode& n : t.numa_nodes) {
    ojson o;
    o["os_index"] = n.os_index;
    o["cpus"] = n.cpus.to_list();
    o["memory_bytes"] = n.memory_bytes;
    o["package"] = n.package ? ojson(*n.package) : ojson();
    o["subtype"] = n.subtype;
    j["numa_nodes"].push_back(o);
  }
  j["distances"] = t.distances;
  j["l3_domains"] = ojson::array();
  for (const L3Domain& l : t.l3_domains) j["l3_domains"].push_back({{"cpus", l.cpus.to_list()}, {"size_bytes", l.size_bytes}});
  j["cores"] = ojson::array();
  for (const Core& c : t.cores) j["cores"].push_back(c.pus.to_list());
  if (!t.cores_known) j["cores_known"] = false;
  j["gpus"] = ojson::array();
  for (const Gpu& g : t.gpus) {
    ojson o;
    o["index"] = g.index;
    o["vendor"] = to_string(g.vendor);
    o["name"] = g.name;
    o["uuid"] = g.uuid;
    write_device(g, o);
    o["memory_numa"] = g.memory_numa;
    if (!g.mig_uuids.empty()) o["mig_uuids"] = g.mig_uuids;
    j["gpus"].push_back(o);
  }
  j["nics"] = ojson::array();
  for (const Nic& n : t.nics) {
    ojson o;
    // `name` is what operators call the NIC (its OS devices, "ib0,mlx5_0"); `model` the PCI name.
    o["name"] = n.os_names.empty() ? ojson() : ojson(join(n.os_names, ","));
    o["model"] = n.name;
    write_device(n, o);
    j["nics"].push_back(o);
  }
  j["links"] = ojson::array();
  for (const GpuLink& l : t.links)
    j["links"].push_back({{"a", l.a}, {"b", l.b}, {"kind", l.kind == GpuLink::Kind::nvlink ? "nvlink" : "xgmi"}, {"count", l.count}});
  j["warnings"] = t.warnings;
  return j;
}

Result<Topology> from_json(const json& j) {
  Topology t;
  auto ver = get_uint(j, "schema_version", "");
  if (!ver) return ver.error();
  if (*ver != kTopologySchemaVersion)
    return Error{"topology JSON", "schema_version " + std::to_string(*ver) + " is not supported (this gpubind reads " +
                                      std::to_string(kTopologySchemaVersion) + ")"};
  auto origin = get_string(j, "origin", "", false);
  auto host = get_string(j, "hostname", "", false);
  auto cpus = get_cpus(j, "cpus", "");
  if (!origin) return origin.error();
  if (!host) return host.error();
  if (!cpus) return cpus.error();
  t.origin = *origin;
  t.hostname = *host;
  t.cpus = *cpus;
  if (j.contains("allowed_cpus")) {
    auto a = get_cpus(j, "allowed_cpus", "");
    if (!a) return a.error();
    t.allowed_cpus = *a;
  } else {
    t.allowed_cpus = t.cpus;
  }

  // Each array is bounded before its entries are read (docs/cli.md, "Limits").
  auto each = [&](const char* key, bool required, auto&& fn, size_t max_entries = kMaxCpuId + 1) -> Status {
    auto f = field(j, key, "", required);
    if (!f) return f.error();
    if (!*f) return Ok{};
    if (!(*f)->is_array()) return Error{std::string("topology JSON ") + key, "expected an array"};
    if ((*f)->size() > max_entries)
      return Error{std::string("topology JSON ") + key, std::to_string((*f)->size()) + " entries, more than gpubind's limit of " +
                                                            std::to_string(max_entries)};
    for (size_t i = 0; i < (*f)->size(); ++i) {
      Status s = fn((**f)[i], std::string(key) + "[" + std::to_string(i) + "]");
      if (!s) return s;
    }
    return Ok{};
  };

  Status s = each("packages", true, [&](const json& e, const std::string& w) -> Status {
    Package p;
    auto idx = get_uint(e, "os_index", w);
    auto c = get_cpus(e, "cpus", w);
    if (!idx) return idx.error();
    if (!c) return c.error();
    p.os_index = unsigned(*idx);
    p.cpus = *c;
    t.packages.push_back(p);
    return Ok{};
  });
  if (!s) return s.error();
  s = each("numa_nodes", true, [&](const json& e, const std::string& w) -> Status {
    NumaNode n;
    auto idx = get_uint(e, "os_index", w);
    auto c = get_cpus(e, "cpus", w);
    auto mem = get_uint(e, "memory_bytes", w, false);
    auto sub = get_string(e, "subtype", w, false);
    if (!idx) return idx.error();
    if (!c) return c.error();
    if (!mem) return mem.error();
    if (!sub) return sub.error();
    n.os_index = unsigned(*idx);
    n.cpus = *c;
    n.memory_bytes = *mem;
    n.subtype = *sub;
    if (e.contains("package") && !e["package"].is_null()) {
      auto pk = get_uint(e, "package", w);
      if (!pk) return pk.error();
      n.package = unsigned(*pk);
    }
    t.numa_nodes.push_back(n);
    return Ok{};
  }, kMaxNumaNodeId + 1);
  if (!s) return s.error();
  s = each("distances", false, [&](const json& e, const std::string& w) -> Status {
    auto row = get_uint_array(e, w);
    if (!row) return row.error();
    t.distances.push_back(*row);
    return Ok{};
  }, kMaxNumaNodeId + 1);
  if (!s) return s.error();
  s = each("l3_domains", false, [&](const json& e, const std::string& w) -> Status {
    L3Domain l;
    auto c = get_cpus(e, "cpus", w);
    auto size = get_uint(e, "size_bytes", w, false);
    if (!c) return c.error();
    if (!size) return size.error();
    l.cpus = *c;
    l.size_bytes = *size;
    t.l3_domains.push_back(l);
    return Ok{};
  });
  if (!s) return s.error();
  s = each("cores", true, [&](const json& e, const std::string& w) -> Status {
    if (!e.is_string()) return Error{"topology JSON " + w, "expected a cpulist string"};
    auto c = CpuSet::parse_list(e.get<std::string>());
    if (!c) return Error{"topology JSON " + w, c.error().message()};
    if (!c->empty() && *c->last() > kMaxCpuId) return Error{"topology JSON " + w, cpu_limit_problem(*c->last())};
    t.cores.push_back(Core{*c});
    return Ok{};
  });
  if (!s) return s.error();
  if (j.contains("cores_known")) {
    if (!j["cores_known"].is_boolean()) return Error{"topology JSON cores_known", "expected true or false"};
    t.cores_known = j["cores_known"].get<bool>();
  }
  if (!s) return s.error();
  s = each("gpus", false, [&](const json& e, const std::string& w) -> Status {
    Gpu g;
    auto idx = get_uint(e, "index", w);
    auto vendor = get_string(e, "vendor", w);
    auto name = get_string(e, "name", w, false);
    auto uuid = get_string(e, "uuid", w, false);
    if (!idx) return idx.error();
    if (!vendor) return vendor.error();
    if (!name) return name.error();
    if (!uuid) return uuid.error();
    g.index = unsigned(*idx);
    g.vendor = vendor_from_string(*vendor);
    g.name = *name;
    g.uuid = *uuid;
    if (Status d = read_device(e, w, g); !d) return d;
    if (e.contains("memory_numa")) {
      auto m = get_uint_array(e["memory_numa"], w + ".memory_numa");
      if (!m) return m.error();
      g.memory_numa = *m;
    }
    if (e.contains("mig_uuids")) {
      auto m = get_string_array(e, "mig_uuids", w);
      if (!m) return m.error();
      g.mig_uuids = *m;
    }
    t.gpus.push_back(g);
    return Ok{};
  }, kMaxDevices);
  if (!s) return s.error();
  s = each("nics", false, [&](const json& e, const std::string& w) -> Status {
    Nic n;
    auto model = get_string(e, "model", w, false);
    if (!model) return model.error();
    n.name = *model;
    if (Status d = read_device(e, w, n); !d) return d;
    t.nics.push_back(n);
    return Ok{};
  }, kMaxDevices);
  if (!s) return s.error();
  s = each("links", false, [&](const json& e, const std::string& w) -> Status {
    GpuLink l;
    auto a = get_string(e, "a", w);
    auto b = get_string(e, "b", w);
    auto kind = get_string(e, "kind", w);
    auto count = get_uint(e, "count", w);
    if (!a) return a.error();
    if (!b) return b.error();
    if (!kind) return kind.error();
    if (!count) return count.error();
    if (*kind != "nvlink" && *kind != "xgmi") return Error{"topology JSON " + w + ".kind", "expected \"nvlink\" or \"xgmi\""};
    l.a = *a;
    l.b = *b;
    l.kind = *kind == "nvlink" ? GpuLink::Kind::nvlink : GpuLink::Kind::xgmi;
    l.count = unsigned(*count);
    t.links.push_back(l);
    return Ok{};
  }, kMaxDevices * 64);
  if (!s) return s.error();
  auto warnings = get_string_array(j, "warnings", "");
  if (!warnings) return warnings.error();
  t.warnings = *warnings;
  if (Status v = validate(t); !v) return v.error();
  return t;
}

}  // namespace gpubind::topo
