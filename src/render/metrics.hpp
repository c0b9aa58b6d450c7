#pragma once
// `gpubind watch --listen`: what it has seen, in Prometheus' text exposition format (version
// 0.0.4). Every family has HELP and TYPE; counters end in _total; units are seconds and ratios
// 0-1. A rank's labels: node, pid, rank, local_rank, gpu (its index, as dcgm-exporter's gpu),
// UUID (as dcgm-exporter's), pci, slurm_job_id, slurm_step_id, torchelastic_run_id, k8s_namespace,
// k8s_pod, k8s_container ("" when unknown: Prometheus drops empty labels). None is `job` or
// `instance`, the labels Prometheus gives every target, nor `namespace`, `pod` or `container`,
// which Kubernetes scrape configs give the watch pod itself: with honor_labels false they would
// be renamed exported_*.
#include <initializer_list>
#include <map>
#include <string>
#include <vector>

#include "topo/topology.hpp"
#include "watch/watch.hpp"

namespace gpubind::render {

// What the exporter serves: the totals so far, the last interval, the sampler's own cost.
struct MetricsInput {
  std::string node;
  const topo::Topology* topo = nullptr;     // GPUs' index and UUID; nullptr: PCI addresses only
  const watch::Summary* summary = nullptr;  // totals per rank (counters)
  const watch::Interval* last = nullptr;    // the last interval (gauges); nullptr before the first
  double sample_seconds = 0;                // the last sample's own cost
  // watch --enforce: repins (or, mode "report", drifts reported) per rank's PID; nullptr: not enforcing.
  const std::map<int, uint64_t>* repins = nullptr;
  std::string enforce_mode = {};            // "enforce" or "report"
};

std::string metrics_text(const MetricsInput& in);

// name="value" pairs, in order, as one label set ("{node=\"n1\",check=\"swap\"}"), each value
// valid UTF-8 (Prometheus refuses a whole scrape for one bad byte) with \\, " and newline escaped.
std::string label_set(std::initializer_list<std::pair<const char*, std::string>> pairs);

// Every family metrics_text can emit (the dashboard and rule tests check their queries against it).
const std::vector<std::string>& metric_families();

}  // namespace gpubind::render
