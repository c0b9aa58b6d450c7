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

const char* to_string(Verdict v) {
  switch (v) {
    case Verdict::faster: return "faster";
    case Verdict::slower: return "slower";
    case Verdict::no_difference: return "no significant difference";
    case Verdict::too_few_runs: return "too few runs to tell";
  }
  return "?";
}

namespace {

// splitmix64: a small, well-mixed generator (the pure layer uses no <random>), enough to draw
// block starts.
struct SplitMix {
  uint64_t state;
  uint64_t next() {
    uint64_t z = (state += 0x9e3779b97f4a7c15ULL);
    z = (z ^ (z >> 30)) * 0xbf58476d1ce4e5b9ULL;
    z = (z ^ (z >> 27)) * 0x94d049bb133111ebULL;
    return z ^ (z >> 31);
  }
  size_t below(size_t n) { return size_t(next() % n); }
};

// The smallest L with L^3 >= n: the block length (no libm's cbrt in the binary).
size_t block_length(size_t n) {
  size_t l = 1;
  while (l * l * l < n) ++l;
  return l;
}

// One moving-block resample of `x` into `out` (same length), blocks of `block` steps (at least
// ceil(n^(1/3)), at most n), then its q-quantile.
double resampled_quantile(const std::vector<double>& x, double q, size_t block, SplitMix& rng, std::vector<double>& out) {
  size_t n = x.size(), l = std::min(n, std::max(block, block_length(n)));
  out.clear();
  while (out.size() < n) {
    size_t start = rng.below(n - l + 1);
    for (size_t i = start; i < start + l && out.size() < n; ++i) out.push_back(x[i]);
  }
  std::sort(out.begin(), out.end());
  return quantile(out, q);
}

}  // namespace

size_t min_steps_for_interval(double q) {
  if (q >= 1) return size_t(-1);
  size_t n = kMinStepsForInterval;
  while (double(n) * (1 - q) < kMinStepsBeyondQuantile - 1e-9) ++n;
  return n;
}

std::optional<RatioInterval> quantile_ratio(const std::vector<double>& a, const std::vector<double>& b, double q, size_t block,
                                            unsigned resamples, uint64_t seed) {
  size_t need = min_steps_for_interval(q);
  if (a.size() < need || b.size() < need || resamples < 40) return std::nullopt;
  std::vector<double> sa(a), sb(b);
  std::sort(sa.begin(), sa.end());
  std::sort(sb.begin(), sb.end());
  double qa = quantile(sa, q), qb = quantile(sb, q);
  if (qb <= 0) return std::nullopt;
  SplitMix rng{seed};
  std::vector<double> ratios, scratch;
  ratios.reserve(resamples);
  for (unsigned i = 0; i < resamples; ++i) {
    double ra = resampled_quantile(a, q, block, rng, scratch);
    double rb = resampled_quantile(b, q, block, rng, scratch);
    if (rb > 0) ratios.push_back(ra / rb);
  }
  if (ratios.size() < resamples / 2) return std::nullopt;
  std::sort(ratios.begin(), ratios.end());
  RatioInterval r;
  r.estimate = qa / qb;
  r.low = quantile(ratios, 0.025);
  r.high = quantile(ratios, 0.975);
  // Runs at different levels put the pooled quantile between them, and the resampled ratios can
  // all fall on one side of it: the percentile interval then misses the ratio it is about. Widened
  // to hold it, so a verdict never contradicts the ratio shown (it can only become less sure).
  r.low = std::min(r.low, r.estimate);
  r.high = std::max(r.high, r.estimate);
  r.verdict = r.high < 1 ? Verdict::faster : r.low > 1 ? Verdict::slower : Verdict::no_difference;
  return r;
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
