#pragma once
// The kernel's memory policy modes and flags (include/uapi/linux/mempolicy.h): stable ABI, so the
// sys layer issues set_mempolicy and mbind itself; <numaif.h> needs libnuma-dev for declarations
// only. One copy for the binder and the bench's node memory.
namespace gpubind::sys::mempolicy_abi {

inline constexpr int kDefault = 0;
inline constexpr int kPreferred = 1;
inline constexpr int kBind = 2;
inline constexpr int kInterleave = 3;
inline constexpr int kPreferredMany = 5;  // Linux 5.15+
inline constexpr unsigned kMfStrict = 1u << 0;  // mbind: fail when pages already sit elsewhere

}  // namespace gpubind::sys::mempolicy_abi
