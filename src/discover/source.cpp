#include "discover/source.hpp"

#include <nlohmann/json.hpp>

#include "discover/examples.hpp"
#include "discover/hwloc_loader.hpp"
#include "discover/nccl_loader.hpp"
#include "sys/archive.hpp"
#include "sys/fsroot.hpp"
#include "topo/json.hpp"
#include "util/strings.hpp"

namespace gpubind::discover {

namespace {

// A topology file of the largest real machines is a few MiB (hwloc XML of 8192 CPUs, NCCL XML
// of 64 GPUs and NICs); anything past this is refused before it is parsed (docs/cli.md, "Limits").
constexpr size_t kMaxTopologyFileBytes = 64u << 20;

bool has_archive_suffix(const std::string& s) {
  for (const char* suf : {".tar.bz2", ".tbz2", ".tbz", ".tar.gz", ".tgz", ".tar.xz", ".txz", ".tar"})
    if (s.ends_with(suf)) return true;
  return false;
}

// The name of the first element of an XML text, skipping the declaration, comments and DOCTYPE.
std::string first_element(std::string_view text) {
  size_t i = 0;
  while (i < text.size()) {
    size_t lt = text.find('<', i);
    if (lt == std::string_view::npos) return "";
    std::string_view rest = text.substr(lt);
    if (rest.starts_with("<?")) {
      i = text.find("?>", lt);
      if (i == std::string_view::npos) return "";
      i += 2;
    } else if (rest.starts_with("<!--")) {
      i = text.find("-->", lt);
      if (i == std::string_view::npos) return "";
      i += 3;
    } else if (rest.starts_with("<!")) {
      i = text.find('>', lt);
      if (i == std::string_view::npos) return "";
      ++i;
    } else {
      size_t end = lt + 1;
      while (end < text.size() && (std::isalnum(static_cast<unsigned char>(text[end])) || text[end] == '_' || text[end] == '-'))
        ++end;
      return std::string(text.substr(lt + 1, end - lt - 1));
    }
  }
  return "";
}

bool looks_synthetic(const std::string& s) {
  // hwloc synthetic descriptions are "type:count" tokens ("pack:2 numa:2 core:8 pu:2").
  auto words = split(trim(s), ' ');
  for (std::string_view w : words) {
    if (w.empty()) continue;
    auto colon = w.find(':');
    if (colon == std::string_view::npos || colon == 0 || colon + 1 >= w.size()) return false;
    if (!std::isdigit(static_cast<unsigned char>(w[colon + 1]))) return false;
    return true;
  }
  return false;
}

// The PUs a synthetic description makes: the product of every "type:count" level's count
// (saturating at UINT64_MAX). Attributes ("numa:2(memory=1GB)") and memory children ("[numa]")
// add no PU.
uint64_t synthetic_pus(const std::string& s) {
  uint64_t pus = 1;
  for (std::string_view w : split(trim(s), ' ')) {
    size_t colon = w.find(':');
    if (w.empty() || w.front() == '[' || colon == std::string_view::npos) continue;
    uint64_t count = 0;
    for (size_t i = colon + 1; i < w.size() && std::isdigit(static_cast<unsigned char>(w[i])); ++i) {
      uint64_t digit = uint64_t(w[i] - '0');
      count = count > (UINT64_MAX - digit) / 10 ? UINT64_MAX : count * 10 + digit;
    }
    if (count == 0) continue;
    pus = pus > UINT64_MAX / count ? UINT64_MAX : pus * count;
  }
  return pus;
}

Result<SourceKind> detect_file(const std::string& path, const std::string& text) {
  std::string_view t = trim(text);
  if (t.empty()) return Error{path, "file is empty"};
  if (t.front() == '{') return SourceKind::gpubind_json;
  if (t.front() == '<') {
    std::string root = first_element(t);
    if (root == "topology" || root == "root") return SourceKind::hwloc_xml;
    if (root == "system") return SourceKind::nccl_xml;
    if (root.empty()) return Error{path, "malformed XML (no root element)"};
    return Error{path, "XML root element <" + root + "> is neither an hwloc <topology> nor an NCCL <system>"};
  }
  return Error{path, "not a topology file (expected hwloc XML, NCCL XML or gpubind JSON)"};
}

// A gathered tree is a directory with sys/ in it; hwloc-gather-topology archives hold one
// top-level directory named after the host, so look one level down too.
Result<std::string> fsroot_dir(const std::string& dir) {
  if (sys::path_kind(dir + "/sys") == sys::PathKind::directory) return dir;
  auto fs = sys::open_fsroot(dir);
  if (!fs) return fs.error();
  auto names = (*fs)->list(".");
  if (!names) return names.error();
  for (const std::string& n : *names)
    if (sys::path_kind(dir + "/" + n + "/sys") == sys::PathKind::directory) return dir + "/" + n;
  return Error{dir, "not a gathered topology tree (no sys/ directory in it)"};
}

// A capture gathered without I/O (`hwloc-gather-topology` without --io) has no sys/bus/pci: it
// loads as a machine without GPUs or NICs, and every plan from it is CPU-only. Said, not guessed.
Result<topo::Topology> with_pci_known(Result<topo::Topology> t, const std::string& dir) {
  if (!t || sys::path_kind(dir + "/sys/bus/pci/devices") == sys::PathKind::directory) return t;
  t->devices_known = false;
  t->warnings.push_back("the capture holds no PCI devices (no sys/bus/pci/devices): its GPUs and NICs are unknown, not absent; "
                        "gather it with `hwloc-gather-topology --io NAME`");
  return t;
}

Result<topo::Topology> load_json(const std::string& path, const std::string& text) {
  nlohmann::json j;
  try {
    j = nlohmann::json::parse(text);
  } catch (const nlohmann::json::parse_error& e) {
    std::string why = e.what();
    if (auto p = why.find("parse error"); p != std::string::npos) why = why.substr(p);
    return Error{path, "malformed JSON (" + why + ")"};
  }
  auto t = topo::from_json(j);
  if (!t) return Error{path, t.error().message()};
  return t;
}

}  // namespace

std::string example_names() {
  std::string names;
  for (const EmbeddedExample& e : embedded_examples()) names += std::string(names.empty() ? "" : ", ") + e.name;
  return names;
}

const char* to_string(SourceKind k) {
  switch (k) {
    case SourceKind::live: return "live";
    case SourceKind::hwloc_xml: return "hwloc-xml";
    case SourceKind::nccl_xml: return "nccl-xml";
    case SourceKind::gpubind_json: return "gpubind-json";
    case SourceKind::fsroot: return "fsroot";
    case SourceKind::archive: return "archive";
    case SourceKind::synthetic: return "synthetic";
    case SourceKind::example: return "example";
  }
  return "?";
}

Result<SourceKind> detect_source(const std::string& spec) {
  if (spec.empty()) return SourceKind::live;
  if (spec.starts_with("example:")) return SourceKind::example;
  switch (sys::path_kind(spec)) {
    case sys::PathKind::directory: return SourceKind::fsroot;
    case sys::PathKind::file: {
      if (has_archive_suffix(spec)) return SourceKind::archive;
      auto text = sys::read_file(spec, kMaxTopologyFileBytes);
      if (!text) return text.error();
      return detect_file(spec, *text);
    }
    case sys::PathKind::other: return Error{spec, "not a regular file or directory"};
    case sys::PathKind::missing: break;
  }
  if (looks_synthetic(spec)) return SourceKind::synthetic;
  return Error{spec, "no such file or directory (nor an hwloc synthetic description)"};
}

namespace {
Result<topo::Topology> load_kind(const std::string& spec, SourceKind kind, const std::string& origin);
}

Result<topo::Topology> load_topology(const std::string& spec) {
  auto kind = detect_source(spec);
  if (!kind) return kind.error();
  // A path is bytes: escaped so the origin prints and exports as UTF-8 text.
  std::string origin = std::string(to_string(*kind)) + (spec.empty() ? "" : ":" + one_line(spec));
  auto t = load_kind(spec, *kind, origin);
  // Loaders name the source by its origin; the user named it by what they typed.
  if (!t && !spec.empty() && t.error().what == origin) return Error{spec, t.error().why};
  return t;
}

namespace {

Result<topo::Topology> load_kind(const std::string& spec, SourceKind kind, const std::string& origin) {
  switch (kind) {
    case SourceKind::live: {
      auto t = load_with_hwloc({HwlocInput::Kind::live, "", "live", HwlocInput::Devices::sysfs});
      if (t && t->hostname.empty()) t->hostname = sys::hostname();
      return t;
    }
    case SourceKind::synthetic: {
      // hwloc builds the whole machine before gpubind can count it (minutes for "pack:1000
      // core:1000 pu:1000"): the PUs are the product of the levels' counts, checked first.
      uint64_t pus = synthetic_pus(spec);
      if (pus > uint64_t(topo::kMaxCpuId) + 1)
        return Error{spec, "describes " + (pus == UINT64_MAX ? std::string("2^64 or more") : std::to_string(pus)) +
                               " PUs, beyond gpubind's limit of " + std::to_string(topo::kMaxCpuId + 1)};
      return load_with_hwloc({HwlocInput::Kind::synthetic, spec, origin});
    }
    case SourceKind::example: {
      std::string name = spec.substr(8);
      for (const EmbeddedExample& e : embedded_examples())
        if (name == e.name) return load_json(spec, e.json);
      return Error{spec, "no such example (built in: " + example_names() + ")"};
    }
    case SourceKind::hwloc_xml: return load_with_hwloc({HwlocInput::Kind::xml_file, spec, origin});
    case SourceKind::fsroot: {
      auto dir = fsroot_dir(spec);
      if (!dir) return dir.error();
      if (Status s = sys::refuse_special_files(*dir); !s) return Error{spec, "holds " + s.error().why};
      return with_pci_known(load_with_hwloc({HwlocInput::Kind::fsroot, *dir, origin}), *dir);
    }
    case SourceKind::archive: {
      auto tmp = sys::extract_archive(spec);
      if (!tmp) return tmp.error();
      auto dir = fsroot_dir(tmp->path());
      if (!dir) return Error{spec, "the archive holds no gathered topology tree (no sys/ directory)"};
      return with_pci_known(load_with_hwloc({HwlocInput::Kind::fsroot, *dir, origin}), *dir);
    }
    case SourceKind::nccl_xml:
    case SourceKind::gpubind_json: {
      auto text = sys::read_file(spec, kMaxTopologyFileBytes);
      if (!text) return text.error();
      return kind == SourceKind::nccl_xml ? load_nccl_xml(*text, origin) : load_json(spec, *text);
    }
  }
  return Error{spec, "unsupported topology source"};
}

}  // namespace

}  // namespace gpubind::discover
