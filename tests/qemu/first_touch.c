/* Guest helper for the qemu tier: first-touches a buffer of MB mebibytes and prints on which NUMA
 * nodes its pages landed ("pages N0=0 N1=0 N2=16384 N3=0"), asked of the kernel page by page
 * (get_mempolicy MPOL_F_NODE | MPOL_F_ADDR). With "hold" it then sleeps until killed, keeping
 * the pages, for check --numa-maps. With "work THREADS NODE" it is a rank of a job that was never
 * bound: its buffer first-touched on NUMA node NODE (MPOL_BIND while touching, the default policy
 * again after), then THREADS threads step through their slices of it (a pass, then 10 ms asleep)
 * until killed, the steps done so far printed every 100 ms ("steps N"): rebind moves it while it
 * runs. Built static, so the guest needs nothing else. */
#include <pthread.h>
#include <stdatomic.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>
#include <sys/syscall.h>
#include <unistd.h>

static char* g_buf;
static size_t g_slice;
static atomic_ulong g_steps;

static void* step(void* arg) {
  char* mine = g_buf + (size_t)arg * g_slice;
  const struct timespec rest = {0, 10 * 1000 * 1000};
  for (;;) {
    for (size_t off = 0; off < g_slice; off += 4096) mine[off]++;
    atomic_fetch_add(&g_steps, 1);
    nanosleep(&rest, NULL);
  }
  return NULL;
}

/* set_mempolicy(mode, {node}) */
static int policy(int mode, int node) {
  unsigned long mask = node >= 0 ? 1UL << node : 0;
  return (int)syscall(SYS_set_mempolicy, mode, node >= 0 ? &mask : NULL, node >= 0 ? 64UL : 0UL);
}

int main(int argc, char** argv) {
  if (argc < 2) {
    fprintf(stderr, "usage: first_touch MB [hold]\n");
    return 2;
  }
  size_t bytes = (size_t)atoi(argv[1]) << 20;
  int work = argc > 4 && strcmp(argv[2], "work") == 0;
  if (work && policy(2 /* MPOL_BIND */, atoi(argv[4])) != 0) return 1;
  long page = sysconf(_SC_PAGESIZE);
  char* buf = aligned_alloc((size_t)page, bytes);
  if (!buf) return 1;
  memset(buf, 1, bytes);
  unsigned long count[64] = {0};
  for (size_t off = 0; off < bytes; off += (size_t)page) {
    int node = -1;
    if (syscall(SYS_get_mempolicy, &node, NULL, 0, buf + off, 3UL /* MPOL_F_NODE | MPOL_F_ADDR */) != 0 || node < 0 || node >= 64)
      return 1;
    count[node]++;
  }
  if (work && policy(0 /* MPOL_DEFAULT */, -1) != 0) return 1;
  printf("pages");
  for (int n = 0; n < 8; ++n) printf(" N%d=%lu", n, count[n]);
  printf("\n");
  fflush(stdout);
  if (argc > 2 && strcmp(argv[2], "hold") == 0)
    for (;;) pause();
  if (work) {
    size_t threads = (size_t)atoi(argv[3]);
    if (threads == 0) return 2;
    g_buf = buf;
    g_slice = bytes / threads / 4096 * 4096;
    for (size_t i = 0; i < threads; ++i) {
      pthread_t t;
      if (pthread_create(&t, NULL, step, (void*)i) != 0) return 1;
    }
    const struct timespec tick = {0, 100 * 1000 * 1000};
    for (;;) {
      nanosleep(&tick, NULL);
      printf("steps %lu\n", atomic_load(&g_steps));
      fflush(stdout);
    }
  }
  return 0;
}
