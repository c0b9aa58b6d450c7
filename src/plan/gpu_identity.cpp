// Which GPUs a worker will see, and in which order: the environment rules of CUDA, ROCm, Level
// Zero and Slurm, applied to the topology. Identity mix-ups are the most common binding bug in
// this field (NVIDIA's gpu_affinity assumes NVML order, torchrun assumes cuda:LOCAL_RANK is the
// LOCAL_RANK-th physical GPU), so every step is recorded for --explain.
#include <algorithm>
#include <optional>
#include <set>
#include <string_view>

#include "plan/plan.hpp"
#include "util/strings.hpp"

namespace gpubind::plan {

using topo::Gpu;
using topo::Topology;
using topo::Vendor;

namespace {

std::string env_get(const std::map<std::string, std::string>& env, const char* name) {
  auto it = env.find(name);
  return it == env.end() ? std::string() : it->second;
}

bool env_has(const std::map<std::string, std::string>& env, const char* name) { return env.count(name) > 0; }

std::string describe(const Gpu* g) {
  return std::to_string(g->index) + (g->stack ? "." + std::to_string(*g->stack) : "") + " (" + g->pci + ")";
}

std::string describe(const std::vector<const Gpu*>& gpus) {
  std::vector<std::string> parts;
  for (const Gpu* g : gpus) parts.push_back(describe(g));
  return parts.empty() ? "none" : join(parts, ", ");
}

Error env_error(const std::string& name, const std::string& value, const std::string& why) {
  return Error{name + "='" + value + "'", why, ErrorKind::usage};
}

// The GPUs NVIDIA_VISIBLE_DEVICES names, in PCI order: indices (the host's), GPU UUIDs, or MIG
// UUIDs (their GPU), among `physical` (the NVIDIA GPUs of `t`). nullopt for "all"; none for "none"
// and "void" (no GPU device at all). A not_found Error when it names UUIDs and the topology has
// none (NVML is not loaded for this variable: the device plugin sets it in every GPU pod, and exec
// must stay fast there).
Result<std::optional<std::vector<const Gpu*>>> container_gpus(const Topology& t, const std::vector<const Gpu*>& physical,
                                                              const std::string& value) {
  const char* name = "NVIDIA_VISIBLE_DEVICES";
  if (value == "all" || value.empty()) return std::optional<std::vector<const Gpu*>>();
  std::vector<const Gpu*> out;
  if (value == "none" || value == "void") return std::optional<std::vector<const Gpu*>>(out);
  for (std::string_view item : split(value, ',')) {
    std::string id(trim(item));
    std::string lower = to_lower(id);
    const Gpu* found = nullptr;
    if (auto index = parse_uint(id)) {
      for (const Gpu* g : physical)
        if (g->index == *index) found = g;
      if (!found) return env_error(name, value, "GPU " + id + " is not in the topology");
    } else if (lower.starts_with("gpu-") || lower.starts_with("mig-")) {
      found = topo::find_gpu_by_uuid(t, id);
      if (std::find(physical.begin(), physical.end(), found) == physical.end()) found = nullptr;
      bool uuids_known = std::any_of(physical.begin(), physical.end(), [](const Gpu* g) { return !g->uuid.empty(); });
      if (!found && !uuids_known) return Error{name, "uuids unknown", ErrorKind::not_found};
      if (!found) return env_error(name, value, id + " matches no GPU's UUID");
    } else {
      return env_error(name, value, "expected all, none, void, or GPU indices or UUIDs separated by commas");
    }
    if (std::find(out.begin(), out.end(), found) == out.end()) out.push_back(found);
  }
  std::sort(out.begin(), out.end(), [](const Gpu* a, const Gpu* b) { return a->index < b->index; });
  return std::optional<std::vector<const Gpu*>>(out);
}

// Picks the vendor whose GPUs the workers drive: the one whose runtime variables are set, else
// the one with the most GPUs (NVIDIA, AMD, Intel, other on ties).
Vendor pick_vendor(const Topology& t, const std::map<std::string, std::string>& env) {
  std::map<Vendor, unsigned> count;
  for (const Gpu& g : t.gpus) ++count[g.vendor];
  if ((env_has(env, "ROCR_VISIBLE_DEVICES") || env_has(env, "HIP_VISIBLE_DEVICES")) && count[Vendor::amd]) return Vendor::amd;
  if (env_has(env, "ZE_AFFINITY_MASK") && count[Vendor::intel]) return Vendor::intel;
  Vendor best = Vendor::nvidia;
  unsigned most = 0;
  for (Vendor v : {Vendor::nvidia, Vendor::amd, Vendor::intel, Vendor::other})
    if (count[v] > most) {
      most = count[v];
      best = v;
    }
  return best;
}

// Parses an index list "0,2,3" (ranges "0-3" allowed, in order); nullopt on anything else.
std::optional<std::vector<unsigned>> parse_indices(const std::string& s) {
  std::vector<unsigned> out;
  for (std::string_view tok : split(s, ',')) {
    tok = trim(tok);
    size_t dash = tok.find('-');
    auto lo = parse_uint(tok.substr(0, dash));
    auto hi = dash == std::string_view::npos ? lo : parse_uint(tok.substr(dash + 1));
    if (!lo || !hi || *lo > *hi || *hi > 4096) return std::nullopt;
    for (uint64_t i = *lo; i <= *hi; ++i) out.push_back(unsigned(i));
  }
  return out;
}

// What else tells a MIG instance's parent when the topology records no instances.
struct MigHints {
  std::vector<const Gpu*> allocation;                        // Slurm's GPUs for the job, when it says
  std::optional<std::vector<std::string>> parents;           // Request::openable_mig_parents
  std::vector<std::string>* explain = nullptr;
};

// The GPU a "MIG-<uuid>" instance id belongs to: the topology's recorded instances (NVML's, live),
// else the one GPU Slurm allocated, else the only GPU among `base` whose MIG capability files this
// process may open, else the only candidate.
Result<const Gpu*> resolve_mig(const std::string& name, const std::string& value, const std::string& tok,
                               const std::vector<const Gpu*>& base, std::vector<std::string>& warnings, const MigHints* hints) {
  const std::optional<std::vector<std::string>>* mig_parents = hints ? &hints->parents : nullptr;
  std::vector<std::string>* explain = hints ? hints->explain : nullptr;
  std::string lower = to_lower(tok);
  std::vector<const Gpu*> hits;
  bool any_known = false;
  for (const Gpu* g : base) {
    any_known = any_known || !g->mig_uuids.empty();
    for (const std::string& m : g->mig_uuids)
      if (to_lower(m).starts_with(lower)) {
        hits.push_back(g);
        break;
      }
  }
  if (hits.size() == 1) return hits[0];
  if (hits.size() > 1) return env_error(name, value, "'" + tok + "' matches MIG instances of more than one GPU");
  if (any_known) return env_error(name, value, "no GPU has a MIG instance '" + tok + "'");
  if (hints && hints->allocation.size() == 1 && base.size() > 1 &&
      std::find(base.begin(), base.end(), hints->allocation[0]) != base.end()) {
    if (explain) explain->push_back(name + " entry " + tok + ": a MIG instance of GPU " + describe(hints->allocation[0]) + ", the one GPU Slurm allocated");
    return hints->allocation[0];
  }
  if (mig_parents && *mig_parents && base.size() > 1) {
    std::vector<const Gpu*> given;
    for (const Gpu* g : base)
      if (std::find((*mig_parents)->begin(), (*mig_parents)->end(), g->pci) != (*mig_parents)->end()) given.push_back(g);
    if (given.size() == 1) {
      if (explain)
        explain->push_back(name + " entry " + tok + ": a MIG instance of GPU " + describe(given[0]) + ", the only GPU whose MIG "
                           "capability files (/dev/nvidia-caps) this process may open");
      return given[0];
    }
  }
  if (base.size() == 1) {
    warnings.push_back(name + " entry " + tok + " is a MIG instance; the topology does not list MIG instances, so it is taken "
                       "as one of the only candidate GPU " + describe(base[0]));
    return base[0];
  }
  return env_error(name, value, "'" + tok + "' is a MIG instance id, which does not name its parent GPU, and the topology "
                                "lists no MIG instances (they come from NVML, not from sysfs or hwloc) while " +
                                std::to_string(base.size()) + " GPUs could be its parent" +
                                (mig_parents && *mig_parents ? " (the MIG capability files this process may open belong to " +
                                                                   std::to_string((*mig_parents)->size()) + " GPU(s))"
                                                             : std::string()) + "; give the parent's index or GPU- "
                                "UUID, a topology with mig_uuids, or restrict the GPUs (SLURM_STEP_GPUS)");
}

// The devices a runtime variable selects from `base` (the GPUs the runtime enumerates, in its
// order). Integer entries index `base`; "GPU-..." entries match UUID prefixes; an integer past
// the end stops the list there, as CUDA and ROCm do (with a warning).
Result<std::vector<const Gpu*>> select(const std::string& name, const std::string& value, const std::vector<const Gpu*>& base,
                                       bool allow_repeats, std::vector<std::string>& warnings, const MigHints* hints = nullptr) {
  std::vector<const Gpu*> out;
  std::string v(trim(value));
  if (v.empty()) return out;  // set but empty: the runtime sees no device
  for (std::string_view raw : split(v, ',')) {
    std::string tok(trim(raw));
    if (tok.empty()) return env_error(name, value, "empty entry");
    const Gpu* g = nullptr;
    if (tok == "-1") {
      warnings.push_back(name + " entry -1 hides this and every later device");
      break;
    }
    if (auto idx = parse_uint(tok)) {
      if (*idx >= base.size()) {
        warnings.push_back(name + " entry " + tok + " is past the " + std::to_string(base.size()) +
                           " devices the runtime enumerates; it and later entries are ignored, as the runtime does");
        break;
      }
      g = base[*idx];
    } else {
      std::string lower = to_lower(tok);
      std::string uuid = lower;
      if (lower.starts_with("mig-gpu-")) {
        // Pre-R470 MIG ids carry the parent: MIG-GPU-<uuid>/<gi>/<ci>.
        uuid = lower.substr(4, lower.find('/') == std::string::npos ? std::string::npos : lower.find('/') - 4);
      } else if (lower.starts_with("mig-")) {
        // R470+ MIG ids (as Slurm and Kubernetes export them) do not name their parent GPU: the
        // topology's MIG instances tell it; failing that, a single candidate GPU must be it.
        auto mig = resolve_mig(name, value, tok, base, warnings, hints);
        if (!mig) return mig.error();
        out.push_back(*mig);  // two instances of one GPU are two devices: repeats are fine
        continue;
      } else if (!lower.starts_with("gpu-")) {
        return env_error(name, value, "'" + tok + "' is neither an index nor a GPU- UUID");
      }
      bool any_uuid = std::any_of(base.begin(), base.end(), [](const Gpu* x) { return !x->uuid.empty(); });
      if (!any_uuid) return env_error(name, value, "it names GPUs by UUID but the topology records no GPU UUIDs");
      std::vector<const Gpu*> hits;
      for (const Gpu* x : base)
        if (!x->uuid.empty() && to_lower(x->uuid).starts_with(uuid)) hits.push_back(x);
      if (hits.empty()) return env_error(name, value, "no GPU has a UUID starting with '" + tok + "'");
      if (hits.size() > 1) return env_error(name, value, "'" + tok + "' matches more than one GPU UUID");
      g = hits[0];
    }
    if (!allow_repeats && std::find(out.begin(), out.end(), g) != out.end())
      return env_error(name, value, "GPU " + describe(g) + " is listed twice");
    out.push_back(g);
  }
  return out;
}

// CUDA's default order (CUDA_DEVICE_ORDER unset or FASTEST_FIRST) numbers the fastest GPU 0.
// Among GPUs of one model that is PCI order; among mixed models CUDA ranks by compute capability,
// newest first, then PCI bus. Returns the comparator's verdict for `physical` (sorted in PCI
// order): true when it reorders them, which it can only do when every model is known.
bool cuda_fastest_first(std::vector<const Gpu*>& physical, const std::map<std::string, std::string>& env,
                        std::vector<std::string>& explain, std::vector<std::string>& warnings) {
  bool identical = std::all_of(physical.begin(), physical.end(), [&](const Gpu* g) { return g->device_id == physical[0]->device_id; });
  std::string order = env_get(env, "CUDA_DEVICE_ORDER");
  if (identical || order == "PCI_BUS_ID") return false;
  std::map<const Gpu*, unsigned> cc;
  for (const Gpu* g : physical)
    if (auto c = topo::nvidia_compute_capability(g->device_id)) cc[g] = *c;
  if (cc.size() < physical.size()) {
    warnings.push_back("the GPUs are not all the same model, CUDA_DEVICE_ORDER is not PCI_BUS_ID and the models of some are "
                       "unknown: CUDA numbers them fastest first, which may differ from the PCI order used here; set "
                       "CUDA_DEVICE_ORDER=PCI_BUS_ID");
    return false;
  }
  std::stable_sort(physical.begin(), physical.end(), [&](const Gpu* a, const Gpu* b) { return cc[a] > cc[b]; });
  std::vector<std::string> parts;
  for (const Gpu* g : physical)
    parts.push_back(describe(g) + " cc " + std::to_string(cc[g] / 10) + "." + std::to_string(cc[g] % 10));
  explain.push_back("CUDA_DEVICE_ORDER=" + (order.empty() ? std::string("FASTEST_FIRST (unset)") : order) +
                    " with mixed GPU models: CUDA numbers them by compute capability, newest first, then PCI bus: " +
                    join(parts, ", ") + " (CUDA documents only that the fastest is device 0; set CUDA_DEVICE_ORDER=PCI_BUS_ID "
                    "for a documented order)");
  return true;
}

// What the GPU resolution knows, stage by stage: the vendor's GPUs in the runtime's order, which
// of them this process may open, what the runtime enumerates, and at the end what is visible.
struct GpuView {
  GpuView(const Topology& topology, const std::map<std::string, std::string>& environment, std::vector<std::string>& ex,
          std::vector<std::string>& warn)
      : t(topology), env(environment), explain(ex), warnings(warn) {}
  const Topology& t;
  const std::map<std::string, std::string>& env;
  std::vector<std::string>& explain;
  std::vector<std::string>& warnings;
  Vendor vendor = Vendor::other;
  std::vector<const Gpu*> physical;   // the runtime's order (CUDA: fastest first with mixed models)
  std::vector<const Gpu*> pci_order;  // the same GPUs by index
  bool reordered = false;             // physical differs from pci_order
  std::optional<std::vector<const Gpu*>> openable;  // the GPUs this process may open, when known
  bool confined = false;                            // openable hides some GPUs
  std::vector<const Gpu*> base;                     // what the runtime enumerates
  std::optional<std::set<unsigned>> slurm_set;      // Slurm's allocation, physical indices
  std::vector<const Gpu*> visible;
  std::deque<Gpu>* stacks = nullptr;                // where one-stack entries live (VisibleGpus::stacks)
  std::optional<std::vector<std::string>> mig_parents;  // Request::openable_mig_parents
  std::vector<const Gpu*> slurm_alloc;                  // the GPUs SLURM_STEP_GPUS / SLURM_JOB_GPUS name
};

// The entry for stack `s` of `g` (Level Zero's FLAT device, or COMPOSITE's "card.stack").
const Gpu* stack_of(GpuView& v, const Gpu* g, unsigned s) {
  Gpu& copy = v.stacks->emplace_back(*g);
  copy.stack = s;
  return &copy;
}

// Intel GPUs through Level Zero: FLAT and COMBINED enumerate every stack of the GPUs `base`
// holds as a device of its own, card by card; ZE_AFFINITY_MASK then indexes that list
// ("7": card 3 stack 1 with two stacks a card). COMPOSITE enumerates cards, and the mask names
// a card ("3") or one of its stacks ("3.1").
Status level_zero(GpuView& v) {
  auto h = ze_hierarchy(v.env);
  if (!h) return h.error();
  bool multi = std::any_of(v.base.begin(), v.base.end(), [](const Gpu* g) { return g->stacks > 1; });
  if (*h != ZeHierarchy::composite && multi) {
    std::vector<const Gpu*> flat;
    for (const Gpu* g : v.base)
      for (unsigned s = 0; s < g->stacks; ++s) flat.push_back(g->stacks > 1 ? stack_of(v, g, s) : g);
    v.base = v.visible = flat;
    v.explain.push_back(std::string("ZE_FLAT_DEVICE_HIERARCHY=") + (env_has(v.env, "ZE_FLAT_DEVICE_HIERARCHY") ? env_get(v.env, "ZE_FLAT_DEVICE_HIERARCHY") : "FLAT (unset: Level Zero's default)") +
                        ": each stack is a device: " + describe(v.base));
  }
  if (!env_has(v.env, "ZE_AFFINITY_MASK")) return Ok{};
  std::string value = env_get(v.env, "ZE_AFFINITY_MASK");
  std::string cards;  // the mask with COMPOSITE's stack entries as their card, for select()
  std::vector<std::optional<unsigned>> stack_entry;
  for (std::string_view tok : split(value, ',')) {
    std::string_view entry = trim(tok);
    size_t dot = entry.find('.');
    if (dot != std::string_view::npos && *h != ZeHierarchy::composite && multi)
      return env_error("ZE_AFFINITY_MASK", value, "'" + std::string(entry) + "' names a card's stack, which only the COMPOSITE "
                                                  "hierarchy does; in FLAT (the default) and COMBINED every stack is a device: "
                                                  "give its index, or set ZE_FLAT_DEVICE_HIERARCHY=COMPOSITE");
    auto s = dot == std::string_view::npos ? std::nullopt : parse_uint(entry.substr(dot + 1));
    if (dot != std::string_view::npos && !s)
      return env_error("ZE_AFFINITY_MASK", value, "'" + std::string(entry) + "' is not CARD.STACK");
    stack_entry.push_back(s ? std::optional<unsigned>(unsigned(*s)) : std::nullopt);
    cards += (cards.empty() ? "" : ",") + std::string(entry.substr(0, dot));
  }
  auto r = select("ZE_AFFINITY_MASK", cards, v.base, true, v.warnings);
  if (!r) return env_error("ZE_AFFINITY_MASK", value, r.error().why);
  for (size_t i = 0; i < r->size() && i < stack_entry.size(); ++i) {
    const Gpu* card = (*r)[i];
    if (!stack_entry[i] || card->stacks <= 1) continue;  // stacks unknown (1): the entry is its card
    if (*stack_entry[i] >= card->stacks)
      return env_error("ZE_AFFINITY_MASK", value, "GPU " + describe(card) + " has " + std::to_string(card->stacks) + " stack(s): no stack " +
                                                      std::to_string(*stack_entry[i]));
    (*r)[i] = stack_of(v, card, *stack_entry[i]);
  }
  v.visible = *r;
  v.explain.push_back("ZE_AFFINITY_MASK=" + value + " -> visible: " + describe(v.visible));
  return Ok{};
}

// Where CUDA enumerates a subset (a confined allocation), it orders that subset the same way.
std::vector<const Gpu*> in_cuda_order(const GpuView& v, std::vector<const Gpu*> subset) {
  if (v.reordered)
    std::stable_sort(subset.begin(), subset.end(), [&](const Gpu* a, const Gpu* b) {
      return std::find(v.physical.begin(), v.physical.end(), a) < std::find(v.physical.begin(), v.physical.end(), b);
    });
  return subset;
}

// The GPUs this process may open, when the caller could tell (live): a device cgroup or a
// container hides the others, and the runtime numbers what is left from 0.
void device_confinement(GpuView& v, const Request& req) {
  if (!req.openable_gpus) return;
  v.openable.emplace();
  for (const Gpu* g : v.physical)
    if (std::find(req.openable_gpus->begin(), req.openable_gpus->end(), g->pci) != req.openable_gpus->end()) v.openable->push_back(g);
}

// A container's GPUs as the NVIDIA container toolkit was told them (NVIDIA_VISIBLE_DEVICES, set
// by the Kubernetes device plugin): it gives the container those GPUs' device files only, and the
// runtime numbers them from 0. The device files are believed when they can tell.
Status container(GpuView& v) {
  if (v.vendor != Vendor::nvidia || !env_has(v.env, "NVIDIA_VISIBLE_DEVICES")) return Ok{};
  auto named = container_gpus(v.t, v.physical, env_get(v.env, "NVIDIA_VISIBLE_DEVICES"));
  std::string given = "NVIDIA_VISIBLE_DEVICES=" + env_get(v.env, "NVIDIA_VISIBLE_DEVICES");
  if (!named && named.error().kind != ErrorKind::not_found) return named.error();
  if (!named) {
    std::string how = v.openable ? "the device files say which GPUs it has" : "planning with every GPU";
    (v.openable ? v.explain : v.warnings)
        .push_back(given + " names GPUs by UUID and the topology has none (NVML is not asked for this variable): " + how);
  } else if (!*named) {
    v.explain.push_back(given + ": every GPU");
  } else if (!v.openable) {
    v.openable = **named;
    v.explain.push_back(given + ": the container's GPUs are " + describe(**named));
  } else if (std::set<const Gpu*>(v.openable->begin(), v.openable->end()) != std::set<const Gpu*>((*named)->begin(), (*named)->end())) {
    v.warnings.push_back(given + " names GPU(s) " + describe(**named) + " but this process may open " + describe(*v.openable) +
                         (v.openable->size() == v.physical.size() ? " (a privileged container sees every GPU)" : "") +
                         ": planning for the ones it can open");
  }
  return Ok{};
}

// The GPUs the pod's DRA metadata files name: the container's when nothing else tells (the
// device files do where they can), a warning where they disagree.
void pod_claims(GpuView& v, const Request& req) {
  if (!req.pod_metadata) return;
  v.explain.insert(v.explain.end(), req.pod_metadata->explain.begin(), req.pod_metadata->explain.end());
  v.warnings.insert(v.warnings.end(), req.pod_metadata->warnings.begin(), req.pod_metadata->warnings.end());
  std::vector<const Gpu*> named;
  for (const Gpu* g : v.physical)
    if (std::find(req.pod_metadata->gpus.begin(), req.pod_metadata->gpus.end(), g->pci) != req.pod_metadata->gpus.end()) named.push_back(g);
  if (named.empty()) return;
  if (!v.openable) {
    v.openable = named;
    v.explain.push_back("the pod's DRA metadata: the container's GPUs are " + describe(named));
  } else if (std::set<const Gpu*>(v.openable->begin(), v.openable->end()) != std::set<const Gpu*>(named.begin(), named.end())) {
    v.warnings.push_back("the pod's DRA metadata names GPU(s) " + describe(named) + " but this process may open " + describe(*v.openable) +
                         ": planning for the ones it can open");
  } else {
    v.explain.push_back("the pod's DRA metadata names GPU(s) " + describe(named) + ", the ones this process may open");
  }
}

// What the runtime enumerates: the GPUs this process may open, when that hides some.
void enumerated(GpuView& v) {
  v.confined = v.openable && v.openable->size() < v.physical.size();
  v.base = v.confined ? *v.openable : v.physical;
  if (v.confined)
    v.explain.push_back("devices: this process may open only GPU(s) " + describe(*v.openable) +
                        " (device cgroup or container): the runtime enumerates those, numbered from 0");
  else if (v.openable)
    v.explain.push_back("devices: every GPU's device file can be opened (no device confinement)");
}

// Slurm's allocation, in physical indices. With ConstrainDevices the runtime only enumerates
// these and numbers them from 0, so CUDA_VISIBLE_DEVICES=0,1 then means SLURM_STEP_GPUS[0..1].
Status scheduler_allocation(GpuView& v) {
  for (const char* name : {"SLURM_STEP_GPUS", "SLURM_JOB_GPUS"}) {
    if (!env_has(v.env, name)) continue;
    std::string value = env_get(v.env, name);
    auto idx = parse_indices(value);
    if (!idx) return env_error(name, value, "expected a comma-separated list of GPU indices");
    std::vector<const Gpu*> alloc;
    for (unsigned i : *idx) {
      auto it = std::find_if(v.pci_order.begin(), v.pci_order.end(), [&](const Gpu* g) { return g->index == i; });
      if (it == v.pci_order.end()) return env_error(name, value, "GPU " + std::to_string(i) + " is not in the topology");
      alloc.push_back(*it);
    }
    v.slurm_set = std::set<unsigned>(idx->begin(), idx->end());
    v.slurm_alloc = alloc;
    v.explain.push_back(std::string(name) + "=" + value + ": the job's GPUs are " + describe(alloc));
    if (!v.confined) {
      v.base = alloc;
    } else if (std::set<const Gpu*>(alloc.begin(), alloc.end()) != std::set<const Gpu*>(v.openable->begin(), v.openable->end())) {
      v.warnings.push_back(std::string(name) + "=" + value + " names GPU(s) " + describe(alloc) + " but this process may open " +
                           describe(*v.openable) + ": planning for the ones it can open");
    }
    break;
  }
  return Ok{};
}

// Without device confinement the runtime enumerates every GPU and Slurm writes physical indices
// into the variable; with it, indices are positions in the allocation. Which GPUs NAME indexes.
std::vector<const Gpu*> indexed_by(GpuView& v, const char* name, const std::string& value) {
  auto idx = parse_indices(value);
  if (v.openable) {
    v.explain.push_back(std::string(name) + (v.confined ? " indexes the GPUs this process may open (devices confined)"
                                                        : " holds physical indices (every GPU can be opened)"));
    return v.confined ? v.base : v.physical;
  }
  if (idx && std::set<unsigned>(idx->begin(), idx->end()) == *v.slurm_set && !idx->empty()) {
    v.explain.push_back(std::string(name) + " holds the allocation's physical indices (no device confinement)");
    // Read as positions in a confined allocation the same value would select other GPUs (or
    // none): the topology cannot tell which reading the runtime uses, so say it is a guess.
    bool identity = true;
    for (size_t k = 0; k < idx->size(); ++k) identity = identity && (*idx)[k] < v.base.size() && v.base[(*idx)[k]]->index == (*idx)[k];
    if (!identity)
      v.warnings.push_back(std::string(name) + "=" + value + " equals the allocation's GPU indices, so they are taken as physical "
                           "indices (no device confinement); with ConstrainDevices the runtime would number the allocation "
                           "from 0 and read them differently. This is a guess: the topology does not show which devices the "
                           "job can open (run gpubind on the node to check them)");
    return v.physical;
  }
  if (idx) v.explain.push_back(std::string(name) + " indexes the allocation (devices confined and renumbered from 0)");
  return v.base;
}

// The runtime's selection variable NAME over `from`, what it enumerates.
Status apply_variable(GpuView& v, const char* name, const std::vector<const Gpu*>& from, bool repeats) {
  std::string value = env_get(v.env, name);
  std::vector<const Gpu*> enumerated = v.slurm_set && from == v.base ? indexed_by(v, name, value) : from;
  MigHints hints{v.slurm_alloc, v.mig_parents, &v.explain};
  auto sel = select(name, value, enumerated, repeats, v.warnings, &hints);
  if (!sel) return sel.error();
  v.visible = *sel;
  v.explain.push_back(std::string(name) + "=" + value + " -> visible: " + describe(v.visible));
  return Ok{};
}

// The runtime's own variables: CUDA_VISIBLE_DEVICES; ROCR_ then HIP_VISIBLE_DEVICES; ZE_AFFINITY_MASK.
Status runtime_variables(GpuView& v) {
  v.visible = v.base;
  if (v.vendor == Vendor::nvidia || v.vendor == Vendor::other) {
    v.base = v.visible = in_cuda_order(v, v.base);
    if (env_has(v.env, "CUDA_VISIBLE_DEVICES")) return apply_variable(v, "CUDA_VISIBLE_DEVICES", v.base, false);
  } else if (v.vendor == Vendor::amd) {
    // ROCR_VISIBLE_DEVICES filters what the ROCm runtime enumerates; HIP_VISIBLE_DEVICES (or
    // CUDA_VISIBLE_DEVICES, which HIP also reads) then indexes that list.
    if (env_has(v.env, "ROCR_VISIBLE_DEVICES"))
      if (Status s = apply_variable(v, "ROCR_VISIBLE_DEVICES", v.base, false); !s) return s;
    const char* hip = env_has(v.env, "HIP_VISIBLE_DEVICES")    ? "HIP_VISIBLE_DEVICES"
                      : env_has(v.env, "CUDA_VISIBLE_DEVICES") ? "CUDA_VISIBLE_DEVICES"
                                                               : nullptr;
    if (hip) return apply_variable(v, hip, std::vector<const Gpu*>(v.visible), false);
  } else if (v.vendor == Vendor::intel) {
    return level_zero(v);
  }
  return Ok{};
}

}  // namespace

const std::vector<std::string>& gpu_env_names() {
  static const std::vector<std::string> names = {"CUDA_VISIBLE_DEVICES",     "CUDA_DEVICE_ORDER",      "ROCR_VISIBLE_DEVICES",
                                                 "HIP_VISIBLE_DEVICES",      "ZE_AFFINITY_MASK",       "ZE_FLAT_DEVICE_HIERARCHY",
                                                 "SLURM_STEP_GPUS",          "SLURM_JOB_GPUS",         "NVIDIA_VISIBLE_DEVICES",
                                                 "KUBERNETES_SERVICE_HOST"};
  return names;
}

Result<ZeHierarchy> ze_hierarchy(const std::map<std::string, std::string>& env) {
  if (!env_has(env, "ZE_FLAT_DEVICE_HIERARCHY")) return ZeHierarchy::flat;
  std::string value = env_get(env, "ZE_FLAT_DEVICE_HIERARCHY");
  if (value == "FLAT") return ZeHierarchy::flat;
  if (value == "COMPOSITE") return ZeHierarchy::composite;
  if (value == "COMBINED") return ZeHierarchy::combined;
  return env_error("ZE_FLAT_DEVICE_HIERARCHY", value, "expected FLAT, COMPOSITE or COMBINED");
}

std::string ze_affinity_mask(const Topology& t, const std::vector<const Gpu*>& gpus, ZeHierarchy h) {
  std::vector<std::string> entries;
  for (const Gpu* g : gpus) {
    if (h == ZeHierarchy::composite || g->stacks <= 1) {
      entries.push_back(std::to_string(g->index) + (h == ZeHierarchy::composite && g->stack ? "." + std::to_string(*g->stack) : ""));
      continue;
    }
    unsigned first = 0;  // the flat index of this card's stack 0: every stack of the cards before it
    for (const Gpu& o : t.gpus)
      if (o.vendor == Vendor::intel && o.index < g->index) first += o.stacks;
    if (g->stack) entries.push_back(std::to_string(first + *g->stack));
    else
      for (unsigned s = 0; s < g->stacks; ++s) entries.push_back(std::to_string(first + s));
  }
  return join(entries, ",");
}

Result<VisibleGpus> visible_gpus(const Topology& t, const Request& req, std::vector<std::string>& explain,
                                 std::vector<std::string>& warnings) {
  VisibleGpus out;
  GpuView v(t, req.env, explain, warnings);
  v.stacks = &out.stacks;
  v.mig_parents = req.openable_mig_parents;
  v.vendor = pick_vendor(t, req.env);
  for (const Gpu& g : t.gpus)
    if (g.vendor == v.vendor) v.physical.push_back(&g);
  std::sort(v.physical.begin(), v.physical.end(), [](const Gpu* a, const Gpu* b) { return a->index < b->index; });
  if (v.physical.empty()) {
    explain.push_back("GPUs: the topology has none");
    return out;
  }
  explain.push_back(std::string("GPUs: ") + std::to_string(v.physical.size()) + " " + to_string(v.vendor) +
                    " GPU(s) by index: " + describe(v.physical));
  size_t first_warning = warnings.size();
  v.pci_order = v.physical;
  v.reordered = v.vendor == Vendor::nvidia && cuda_fastest_first(v.physical, req.env, explain, warnings);
  device_confinement(v, req);
  pod_claims(v, req);
  if (Status s = container(v); !s) return s.error();
  enumerated(v);
  if (Status s = scheduler_allocation(v); !s) return s.error();
  if (Status s = runtime_variables(v); !s) return s.error();
  for (size_t i = first_warning; i < warnings.size(); ++i) explain.push_back("warning: " + warnings[i]);
  out.gpus = std::move(v.visible);
  return out;
}

}  // namespace gpubind::plan
