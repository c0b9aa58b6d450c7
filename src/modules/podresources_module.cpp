// gpubind-podresources.so: the kubelet's pod-resources API (v1 List) over its unix socket, through
// gRPC, handed back as JSON text.
#include <grpcpp/grpcpp.h>

#include <chrono>
#include <nlohmann/json.hpp>
#include <string>

#include "podresources.grpc.pb.h"
#include "modules/module_side.hpp"
#include "sys/podresources_api.hpp"

namespace {

using gpubind::module_side::copy_error;

nlohmann::json nodes(const v1::TopologyInfo& t) {
  nlohmann::json a = nlohmann::json::array();
  for (const auto& n : t.nodes()) a.push_back(n.id());
  return a;
}

nlohmann::json to_json(const v1::ListPodResourcesResponse& r) {
  nlohmann::json pods = nlohmann::json::array();
  for (const auto& p : r.pod_resources()) {
    nlohmann::json containers = nlohmann::json::array();
    for (const auto& c : p.containers()) {
      nlohmann::json devices = nlohmann::json::array(), memory = nlohmann::json::array(), cpus = nlohmann::json::array();
      for (auto id : c.cpu_ids()) cpus.push_back(id);
      for (const auto& d : c.devices()) {
        nlohmann::json ids = nlohmann::json::array();
        for (const auto& id : d.device_ids()) ids.push_back(id);
        devices.push_back({{"resource", d.resource_name()}, {"ids", ids}, {"numa", nodes(d.topology())}});
      }
      for (const auto& m : c.memory()) memory.push_back({{"type", m.memory_type()}, {"size", m.size()}, {"numa", nodes(m.topology())}});
      nlohmann::json claims = nlohmann::json::array();
      for (const auto& d : c.dynamic_resources()) {
        nlohmann::json claimed = nlohmann::json::array();
        for (const auto& cr : d.claim_resources()) {
          nlohmann::json cdi = nlohmann::json::array();
          for (const auto& x : cr.cdi_devices()) cdi.push_back(x.name());
          claimed.push_back({{"driver", cr.driver_name()}, {"pool", cr.pool_name()}, {"device", cr.device_name()}, {"cdi", cdi}});
        }
        claims.push_back({{"name", d.claim_name()}, {"namespace", d.claim_namespace()}, {"devices", claimed}});
      }
      containers.push_back({{"name", c.name()}, {"cpu_ids", cpus}, {"devices", devices}, {"memory", memory}, {"claims", claims}});
    }
    pods.push_back({{"name", p.name()}, {"namespace", p.namespace_()}, {"containers", containers}});
  }
  return {{"pods", pods}};
}

char* list(const char* socket_path, int timeout_ms, char* err, long errcap) {
  try {
    auto channel = grpc::CreateChannel(std::string("unix:") + socket_path, grpc::InsecureChannelCredentials());
    auto stub = v1::PodResourcesLister::NewStub(channel);
    grpc::ClientContext context;
    context.set_deadline(std::chrono::system_clock::now() + std::chrono::milliseconds(timeout_ms));
    v1::ListPodResourcesRequest request;
    v1::ListPodResourcesResponse response;
    grpc::Status status = stub->List(&context, request, &response);
    if (!status.ok()) {
      copy_error(err, errcap, "List: " + std::to_string(int(status.error_code())) + " " + status.error_message());
      return nullptr;
    }
    char* out = gpubind::module_side::allocated_copy(to_json(response).dump());
    if (!out) copy_error(err, errcap, "out of memory");
    return out;
  } catch (const std::exception& e) {
    copy_error(err, errcap, e.what());
    return nullptr;
  }
}

const GpubindPodResourcesApi kApi{1, list, gpubind::module_side::release_copy};

}  // namespace

extern "C" const GpubindPodResourcesApi* gpubind_podresources_api_v1() { return &kApi; }
