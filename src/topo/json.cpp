#include "topo/json.hpp"

#include <cstdio>
#include <limits>

#include "util/json_field.hpp"
#include "util/strings.hpp"

namespace gpubind::topo {

using ojson = nlohmann::ordered_json;
using nlohmann::json;

namespace {

ojson links_to_json(const std::vector<GpuLink>& links) {
  ojson out = ojson::array();
  for (const GpuLink& l : links)
    out.push_back({{"a", l.a}, {"b", l.b}, {"kind", l.kind == GpuLink::Kind::nvlink ? "nvlink" : "xgmi"}, {"count", l.count}});
  return out;
}

std::string hex(unsigned v, int digits) {
  char buf[16];
  std::snprintf(buf, sizeof buf, "0x%0*x", digits, v);
  return buf;
}

// Reading: every accessor checks the type and names the field it failed on, so a hand-edited
// file gets "gpus[2].cpus: expected a string" rather than an exception from the parser.

Result<const json*> field(const json& obj, const char* key, const std::string& where, bool required = true) {
  if (!obj.is_object()) return Error{"topology JSON " + where, "expected an object"};
  const json* m = json_field::member(obj, key);
  if (!m && required) return Error{"topology JSON " + where, std::string("missing field '") + key + "'"};
  return m;
}

Result<std::string> get_string(const json& obj, const char* key, const std::string& where, bool required = true) {
  auto f = field(obj, key, where, required);
  if (!f) return f.error();
  if (!*f) return std::string();
  auto s = json_field::as<std::string>(**f);
  if (!s) return Error{"topology JSON " + where + "." + key, "expected a string"};
  return std::move(*s);
}

Result<uint64_t> get_uint(const json& obj, const char* key, const std::string& where, bool required = true) {
  auto f = field(obj, key, where, required);
  if (!f) return f.error();
  if (!*f) return uint64_t(0);
  auto v = json_field::as<uint64_t>(**f);
  if (!v) return Error{"topology JSON " + where + "." + key, "expected a non-negative integer"};
  return *v;
}

// A value read for a field `max` wide: larger is an error, never wrapped (vendor 0x1ffff is not
// 0xffff, a link count of 2^32+1 is not 1).
Result<uint64_t> at_most(Result<uint64_t> v, uint64_t max, const std::string& where, const char* key) {
  if (v && *v > max) return Error{"topology JSON " + where + "." + key, std::to_string(*v) + " is larger than " + std::to_string(max)};
  return v;
}

Result<uint64_t> get_hex(const json& obj, const char* key, const std::string& where, uint64_t max) {
  auto s = get_string(obj, key, where, false);
  if (!s) return s.error();
  if (s->empty()) return uint64_t(0);
  auto v = parse_uint(*s, 16);
  if (!v) return Error{"topology JSON " + where + "." + key, "'" + *s + "' is not a hex number"};
  return at_most(*v, max, where, key);
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
    auto n = json_field::as<uint64_t>(e);
    if (!n) return Error{"topology JSON " + where, "expected an array of non-negative integers"};
    if (*n > std::numeric_limits<unsigned>::max())
      return Error{"topology JSON " + where,
                   std::to_string(*n) + " is larger than " + std::to_string(std::numeric_limits<unsigned>::max())};
    out.push_back(unsigned(*n));
  }
  return out;
}

Result<std::vector<std::string>> get_string_array(const json& obj, const char* key, const std::string& where) {
  auto f = field(obj, key, where, false);
  if (!f) return f.error();
  if (!*f) return std::vector<std::string>();
  auto strings = json_field::as<std::vector<std::string>>(**f);
  if (!strings) return Error{"topology JSON " + where + "." + key, "expected an array of strings"};
  return std::move(*strings);
}

Status read_device(const json& j, const std::string& where, PciDevice& d) {
  auto pci = field(j, "pci", where);
  if (!pci) return pci.error();
  if (!(*pci)->is_null() && !(*pci)->is_string()) return Error{"topology JSON " + where + ".pci", "expected a string or null"};
  d.pci = (*pci)->is_null() ? "" : (*pci)->get<std::string>();
  auto vid = get_hex(j, "vendor_id", where, 0xffff);
  auto did = get_hex(j, "device_id", where, 0xffff);
  auto cls = get_hex(j, "class_id", where, 0xffffffff);
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
    if (g.stacks > 1) o["stacks"] = g.stacks;
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
  j["links"] = links_to_json(t.links);
  j["warnings"] = t.warnings;
  return j;
}

ojson to_json(const RuntimeView& v) {
  ojson j;
  j["source"] = v.source;
  j["vendor"] = to_string(v.vendor);
  j["gpus"] = ojson::array();
  for (const RuntimeGpu& g : v.gpus) {
    ojson o;
    o["pci"] = g.pci;
    o["uuid"] = g.uuid;
    o["name"] = g.name;
    o["serial"] = g.serial;
    o["numa"] = g.numa ? ojson(*g.numa) : ojson();
    o["memory_numa"] = g.memory_numa ? ojson(*g.memory_numa) : ojson();
    o["cpus"] = cpus_to_json(g.cpus);
    o["mig_mode"] = g.mig_mode ? ojson(*g.mig_mode) : ojson();
    o["mig_uuids"] = g.mig_uuids;
    o["mig_instances"] = ojson::array();
    for (const auto& m : g.mig_instances)
      o["mig_instances"].push_back({{"uuid", m.uuid}, {"gpu_instance", m.gpu_instance ? ojson(*m.gpu_instance) : ojson()},
                                    {"compute_instance", m.compute_instance ? ojson(*m.compute_instance) : ojson()}});
    o["pcie_link"] = g.pcie ? ojson{{"gen", g.pcie->gen}, {"max_gen", g.pcie->max_gen}, {"width", g.pcie->width}, {"max_width", g.pcie->max_width}}
                            : ojson();
    o["utilization_percent"] = g.utilization ? ojson(*g.utilization) : ojson();
    j["gpus"].push_back(o);
  }
  j["links"] = v.links ? links_to_json(*v.links) : ojson();
  return j;
}

namespace {

// Reads the fields of one JSON object, in order, into a value. It stops at the first problem,
// which names the field's path ("topology JSON gpus[2].cpus: expected a string").
class Fields {
 public:
  Fields(const json& obj, std::string where) : m_obj(obj), m_where(std::move(where)) {}
  Fields& uint(const char* key, unsigned& out, bool required = true) {
    return take(at_most(get_uint(m_obj, key, m_where, required), std::numeric_limits<unsigned>::max(), m_where, key),
                [&](uint64_t v) { out = unsigned(v); });
  }
  Fields& uint64(const char* key, uint64_t& out, bool required = true) {
    return take(get_uint(m_obj, key, m_where, required), [&](uint64_t v) { out = v; });
  }
  Fields& string(const char* key, std::string& out, bool required = true) {
    return take(get_string(m_obj, key, m_where, required), [&](std::string v) { out = std::move(v); });
  }
  Fields& cpus(const char* key, CpuSet& out) {
    return take(get_cpus(m_obj, key, m_where), [&](CpuSet v) { out = std::move(v); });
  }
  Fields& strings(const char* key, std::vector<std::string>& out) {
    return take(get_string_array(m_obj, key, m_where), [&](std::vector<std::string> v) { out = std::move(v); });
  }
  // An array of integers, when the field is present.
  Fields& uints_if_present(const char* key, std::vector<unsigned>& out) {
    if (!m_status || !m_obj.contains(key)) return *this;
    return take(get_uint_array(m_obj[key], m_where + "." + key), [&](std::vector<unsigned> v) { out = std::move(v); });
  }
  // An integer, or nothing when the field is absent or null.
  Fields& optional_uint(const char* key, std::optional<unsigned>& out) {
    if (!m_status || !m_obj.contains(key) || m_obj[key].is_null()) return *this;
    return take(at_most(get_uint(m_obj, key, m_where), std::numeric_limits<unsigned>::max(), m_where, key),
                [&](uint64_t v) { out = unsigned(v); });
  }
  Fields& device(PciDevice& d) {
    if (m_status) m_status = read_device(m_obj, m_where, d);
    return *this;
  }
  Status status() const { return m_status; }

