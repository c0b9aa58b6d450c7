#pragma once
// The C interface of gpubind-podresources.so, the module that asks the kubelet's pod-resources
// gRPC API (gRPC and protobuf, Debian's libgrpc++). Only `k8s check` loads it, so no other
// command maps gRPC. Only C types cross it: the module's C++ runtime is its own.
extern "C" {

struct GpubindPodResourcesApi {
  int abi;  // 1
  // Calls List on the kubelet's socket (a path, "unix:" is prepended) within timeout_ms and
  // returns the answer as JSON text, freed with release():
  //   {"pods": [{"name", "namespace", "containers": [{"name", "cpu_ids": [..],
  //     "devices": [{"resource", "ids": [..], "numa": [..]}], "memory": [{"type", "size", "numa": [..]}]}]}]}
  // On failure returns null and writes one line to err (gRPC's status and message).
  char* (*list)(const char* socket_path, int timeout_ms, char* err, long errcap);
  void (*release)(char* json);
};

}  // extern "C"
