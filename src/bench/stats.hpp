#pragma once
// The statistics `gpubind bench` reports, and the order in which it runs its strategies. Pure.
#include <cstddef>
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

// The order of every round: `strategies` run one after another, each round starting one further
// along (round r runs strategy r mod k first), so slow drift on the machine, or a noisy neighbour
// that comes and goes, falls on every strategy alike and no strategy always runs first or last.
std::vector<std::vector<size_t>> round_order(size_t strategies, size_t rounds);

// The steps each round runs: `steps` split as evenly as possible, the first rounds taking the
// remainder (10 over 4 rounds: 3 3 2 2). Rounds beyond `steps` get none.
std::vector<unsigned> steps_per_round(unsigned steps, unsigned rounds);

}  // namespace gpubind::bench