 private:
  template <class R, class F>
  Fields& take(R&& r, F&& assign) {
    if (!m_status) return *this;
    if (!r) m_status = r.error();
    else assign(std::move(*r));
    return *this;
  }
  const json& m_obj;
  std::string m_where;
  Status m_status = Ok{};
};

Status read_package(const json& e, const std::string& w, Package& p) {
  return Fields(e, w).uint("os_index", p.os_index).cpus("cpus", p.cpus).status();
}

Status read_numa_node(const json& e, const std::string& w, NumaNode& n) {
  return Fields(e, w)
      .uint("os_index", n.os_index)
      .cpus("cpus", n.cpus)
      .uint64("memory_bytes", n.memory_bytes, false)
      .string("subtype", n.subtype, false)
      .optional_uint("package", n.package)
      .status();
}

Status read_distance_row(const json& e, const std::string& w, std::vector<unsigned>& row) {
  auto r = get_uint_array(e, w);
  if (!r) return r.error();
  row = *r;
  return Ok{};
}

Status read_l3(const json& e, const std::string& w, L3Domain& l) {
  return Fields(e, w).cpus("cpus", l.cpus).uint64("size_bytes", l.size_bytes, false).status();
}

Status read_core(const json& e, const std::string& w, Core& core) {
  if (!e.is_string()) return Error{"topology JSON " + w, "expected a cpulist string"};
  auto c = CpuSet::parse_list(e.get<std::string>());
  if (!c) return Error{"topology JSON " + w, c.error().message()};
  if (!c->empty() && *c->last() > kMaxCpuId) return Error{"topology JSON " + w, cpu_limit_problem(*c->last())};
  core.pus = *c;
  return Ok{};
}

Status read_gpu(const json& e, const std::string& w, Gpu& g) {
  std::string vendor;
  std::optional<unsigned> stacks;
  Status s = Fields(e, w)
                 .uint("index", g.index)
                 .string("vendor", vendor)
                 .string("name", g.name, false)
                 .string("uuid", g.uuid, false)
                 .device(g)
                 .uints_if_present("memory_numa", g.memory_numa)
                 .strings("mig_uuids", g.mig_uuids)
                 .optional_uint("stacks", stacks)
                 .status();
  if (stacks && (*stacks < 1 || *stacks > kMaxGpuStacks))
    return Error{"topology JSON " + w + ".stacks", std::to_string(*stacks) + " is not 1-" + std::to_string(kMaxGpuStacks)};
  g.stacks = stacks.value_or(1);
  g.vendor = vendor_from_string(vendor);
  return s;
}

Status read_nic(const json& e, const std::string& w, Nic& n) { return Fields(e, w).string("model", n.name, false).device(n).status(); }

Status read_link(const json& e, const std::string& w, GpuLink& l) {
  std::string kind;
  Status s = Fields(e, w).string("a", l.a).string("b", l.b).string("kind", kind).uint("count", l.count).status();
  if (!s) return s;
  if (kind != "nvlink" && kind != "xgmi") return Error{"topology JSON " + w + ".kind", "expected \"nvlink\" or \"xgmi\""};
  l.kind = kind == "nvlink" ? GpuLink::Kind::nvlink : GpuLink::Kind::xgmi;
  return Ok{};
}

// One array of the topology: its key, whether it must be there, its limit (docs/cli.md,
// "Limits"; checked before any entry is read), and how an entry is read and stored.
struct ArrayField {
  const char* key;
  bool required;
  size_t max_entries;
  Status (*read)(const json& entry, const std::string& where, Topology& t);
};

// An ArrayField reader that reads one entry with `Read` and appends it to `Member`.
template <auto Member, auto Read>
Status append(const json& e, const std::string& w, Topology& t) {
  typename std::remove_reference_t<decltype(t.*Member)>::value_type v{};
  if (Status s = Read(e, w, v); !s) return s;
  (t.*Member).push_back(std::move(v));
  return Ok{};
}

const ArrayField kArrays[] = {
    {"packages", true, kMaxCpuId + 1, append<&Topology::packages, read_package>},
    {"numa_nodes", true, kMaxNumaNodeId + 1, append<&Topology::numa_nodes, read_numa_node>},
    {"distances", false, kMaxNumaNodeId + 1, append<&Topology::distances, read_distance_row>},
    {"l3_domains", false, kMaxCpuId + 1, append<&Topology::l3_domains, read_l3>},
    {"cores", true, kMaxCpuId + 1, append<&Topology::cores, read_core>},
    {"gpus", false, kMaxDevices, append<&Topology::gpus, read_gpu>},
    {"nics", false, kMaxDevices, append<&Topology::nics, read_nic>},
    {"links", false, kMaxDevices * 64, append<&Topology::links, read_link>},
};

Status read_array(const json& j, const ArrayField& a, Topology& t) {
  auto f = field(j, a.key, "", a.required);
  if (!f) return f.error();
  if (!*f) return Ok{};
  if (!(*f)->is_array()) return Error{std::string("topology JSON ") + a.key, "expected an array"};
  if ((*f)->size() > a.max_entries)
    return Error{std::string("topology JSON ") + a.key,
                 std::to_string((*f)->size()) + " entries, more than gpubind's limit of " + std::to_string(a.max_entries)};
  for (size_t i = 0; i < (*f)->size(); ++i)
    if (Status s = a.read((**f)[i], std::string(a.key) + "[" + std::to_string(i) + "]", t); !s) return s;
  return Ok{};
}

}  // namespace

Result<Topology> from_json(const json& j) {
  Topology t;
  auto ver = get_uint(j, "schema_version", "");
  if (!ver) return ver.error();
  if (*ver != kTopologySchemaVersion)
    return Error{"topology JSON", "schema_version " + std::to_string(*ver) + " is not supported (this gpubind reads " +
                                      std::to_string(kTopologySchemaVersion) + ")"};
  if (Status s = Fields(j, "").string("origin", t.origin, false).string("hostname", t.hostname, false).cpus("cpus", t.cpus).status(); !s)
    return s.error();
  t.allowed_cpus = t.cpus;
  if (j.contains("allowed_cpus"))
    if (Status s = Fields(j, "").cpus("allowed_cpus", t.allowed_cpus).status(); !s) return s.error();
  if (j.contains("cores_known")) {
    auto known = json_field::get<bool>(j, "cores_known");
    if (!known) return Error{"topology JSON cores_known", "expected true or false"};
    t.cores_known = *known;
  }
  for (const ArrayField& a : kArrays)
    if (Status s = read_array(j, a, t); !s) return s.error();
  if (Status s = Fields(j, "").strings("warnings", t.warnings).status(); !s) return s.error();
  if (Status v = validate(t); !v) return v.error();
  return t;
}

}  // namespace gpubind::topo
