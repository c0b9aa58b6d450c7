#pragma once
// The C interface of gpubind-yaml.so, the module that reads YAML (libyaml, Debian's libyaml-0-2)
// for `k8s check` (the kubelet's config.yaml). Only that command loads it, so no other maps
// libyaml. Only C types cross it: the module's C++ runtime is its own.
extern "C" {

struct GpubindYamlApi {
  int abi;  // 1
  // Reads `len` bytes of YAML holding one document and returns it as JSON text, which the caller
  // frees with release(). Plain scalars are typed as YAML 1.2's core schema types them (null,
  // true/false, integers, floats), quoted ones are strings; aliases are expanded. On bad input it
  // returns null and writes one line to err ("line 3, column 5: mapping values are not allowed
  // here").
  char* (*to_json)(const char* text, long len, char* err, long errcap);
  void (*release)(char* json);
};

}  // extern "C"
