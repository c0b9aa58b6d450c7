// gpubind-podresources.so: the kubelet's pod-resources API (v1 List) over its unix socket, through
// gRPC, handed back as JSON text.
#include <grpcpp/grpcpp.h>

#include <chrono>
#include <cstdio>
#include <cstdlib>
#include <cstring>
#include <nlohmann/json.hpp>
#include <string>

#include "podresources.grpc.pb.h"
#include "sys/podresources_api.hpp"

namespace {

void copy_error(char* err, long errcap, const std::string& text) {
  if (err && errcap > 0) std::snprintf(err, size_t(errcap), "%s", text.c_str());
}

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
      containers.push_back({{"name", c.name()}, {"cpu_ids", cpus}, {"devices", devices}, {"memory", memory}});
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
    std::string json = to_json(response).dump();
    char* out = static_cast<char*>(std::malloc(json.size() + 1));
    if (!out) {
      copy_error(err, errcap, "out of memory");
      return nullptr;
    }
    std::memcpy(out, json.c_str(), json.size() + 1);
    return out;
  } catch (const std::exception& e) {
    copy_error(err, errcap, e.what());
    return nullptr;
  }
}

void release(char* json) { std::free(json); }

const GpubindPodResourcesApi kApi{1, list, release};

}  // namespace

extern "C" const GpubindPodResourcesApi* gpubind_podresources_api_v1() { return &kApi; }
