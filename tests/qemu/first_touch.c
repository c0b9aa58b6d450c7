/* Guest helper for the qemu tier: first-touches a buffer of MB mebibytes and prints on which NUMA
 * nodes its pages landed ("pages N0=0 N1=0 N2=16384 N3=0"), asked of the kernel page by page
 * (get_mempolicy MPOL_F_NODE | MPOL_F_ADDR). With "hold" it then sleeps until killed, keeping
 * the pages, for check --numa-maps. Built static, so the guest needs nothing else. */
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/syscall.h>
#include <unistd.h>

int main(int argc, char** argv) {
  if (argc < 2) {
    fprintf(stderr, "usage: first_touch MB [hold]\n");
    return 2;
  }
  size_t bytes = (size_t)atoi(argv[1]) << 20;
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
  printf("pages");
  for (int n = 0; n < 8; ++n) printf(" N%d=%lu", n, count[n]);
  printf("\n");
  fflush(stdout);
  if (argc > 2 && strcmp(argv[2], "hold") == 0)
    for (;;) pause();
  return 0;
}
