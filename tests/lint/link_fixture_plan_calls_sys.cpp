// A deliberately broken "plan" object: it calls into sys, a layer plan does not declare. The test
// lint.layer_link_rejects_a_crossing builds it the way layer_link_plan builds plan and expects
// the link to fail.
#include <string>

#include "sys/fsroot.hpp"

namespace gpubind::plan {
std::string host_for_plan() { return sys::hostname(); }
}  // namespace gpubind::plan
