#pragma once
// Slurm host lists: "node[01-04,07],gpu5" -> the first host, "node01".
#include <optional>
#include <string>

namespace gpubind::bind {

std::optional<std::string> first_host(const std::string& nodelist);

}  // namespace gpubind::bind
