#pragma once
// The C interface of gpubind-http.so, the module that serves `watch --listen` (modules/http_module.cpp).
// It is loaded only by `watch --listen` and shipped in the package gpubind-exporter, so a node
// that only binds carries no network listener. Only C types cross it: the module's C++ runtime is
// its own (linked statically).
#include <cstddef>

extern "C" {

// Copies the current answer for `path` ("/metrics") into buf (at most cap bytes) and returns its
// full length, or -1 when the path has no answer (404). Called from the module's threads.
typedef long (*GpubindHttpBody)(void* user, const char* path, char* buf, long cap);

struct GpubindHttpApi {
  int abi;  // 1
  // Binds host:port (an error, e.g. the port in use, in err) and serves GET requests from its own
  // threads: `body` answers each path, as text/plain; version=0.0.4. Returns the server, or null.
  void* (*start)(const char* host, int port, GpubindHttpBody body, void* user, char* err, long errcap);
  // Stops serving and joins its threads; the server is freed.
  void (*stop)(void* server);
};

}  // extern "C"
