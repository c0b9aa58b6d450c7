// A stand-in for the kubelet's pod-resources API (v1 List), for k8s check's tests: serves, on a
// unix socket, the answer written in a JSON file (proto3's JSON form of ListPodResourcesResponse),
// until it is killed. With "--fail CODE" every call fails with that gRPC status code instead.
// Usage: fake_kubelet SOCKET ANSWER.json [--fail CODE]
#include <google/protobuf/util/json_util.h>
#include <grpcpp/grpcpp.h>

#include <cstdio>
#include <fstream>
#include <sstream>
#include <string>

#include "podresources.grpc.pb.h"

namespace {

class Lister final : public v1::PodResourcesLister::Service {
 public:
  Lister(v1::ListPodResourcesResponse answer, int fail) : m_answer(std::move(answer)), m_fail(fail) {}
  grpc::Status List(grpc::ServerContext*, const v1::ListPodResourcesRequest*, v1::ListPodResourcesResponse* out) override {
    if (m_fail) return grpc::Status(grpc::StatusCode(m_fail), "the fake kubelet was told to fail");
    *out = m_answer;
    return grpc::Status::OK;
  }

 private:
  v1::ListPodResourcesResponse m_answer;
  int m_fail;
};

}  // namespace

int main(int argc, char** argv) {
  if (argc != 3 && !(argc == 5 && std::string(argv[3]) == "--fail")) {
    std::fprintf(stderr, "usage: fake_kubelet SOCKET ANSWER.json [--fail CODE]\n");
    return 2;
  }
  std::ifstream in(argv[2]);
  std::stringstream text;
  text << in.rdbuf();
  v1::ListPodResourcesResponse answer;
  auto parsed = google::protobuf::util::JsonStringToMessage(text.str(), &answer);
  if (!in || !parsed.ok()) {
    std::fprintf(stderr, "fake_kubelet: %s: %s\n", argv[2], parsed.ToString().c_str());
    return 1;
  }
  Lister service(answer, argc == 5 ? std::stoi(argv[4]) : 0);
  grpc::ServerBuilder builder;
  builder.AddListeningPort(std::string("unix:") + argv[1], grpc::InsecureServerCredentials());
  builder.RegisterService(&service);
  std::unique_ptr<grpc::Server> server = builder.BuildAndStart();
  if (!server) {
    std::fprintf(stderr, "fake_kubelet: cannot listen on %s\n", argv[1]);
    return 1;
  }
  server->Wait();
}
