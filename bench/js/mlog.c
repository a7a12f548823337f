// LD_PRELOAD malloc logger for bench/js/wsheap.py: every malloc, calloc, realloc,
// memalign and free of the process, with a CLOCK_MONOTONIC timestamp and (for an
// allocation) a backtrace, to $MLOG_FILE as binary records (flushed every 50 ms).
// Build: gcc -O2 -shared -fPIC -o mlog.so bench/js/mlog.c -lpthread
#define _GNU_SOURCE
#include <execinfo.h>
#include <pthread.h>
#include <stdint.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>
#include <unistd.h>
#include <fcntl.h>
#include <errno.h>

extern void *__libc_malloc(size_t);
extern void __libc_free(void *);
extern void *__libc_calloc(size_t, size_t);
extern void *__libc_realloc(void *, size_t);
extern void *__libc_memalign(size_t, size_t);

#define DEPTH 14
struct rec { uint32_t op, nframes; uint64_t t, ptr, size; uint64_t frames[DEPTH]; };
static __thread int busy;
static int fd = -1;
static pthread_mutex_t mu = PTHREAD_MUTEX_INITIALIZER;
static char buf[1 << 20];
static size_t used;
static int ready;

static void flush_locked(void) {
  size_t off = 0;
  while (off < used) { ssize_t n = write(fd, buf + off, used - off); if (n <= 0) break; off += n; }
  used = 0;
}
static void *flusher(void *a) {
  (void)a; busy = 1;
  for (;;) { usleep(50000); pthread_mutex_lock(&mu); flush_locked(); pthread_mutex_unlock(&mu); }
  return 0;
}
static void logit(uint32_t op, void *p, size_t size, int bt) {
  if (!ready || busy) return;
  busy = 1;
  struct rec r; struct timespec ts;
  clock_gettime(CLOCK_MONOTONIC, &ts);
  r.op = op; r.t = ts.tv_sec * 1000000000ull + ts.tv_nsec; r.ptr = (uint64_t)p; r.size = size;
  r.nframes = 0;
  if (bt) { void *f[DEPTH + 2]; int n = backtrace(f, DEPTH + 2); if (n > 2) { n -= 2; memcpy(r.frames, f + 2, n * 8); r.nframes = n; } }
  size_t len = 32 + 8 * r.nframes;
  pthread_mutex_lock(&mu);
  if (used + len > sizeof buf) flush_locked();
  memcpy(buf + used, &r, len); used += len;
  pthread_mutex_unlock(&mu);
  busy = 0;
}
__attribute__((constructor)) static void init(void) {
  const char *path = getenv("MLOG_FILE");
  if (!path) return;
  fd = open(path, O_WRONLY | O_CREAT | O_TRUNC, 0644);
  busy = 1; void *f[4]; backtrace(f, 4); busy = 0;  // load libgcc_s before hooking
  pthread_t th; pthread_create(&th, 0, flusher, 0);
  ready = 1;
}
void *malloc(size_t n) { void *p = __libc_malloc(n); logit(1, p, n, 1); return p; }
void *calloc(size_t a, size_t b) { void *p = __libc_calloc(a, b); logit(1, p, a * b, 1); return p; }
void free(void *p) { if (p) logit(2, p, 0, 0); __libc_free(p); }
void *realloc(void *q, size_t n) {
  void *p = __libc_realloc(q, n);
  if (p) { if (q) logit(2, q, 0, 0); logit(1, p, n, 1); }
  return p;
}
void *memalign(size_t a, size_t n) { void *p = __libc_memalign(a, n); logit(1, p, n, 1); return p; }
void *aligned_alloc(size_t a, size_t n) { return memalign(a, n); }
int posix_memalign(void **out, size_t a, size_t n) {
  void *p = __libc_memalign(a, n); if (!p) return ENOMEM; *out = p; logit(1, p, n, 1); return 0;
}
__attribute__((destructor)) static void fini(void) { if (fd < 0) return; pthread_mutex_lock(&mu); flush_locked(); pthread_mutex_unlock(&mu); }
