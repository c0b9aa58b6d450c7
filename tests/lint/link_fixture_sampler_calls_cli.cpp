// A deliberately broken "watch sampler" object: it hands an error back to the CLI, a layer the
// sampler does not declare (and that sits above it). The test
// lint.layer_link_rejects_a_sampler_calling_cli builds it the way layer_link_watch_sampler builds
// the sampler and expects the link to fail.
#include "cli/common.hpp"

namespace gpubind::watch {
int report_to_cli(const Error& e) { return cli::fail(e); }
}  // namespace gpubind::watch
