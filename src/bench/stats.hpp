#pragma once
// The statistics `gpubind bench` reports, and the order in which it runs its strategies. Pure.
#include <cstddef>
#include <cstdint>
#include <optional>
#include <vector>

namespace gpubind::bench {

// The q-quantile (0..1) of `sorted` (ascending, not empty), interpolated linearly between the
// two nearest ranks (R's and NumPy's default): the 0.5-quantile of {1, 2, 3, 4} is 2.5.
double quantile(const std::vector<double>& sorted, double q);

struct Summary {
  size_t count = 0;
  double min = 0, p25 = 0, p50 = 0, p75 = 0, p99 = 0, max = 0;
  double mean = 0;
  double cv = 0;  // coefficient of variation: the standard deviation (n-1) over the mean; 0 for one sample
};

// The summary of `samples` (any order); all zeros when empty.
Summary summarize(std::vector<double> samples);

// A ratio of two step-time quantiles (a strategy's over closest's) with its 95 % confidence
// interval, and what it lets one say.
enum class Verdict {
  faster,         // the strategy's steps are shorter: the interval lies below 1
  slower,         // longer: above 1
  no_difference,  // the interval holds 1: these steps cannot tell them apart
  too_few_runs,   // too few runs of a strategy for any test over runs (bench --ab): no verdict
};
const char* to_string(Verdict v);  // "faster", "slower", "no significant difference", "too few runs to tell"

struct RatioInterval {
  double estimate = 0;  // the ratio of the samples' own quantiles
  double low = 0, high = 0;  // the 2.5th and 97.5th percentiles of the bootstrapped ratios, widened to hold `estimate`
  Verdict verdict = Verdict::no_difference;
};

// Steps below which no interval is given, and the steps a q-quantile needs beyond it: a
// bootstrap of a tail quantile with fewer than 5 steps beyond it only reshuffles its largest few
// (measured: a p99 of 200 noisy steps gave "significant" differences between identical strategies).
inline constexpr size_t kMinStepsForInterval = 20;
inline constexpr double kMinStepsBeyondQuantile = 5;
// The steps per series an interval of the q-quantile needs: 20, 500 for the p99.
size_t min_steps_for_interval(double q);

// The q-quantile of `a` over that of `b` with a 95 % interval from a moving-block bootstrap: each
// series resampled on its own, in blocks of `block` consecutive steps (at least ceil(n^(1/3))), 2000
// times, with a fixed seed, so a record always gives the same interval. A step's time is not
// independent of its neighbours' (a noisy neighbour or a migration lasts several steps), nor of its
// round's (the machine drifts between rounds): bench passes a round's steps as the block, so the
// interval carries the rounds' spread too. nullopt when either series has fewer than
// min_steps_for_interval(q) steps or b's quantile is 0.
std::optional<RatioInterval> quantile_ratio(const std::vector<double>& a, const std::vector<double>& b, double q, size_t block = 0,
                                            unsigned resamples = 2000, uint64_t seed = 0x67707562696e64ULL);

// The order of every round: `strategies` run one after another, each round starting one further
// along (round r runs strategy r mod k first), so slow drift on the machine, or a noisy neighbour
// that comes and goes, falls on every strategy alike and no strategy always runs first or last.
std::vector<std::vector<size_t>> round_order(size_t strategies, size_t rounds);

// The steps each round runs: `steps` split as evenly as possible, the first rounds taking the
// remainder (10 over 4 rounds: 3 3 2 2). Rounds beyond `steps` get none.
std::vector<unsigned> steps_per_round(unsigned steps, unsigned rounds);

}  // namespace gpubind::bench
