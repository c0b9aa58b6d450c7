#include <nlohmann/json.hpp>

#include "render/hwloc_xml.hpp"
#include "render/json_text.hpp"
#include "render/node_svg.hpp"
#include "render/topo_text.hpp"
#include "topo/json.hpp"

namespace gpubind::render {

namespace {

nlohmann::ordered_json measured_json(const std::vector<topo::MeasuredGpu>& measured) {
  auto out = nlohmann::ordered_json::array();
  for (const topo::MeasuredGpu& m : measured) {
    nlohmann::ordered_json per_node = nlohmann::ordered_json::object();
    for (const auto& [n, bw] : m.bytes_per_second) per_node[std::to_string(n)] = bw;
    std::optional<unsigned> nearest = topo::nearest_measured(m);
    out.push_back({{"gpu", m.pci}, {"source", m.source}, {"bytes_per_second", per_node},
                   {"nearest_node", nearest ? nlohmann::ordered_json(*nearest) : nlohmann::ordered_json()}});
  }
  return out;
}

}  // namespace

std::string topo_json(const topo::TopoReport& r) {
  auto j = topo::to_json(r.topology);
  if (r.cross_check) {
    j["gpu_runtime"] = nlohmann::ordered_json::array();
    for (const topo::RuntimeView& v : r.runtime_views) j["gpu_runtime"].push_back(topo::to_json(v));
    j["cross_check"] = nlohmann::ordered_json::array();
    for (const auto& f : *r.cross_check)
      j["cross_check"].push_back({{"gpu", f.gpu.empty() ? nlohmann::ordered_json() : nlohmann::ordered_json(f.gpu)},
                                  {"source", f.source},
                                  {"finding", f.what}});
  }
  if (r.measured) j["measured"] = measured_json(*r.measured);
  return json_text(j);
}

std::string topo_report(const topo::TopoReport& r, const std::string& format) {
  const topo::Topology& t = r.topology;
  if (format == "matrix") return topo_matrix(t);
  if (format == "svg") return node_svg(t);
  if (format == "json") return topo_json(r);
  if (format == "xml") return to_hwloc_xml(t);
  std::string out = topo_table(t);
  if (r.measured && !r.measured->empty()) out += measured_table(t, *r.measured);
  return out;
}

}  // namespace gpubind::render
