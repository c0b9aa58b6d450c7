#pragma once
// torchrun's command-line values, parsed the way torchrun reads them (pure): --nnodes MIN:MAX,
// --redirects/--tee stream selections, --rdzv-conf key=value lists, the ${local_rank} macro.
#include <map>
#include <string>
#include <vector>

#include "util/result.hpp"

namespace gpubind::bind {

struct NodeRange {
  unsigned min = 1;
  unsigned max = 1;
};
// "2" -> 2:2, "1:4" -> 1:4.
Result<NodeRange> parse_nnodes(const std::string& s);

// Which standard streams a rank's --redirects / --tee select: bit 1 stdout, bit 2 stderr.
// "3" applies to every rank; "0:1,1:2" selects per local rank (others 0).
struct StreamSelection {
  unsigned all = 0;
  std::map<unsigned, unsigned> per_rank;
  unsigned of(unsigned local_rank) const;
};
Result<StreamSelection> parse_stream_selection(const std::string& flag, const std::string& s);

// "join_timeout=30,read_timeout=60" -> map; an empty string is an empty map.
Result<std::map<std::string, std::string>> parse_key_values(const std::string& flag, const std::string& s);

// torchrun replaces the literal "${local_rank}" in the worker's arguments with its local rank.
std::vector<std::string> substitute_local_rank(std::vector<std::string> args, unsigned local_rank);

}  // namespace gpubind::bind
