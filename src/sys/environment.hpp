#pragma once
// Reading the process environment: only here (lint rule R8), so every variable gpubind honours
// is found by one search and the layers above take values, not the environment. Changing the
// environment is the Binder's job (sys/binder.hpp).
#include <map>
#include <optional>
#include <string>
#include <vector>

namespace gpubind::sys {

// The variable's value; nullopt when it is not set (an empty value is a value).
std::optional<std::string> env_value(const std::string& name);

// The named variables that are set.
std::map<std::string, std::string> env_values(const std::vector<std::string>& names);

}  // namespace gpubind::sys
