#pragma once
// What `gpubind bench` needs of the kernel to run ranks as processes in step: anonymous memory
// shared with the children this process forks (the barrier, the step records), futex waits on
// 32-bit words in it (a process sleeps instead of spinning while others work), forking a child
// that runs a function, and the CPU the calling thread is on.
#include <sys/types.h>

#include <atomic>
#include <chrono>
#include <cstddef>
#include <cstdint>
#include <functional>
#include <optional>

#include "sys/node_memory.hpp"
#include "sys/process.hpp"
#include "util/result.hpp"

namespace gpubind::sys {

// `bytes` of zeroed memory shared with the children forked after it was made.
Result<Mapping> shared_memory(size_t bytes);

static_assert(std::atomic<uint32_t>::is_always_lock_free && sizeof(std::atomic<uint32_t>) == 4,
              "a futex word must be a plain, lock-free 32-bit word");

// Sleeps while `word` holds `expected` (shared between processes), at most `timeout`; returns
// early on a wake, a signal or a spurious wake-up: the caller checks the word again.
void futex_wait(std::atomic<uint32_t>& word, uint32_t expected, std::optional<std::chrono::milliseconds> timeout = {});
// Wakes every process and thread sleeping on `word`.
void futex_wake_all(std::atomic<uint32_t>& word);

// Forks a child that runs `body` and exits with its value (a C++ exception escaping it: 70). The
// child dies with this process (PR_SET_PDEATHSIG SIGKILL). Call from a single-threaded process.
Result<pid_t> fork_call(const std::function<int()>& body);
// The child's end, blocking (`wait` true) or nullopt while it runs.
// Without `wait`, a child that was stopped (SIGSTOP, SIGTSTP) is reported too (`stopped`): it
// would never reach the next barrier.
std::optional<ChildExit> reap_child(pid_t pid, bool wait);
// SIGKILL; a process that is gone is not an error.
void kill_child(pid_t pid);

// The CPU the calling thread runs on now (sched_getcpu), -1 when unknown.
int current_cpu();

}  // namespace gpubind::sys
