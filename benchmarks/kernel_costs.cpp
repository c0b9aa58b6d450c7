// What the kernel charges on this machine for what a process start is made of: a system call, a
// page fault on fresh anonymous memory, one on a file already in the page cache (with the
// kernel's fault-around), and reading a small sysfs file. On a guest with page-table isolation
// (pti=on) or retpolines these cost several times what they do on bare metal, and the start-up
// figures in docs/PERFORMANCE.md scale with them.
//   gpubind_kernel_costs [FILE]     (FILE: a file of at least 1 MiB, default the C library)
#include <fcntl.h>
#include <sys/mman.h>
#include <sys/stat.h>
#include <sys/syscall.h>
#include <unistd.h>

#include <chrono>
#include <cstdio>

namespace {

double now_ns() {
  return double(std::chrono::duration_cast<std::chrono::nanoseconds>(std::chrono::steady_clock::now().time_since_epoch()).count());
}

}  // namespace

int main(int argc, char** argv) {
  const char* file = argc > 1 ? argv[1] : "/usr/lib/x86_64-linux-gnu/libc.so.6";
  constexpr int kCalls = 200000;
  double t0 = now_ns();
  for (int i = 0; i < kCalls; ++i) syscall(SYS_getppid);
  std::printf("system call (getppid): %.0f ns\n", (now_ns() - t0) / kCalls);

  constexpr long kPages = 4000, kPage = 4096;
  auto* anon = static_cast<char*>(mmap(nullptr, kPages * kPage, PROT_READ | PROT_WRITE, MAP_PRIVATE | MAP_ANONYMOUS, -1, 0));
  if (anon == MAP_FAILED) return 1;
  t0 = now_ns();
  for (long i = 0; i < kPages; ++i) anon[i * kPage] = 1;
  std::printf("page fault, anonymous memory: %.0f ns\n", (now_ns() - t0) / kPages);
  munmap(anon, kPages * kPage);

  int fd = open(file, O_RDONLY);
  struct stat st {};
  if (fd < 0 || fstat(fd, &st) != 0 || st.st_size < 1024 * 1024) {
    std::fprintf(stderr, "%s: %s: need a readable file of at least 1 MiB\n", argv[0], file);
    return 2;
  }
  long pages = st.st_size / kPage;
  auto* mapped = static_cast<volatile char*>(mmap(nullptr, size_t(st.st_size), PROT_READ, MAP_PRIVATE, fd, 0));
  if (mapped == MAP_FAILED) return 1;
  volatile char sum = 0;  // the reads stay
  for (long i = 0; i < pages; ++i) sum = char(sum + mapped[i * kPage]);  // into the page cache
  munmap(const_cast<char*>(mapped), size_t(st.st_size));
  mapped = static_cast<volatile char*>(mmap(nullptr, size_t(st.st_size), PROT_READ, MAP_PRIVATE, fd, 0));
  constexpr long kWindow = 16;  // fault-around maps 64 KiB (16 pages) per fault by default
  long faults = 0;
  t0 = now_ns();
  for (long i = 0; i < pages; i += kWindow, ++faults) sum = char(sum + mapped[i * kPage]);
  std::printf("page fault, cached file (one per 64 KiB): %.0f ns\n", (now_ns() - t0) / double(faults));
  close(fd);

  constexpr int kReads = 2000;
  t0 = now_ns();
  for (int i = 0; i < kReads; ++i) {
    int f = open("/sys/devices/system/cpu/online", O_RDONLY | O_CLOEXEC);
    char buf[64];
    if (f < 0 || read(f, buf, sizeof buf) < 0) return 1;
    close(f);
  }
  std::printf("open, read and close a sysfs file: %.0f ns\n", (now_ns() - t0) / kReads);
  return 0;
}
