#pragma once
// Example machines compiled into the binary (data/examples/*.json, see
// scripts/make-example-topologies.py): `--topology example:dgx-h100`.
#include <string>
#include <vector>

namespace gpubind::discover {

struct EmbeddedExample {
  const char* name;
  const char* json;
};

const std::vector<EmbeddedExample>& embedded_examples();

}  // namespace gpubind::discover
