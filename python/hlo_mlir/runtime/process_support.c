/* The part of the compiled code's runtime that is one per process, not one per module: built once into a
 * shared library that runtime/native.py loads globally (`process_support`), where each module's code finds
 * these symbols. Per module, as it was, each compiled module kept its own allocation cache (up to 2 GiB
 * never handed back) and took a pthread key of its own; after ~1000 modules in one process the keys ran out
 * (PTHREAD_KEYS_MAX) and the next module wrote through key 0, another library's, and crashed the process. */
#define _GNU_SOURCE
#include <dlfcn.h>
#include <pthread.h>
#include <stdint.h>
#include <stdlib.h>

/* The compiled code's malloc/free (renamed in its LLVM IR). glibc gives big blocks their own mmap and
 * hands them back on free, so a while loop allocating a 256 KiB temporary per iteration pays for fresh
 * zeroed pages every time (10x the kernel itself on a VM). Blocks of at least CACHE_MIN bytes are kept
 * on free and handed out again for the same rounded size, as XLA reuses its buffer allocations. */

#define HEADER 64 /* keeps the block 64-byte aligned after the size word */
#define CACHE_MIN (64 * 1024)
#define CACHE_SLOTS 256
#define CACHE_MAX_BYTES ((size_t)1 << 31)

static void *cached[CACHE_SLOTS];
static size_t cached_size[CACHE_SLOTS];
static int cached_count;
static size_t cached_bytes;
static pthread_mutex_t cache_lock = PTHREAD_MUTEX_INITIALIZER;

static size_t rounded(size_t n) { return n < CACHE_MIN ? n : (n + 4095) & ~(size_t)4095; }

void *hlo_mlir_malloc(size_t n) {
  size_t size = rounded(n);
  if (size >= CACHE_MIN) {
    pthread_mutex_lock(&cache_lock);
    for (int i = cached_count - 1; i >= 0; --i) {
      if (cached_size[i] == size) {
        void *block = cached[i];
        cached[i] = cached[cached_count - 1];
        cached_size[i] = cached_size[cached_count - 1];
        --cached_count;
        cached_bytes -= size;
        pthread_mutex_unlock(&cache_lock);
        return (char *)block + HEADER;
      }
    }
    pthread_mutex_unlock(&cache_lock);
  }
  void *block = NULL;
  if (posix_memalign(&block, HEADER, size + HEADER)) return NULL;
  *(size_t *)block = size;
  return (char *)block + HEADER;
}

void hlo_mlir_free(void *p) {
  if (!p) return;
  void *block = (char *)p - HEADER;
  size_t size = *(size_t *)block;
  if (size >= CACHE_MIN) {
    pthread_mutex_lock(&cache_lock);
    if (cached_count < CACHE_SLOTS && cached_bytes + size <= CACHE_MAX_BYTES) {
      cached[cached_count] = block;
      cached_size[cached_count] = size;
      ++cached_count;
      cached_bytes += size;
      pthread_mutex_unlock(&cache_lock);
      return;
    }
    pthread_mutex_unlock(&cache_lock);
  }
  free(block);
}

/* Denormals: XLA:CPU runs its kernels with subnormal inputs read as zero and subnormal results flushed to
 * zero (MXCSR DAZ and FTZ on x86, FPCR FZ on AArch64); `hlo_mlir_fp_enter(1)` does the same around a call
 * of the compiled entry, `hlo_mlir_fp_enter(0)` clears both for IEEE behaviour. The mode is per thread: the
 * calling thread's is restored by `hlo_mlir_fp_exit`, and the OpenMP workers (once a module has brought the
 * OpenMP runtime in) are set by a parallel region whenever the mode they run in changes. */
#if defined(__x86_64__) || defined(__i386__)
#include <xmmintrin.h>
#define FP_FLUSH_BITS 0x8040u /* FTZ | DAZ */
static unsigned fp_get(void) { return _mm_getcsr(); }
static void fp_set(unsigned mode) { _mm_setcsr(mode); }
#elif defined(__aarch64__)
#define FP_FLUSH_BITS (1u << 24) /* FPCR.FZ */
static unsigned fp_get(void) {
  uint64_t r;
  __asm__ volatile("mrs %0, fpcr" : "=r"(r));
  return (unsigned)r;
}
static void fp_set(unsigned mode) { __asm__ volatile("msr fpcr, %0" : : "r"((uint64_t)mode)); }
#else
#define FP_FLUSH_BITS 0u
static unsigned fp_get(void) { return 0; }
static void fp_set(unsigned mode) { (void)mode; }
#endif

typedef struct {
  int32_t reserved_1, flags, reserved_2, reserved_3;
  const char *psource;
} omp_ident;
typedef void (*omp_microtask)(int32_t *, int32_t *, ...);
typedef void (*omp_fork_call)(omp_ident *, int32_t, omp_microtask, ...);

/* The OpenMP runtime's entry points, once it is in the process (native.py loads libiomp5 globally when a
 * module needs it, possibly after this library was loaded): looked up until found, then kept (it is never
 * unloaded). */
static omp_fork_call fork_call(void) {
  static omp_fork_call found;
  if (!found) found = (omp_fork_call)dlsym(RTLD_DEFAULT, "__kmpc_fork_call");
  return found;
}

static int team_size(void) {
  static int (*found)(void);
  if (!found) found = (int (*)(void))dlsym(RTLD_DEFAULT, "omp_get_max_threads");
  return found ? found() : 0;
}

static void set_worker_mode(int32_t *gtid, int32_t *btid, int flush) {
  (void)gtid;
  (void)btid;
  unsigned mode = fp_get() & ~FP_FLUSH_BITS;
  fp_set(flush ? mode | FP_FLUSH_BITS : mode);
}

/* The mode this thread's OpenMP team was last set to (mode + 1; 0: never), and for how many threads: a
 * bigger team (`omp_set_num_threads`) has workers that were never set. */
static __thread int team_mode;
static __thread int team_threads;

unsigned hlo_mlir_fp_enter(int flush) {
  unsigned saved = fp_get();
  omp_fork_call fork = fork_call();
  if (fork) {
    int threads = team_size();
    if (team_mode != flush + 1 || team_threads != threads) {
      static omp_ident where = {0, 2, 0, 0, ";process_support.c;hlo_mlir_fp_enter;0;0;;"};
      fork(&where, 1, (omp_microtask)set_worker_mode, flush);
      team_mode = flush + 1;
      team_threads = threads;
    }
  }
  fp_set(flush ? saved | FP_FLUSH_BITS : saved & ~FP_FLUSH_BITS);
  return saved;
}

void hlo_mlir_fp_exit(unsigned saved) { fp_set(saved); }

/* The random state of rng instructions (passes/convert_hlo_to_linalg/rng.py): u64 words the calling thread
 * bound under the process-wide pthread key `hlo_mlir_rng_key` (runtime/rng_state.py sets both), so devices
 * running as threads of one process each use their own. */
pthread_key_t hlo_mlir_rng_key; /* an unsigned int (glibc) */

int64_t hlo_mlir_rng_load(int64_t i) { return ((int64_t *)pthread_getspecific(hlo_mlir_rng_key))[i]; }

void hlo_mlir_rng_store(int64_t i, int64_t value) {
  ((int64_t *)pthread_getspecific(hlo_mlir_rng_key))[i] = value;
}
