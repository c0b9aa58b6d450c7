#include "bench/stats.hpp"

#include <algorithm>
#include <cmath>

namespace gpubind::bench {

double quantile(const std::vector<double>& sorted, double q) {
  if (sorted.empty()) return 0;
  q = std::clamp(q, 0.0, 1.0);
  double pos = q * double(sorted.size() - 1);
  size_t lo = size_t(pos);
  size_t hi = std::min(lo + 1, sorted.size() - 1);
  double frac = pos - double(lo);
  return sorted[lo] + (sorted[hi] - sorted[lo]) * frac;
}

Summary summarize(std::vector<double> samples) {
  Summary s;
  if (samples.empty()) return s;
  std::sort(samples.begin(), samples.end());
  s.count = samples.size();
  s.min = samples.front();
  s.max = samples.back();
  s.p25 = quantile(samples, 0.25);
  s.p50 = quantile(samples, 0.50);
  s.p75 = quantile(samples, 0.75);
  s.p99 = quantile(samples, 0.99);
  double sum = 0;
  for (double x : samples) sum += x;
  s.mean = sum / double(s.count);
  if (s.count > 1 && s.mean > 0) {
    double sq = 0;
    for (double x : samples) sq += (x - s.mean) * (x - s.mean);
    s.cv = std::sqrt(sq / double(s.count - 1)) / s.mean;
  }
  return s;
}

std::vector<std::vector<size_t>> round_order(size_t strategies, size_t rounds) {
  std::vector<std::vector<size_t>> out(rounds);
  for (size_t r = 0; r < rounds; ++r)
    for (size_t i = 0; i < strategies; ++i) out[r].push_back((r + i) % strategies);
  return out;
}

std::vector<unsigned> steps_per_round(unsigned steps, unsigned rounds) {
  std::vector<unsigned> out(rounds, 0);
  for (unsigned r = 0; r < rounds; ++r) out[r] = steps / rounds + (r < steps % rounds ? 1 : 0);
  return out;
}

}  // namespace gpubind::bench
