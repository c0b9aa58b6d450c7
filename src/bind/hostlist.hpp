#pragma once
// Slurm host lists: "node[01-04,07],gpu5" -> node01 node02 node03 node04 node07 gpu5.
#include <optional>
#include <string>
#include <vector>

#include "util/result.hpp"

namespace gpubind::bind {

// Expands a host list (comma-separated entries, each with any number of bracket groups of
// numbers and ranges; zero padding kept: node[007-010] -> node007...node010) into at most
// `limit` hosts. A malformed list, or one longer than `limit` when `limit_is_error`, is an Error.
Result<std::vector<std::string>> expand_hosts(const std::string& nodelist, size_t limit = 100000, bool limit_is_error = true);

// The first host of a list, without expanding the rest.
std::optional<std::string> first_host(const std::string& nodelist);

}  // namespace gpubind::bind
