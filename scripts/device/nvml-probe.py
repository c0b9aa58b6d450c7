#!/usr/bin/env python3
# Raw answers of the real libnvidia-ml.so.1 to the calls gpubind makes, to compare with
# tests/fakes/fake_nvml.cpp. ctypes only, so nothing between us and the library.
import ctypes as C, sys, time

nv = C.CDLL("libnvidia-ml.so.1")
def fn(name, *args):
    try:
        f = getattr(nv, name)
    except AttributeError:
        return "MISSING"
    f.restype = C.c_int
    return f(*args)
def err(r):
    if r == "MISSING": return r
    nv.nvmlErrorString.restype = C.c_char_p
    return f"{r} ({nv.nvmlErrorString(r).decode()})"

t = time.perf_counter(); r = fn("nvmlInit_v2"); print(f"nvmlInit_v2 -> {err(r)} in {(time.perf_counter()-t)*1e3:.1f} ms")
buf = C.create_string_buffer(96)
print("version", err(fn("nvmlSystemGetNVMLVersion", buf, 96)), buf.value)
print("driver", err(fn("nvmlSystemGetDriverVersion", buf, 96)), buf.value)
n = C.c_uint(); print("count", err(fn("nvmlDeviceGetCount_v2", C.byref(n))), n.value)

class Pci(C.Structure):
    _fields_ = [("legacy", C.c_char * 16), ("domain", C.c_uint), ("bus", C.c_uint), ("device", C.c_uint),
                ("pciDeviceId", C.c_uint), ("pciSubSystemId", C.c_uint), ("busId", C.c_char * 32)]
class Mem(C.Structure):
    _fields_ = [("total", C.c_ulonglong), ("free", C.c_ulonglong), ("used", C.c_ulonglong)]

for i in range(n.value):
    h = C.c_void_p(); print(f"\n[{i}] handle", err(fn("nvmlDeviceGetHandleByIndex_v2", i, C.byref(h))))
    p = Pci(); r = fn("nvmlDeviceGetPciInfo_v3", h, C.byref(p))
    print("pci_v3", err(r), "busId=%r legacy=%r domain=%x bus=%x dev=%x id=%x sub=%x" % (p.busId, p.legacy, p.domain, p.bus, p.device, p.pciDeviceId, p.pciSubSystemId))
    for call in ("nvmlDeviceGetUUID", "nvmlDeviceGetName", "nvmlDeviceGetSerial"):
        b = C.create_string_buffer(96); r = fn(call, h, b, 96); print(call, err(r), b.value)
    m = Mem(); print("memory", err(fn("nvmlDeviceGetMemoryInfo", h, C.byref(m))), m.total, m.free, m.used)
    u = (C.c_uint * 2)(); print("utilization", err(fn("nvmlDeviceGetUtilizationRates", h, u)), list(u))
    for c in (0, 1):
        v = C.c_uint(); t = time.perf_counter(); r = fn("nvmlDeviceGetPcieThroughput", h, c, C.byref(v))
        print(f"pcie_throughput[{'TX' if c == 0 else 'RX'}]", err(r), v.value, f"{(time.perf_counter()-t)*1e3:.1f} ms")
    for words in (1, 2, 4):
        s = (C.c_ulong * words)(); r = fn("nvmlDeviceGetCpuAffinity", h, words, s)
        print(f"cpu_affinity[{words} words]", err(r), [hex(x) for x in s])
    v = C.c_uint(99); print("numa_node", err(fn("nvmlDeviceGetNumaNodeId", h, C.byref(v))), v.value)
    a, b_ = C.c_uint(9), C.c_uint(9); print("mig_mode", err(fn("nvmlDeviceGetMigMode", h, C.byref(a), C.byref(b_))), a.value, b_.value)
    v = C.c_uint(99); print("max_mig_devices", err(fn("nvmlDeviceGetMaxMigDeviceCount", h, C.byref(v))), v.value)
    mh = C.c_void_p(); print("mig_handle[0]", err(fn("nvmlDeviceGetMigDeviceHandleByIndex", h, 0, C.byref(mh))))
    v = C.c_uint(99); print("gpu_instance_id(whole GPU)", err(fn("nvmlDeviceGetGpuInstanceId", h, C.byref(v))), v.value)
    v = C.c_uint(99); print("compute_instance_id(whole GPU)", err(fn("nvmlDeviceGetComputeInstanceId", h, C.byref(v))), v.value)
    for call in ("nvmlDeviceGetCurrPcieLinkGeneration", "nvmlDeviceGetMaxPcieLinkGeneration",
                 "nvmlDeviceGetCurrPcieLinkWidth", "nvmlDeviceGetMaxPcieLinkWidth"):
        v = C.c_uint(99); print(call, err(fn(call, h, C.byref(v))), v.value)
    for link in range(20):
        st = C.c_int(9); r = fn("nvmlDeviceGetNvLinkState", h, link, C.byref(st))
        rp = Pci(); r2 = fn("nvmlDeviceGetNvLinkRemotePciInfo_v2", h, link, C.byref(rp))
        ty = C.c_int(9); r3 = fn("nvmlDeviceGetNvLinkRemoteDeviceType", h, link, C.byref(ty))
        print(f"nvlink[{link}] state {err(r)}={st.value} remote {err(r2)}={rp.busId!r} type {err(r3)}={ty.value}")
    for call, size in (("nvmlDeviceGetComputeRunningProcesses_v3", 24), ("nvmlDeviceGetComputeRunningProcesses", 24)):
        cnt = C.c_uint(0); r0 = fn(call, h, C.byref(cnt), None)
        raw = C.create_string_buffer(64 * 32); cnt2 = C.c_uint(64); r = fn(call, h, C.byref(cnt2), raw)
        print(call, "probe", err(r0), cnt.value, "| call", err(r), cnt2.value, "raw", raw.raw[:96].hex())
        for k in range(min(cnt2.value, 4)):
            pid = int.from_bytes(raw.raw[k*size:k*size+4], "little"); mem = int.from_bytes(raw.raw[k*size+8:k*size+16], "little")
            gi = int.from_bytes(raw.raw[k*size+16:k*size+20], "little"); ci = int.from_bytes(raw.raw[k*size+20:k*size+24], "little")
            print(f"  as 24-byte entries: pid={pid} mem={mem} gi={gi:#x} ci={ci:#x}")
t = time.perf_counter(); r = fn("nvmlShutdown"); print(f"\nnvmlShutdown -> {err(r)} in {(time.perf_counter()-t)*1e3:.1f} ms")
