// Pointer chase over one page in each of N regions STRIDE bytes apart: the cost of
// touching "the same offset in every VU's linear memory" at the pool's slot stride.
//
// Build and run by hand: `cc -O2 -o /tmp/tlbstride bench/js/tlbstride.c &&
// /tmp/tlbstride 50 $(( (4<<30) + (32<<20) )) 10000000` (pages, stride in bytes,
// accesses). The chase visits the pages in a random order, each at its own cache line;
// at a stride that is a power-of-two multiple of the page size every page has the same
// low page-number bits, so all of them fall in one TLB set (results/js.md, branch
// intel53).
#include <stdio.h>
#include <stdlib.h>
#include <sys/mman.h>
#include <time.h>

static double now(void) {
    struct timespec t;
    clock_gettime(CLOCK_MONOTONIC, &t);
    return t.tv_sec + t.tv_nsec * 1e-9;
}

int main(int argc, char **argv) {
    if (argc != 4) {
        fprintf(stderr, "usage: %s PAGES STRIDE ACCESSES\n", argv[0]);
        return 2;
    }
    size_t pages = strtoul(argv[1], 0, 10), stride = strtoul(argv[2], 0, 10);
    long accesses = strtol(argv[3], 0, 10);
    char *p = mmap(0, pages * stride, PROT_READ | PROT_WRITE,
                   MAP_PRIVATE | MAP_ANONYMOUS | MAP_NORESERVE, -1, 0);
    if (p == MAP_FAILED) {
        perror("mmap");
        return 1;
    }
    size_t *order = malloc(pages * sizeof *order);
    for (size_t i = 0; i < pages; i++) order[i] = i;
    srand(1);
    for (size_t i = pages - 1; i > 0; i--) {
        size_t j = rand() % (i + 1), t = order[i];
        order[i] = order[j];
        order[j] = t;
    }
#define AT(i) (order[(i) % pages] * stride + (((i) % pages) * 64) % 4096)
    for (size_t i = 0; i < pages; i++) *(char **)(p + AT(i)) = p + AT(i + 1);
    char *q = p + AT(0);
    for (size_t i = 0; i < 2 * pages; i++) q = *(char **)q;
    double t = now();
    for (long i = 0; i < accesses; i++) q = *(char **)q;
    printf("pages %zu stride %zu: %.1f ns per access (%p)\n", pages, stride,
           (now() - t) / accesses * 1e9, (void *)q);
    return 0;
}
