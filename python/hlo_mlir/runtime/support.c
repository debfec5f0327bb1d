/* Conversions LLVM calls as library functions that GCC 12's libgcc lacks (bf16 arrived in GCC 13).
 * bf16 travels like _Float16: 16 bits in the low half of an XMM register. Linked into every module. */
#include <stdint.h>
#include <string.h>

static _Float16 bits_to_half(uint16_t b) {
  _Float16 r;
  memcpy(&r, &b, sizeof r);
  return r;
}

/* Round to nearest even; NaNs stay NaN (quiet bit set), as every other float conversion here. */
_Float16 __truncsfbf2(float x) {
  uint32_t u;
  memcpy(&u, &x, sizeof u);
  if ((u & 0x7fffffffu) > 0x7f800000u) return bits_to_half((uint16_t)((u >> 16) | 0x40u));
  u += 0x7fffu + ((u >> 16) & 1u);
  return bits_to_half((uint16_t)(u >> 16));
}

/* Through f32, as XLA:CPU converts f64 to bf16 (two roundings: 1 + 2^-8 + 2^-30 gives 1, not 1 + 2^-7). */
_Float16 __truncdfbf2(double x) { return __truncsfbf2((float)x); }

float __extendbfsf2(_Float16 h) {
  uint16_t b;
  memcpy(&b, &h, sizeof b);
  uint32_t u = (uint32_t)b << 16;
  float f;
  memcpy(&f, &u, sizeof f);
  return f;
}

/* hlo-run --profile: time spent in each kernel (outline_kernels wraps each call in enter/exit). The counters
 * are allocated at the first call of a profiled build (calloc: pages of zeros, touched as used), not static
 * arrays: the module is linked by JITLink (runtime/native.py), which writes out a module's zero-initialized
 * data, and 1.5 MiB of counters per compiled module were resident in every process. */
#include <pthread.h>
#include <stdlib.h>
#include <time.h>

#define HLO_MLIR_MAX_KERNELS 65536
int64_t *hlo_mlir_prof_ns;    /* per kernel call site: nanoseconds, calls, start of the running call */
int64_t *hlo_mlir_prof_calls;
static int64_t *started;
static pthread_once_t prof_once = PTHREAD_ONCE_INIT;

static void prof_allocate(void) {
  int64_t *all = calloc(3 * (size_t)HLO_MLIR_MAX_KERNELS, sizeof(int64_t));
  if (!all) return;
  started = all + 2 * HLO_MLIR_MAX_KERNELS;
  hlo_mlir_prof_calls = all + HLO_MLIR_MAX_KERNELS;
  hlo_mlir_prof_ns = all;
}

static int64_t now_ns(void) {
  struct timespec ts;
  clock_gettime(CLOCK_MONOTONIC, &ts);
  return (int64_t)ts.tv_sec * 1000000000 + ts.tv_nsec;
}

void hlo_mlir_prof_enter(int64_t kernel) {
  pthread_once(&prof_once, prof_allocate);
  if (hlo_mlir_prof_ns && kernel >= 0 && kernel < HLO_MLIR_MAX_KERNELS) started[kernel] = now_ns();
}

void hlo_mlir_prof_exit(int64_t kernel) {
  if (!hlo_mlir_prof_ns || kernel < 0 || kernel >= HLO_MLIR_MAX_KERNELS) return;
  hlo_mlir_prof_ns[kernel] += now_ns() - started[kernel];
  hlo_mlir_prof_calls[kernel] += 1;
}

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
 * calling thread's is restored by `hlo_mlir_fp_exit`, and the OpenMP workers (when this module's library
 * brought the OpenMP runtime in) are set by a parallel region whenever the mode they run in changes. */
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
extern void __kmpc_fork_call(omp_ident *, int32_t, omp_microtask, ...) __attribute__((weak));

/* The mode this thread's OpenMP team was last set to (stored as mode + 1; 0: never set). A pthread key, not
 * `__thread`: the module is linked by LLVM's JITLink (runtime/native.py), which has no thread-local storage
 * without LLVM's ORC runtime library. */
static pthread_key_t workers_key;
static pthread_once_t workers_once = PTHREAD_ONCE_INIT;
static void make_workers_key(void) { pthread_key_create(&workers_key, NULL); }

static void set_worker_mode(int32_t *gtid, int32_t *btid, int flush) {
  (void)gtid;
  (void)btid;
  unsigned mode = fp_get() & ~FP_FLUSH_BITS;
  fp_set(flush ? mode | FP_FLUSH_BITS : mode);
}

unsigned hlo_mlir_fp_enter(int flush) {
  unsigned saved = fp_get();
  if (__kmpc_fork_call) {
    pthread_once(&workers_once, make_workers_key);
    if ((intptr_t)pthread_getspecific(workers_key) != flush + 1) {
      static omp_ident where = {0, 2, 0, 0, ";support.c;hlo_mlir_fp_enter;0;0;;"};
      __kmpc_fork_call(&where, 1, (omp_microtask)set_worker_mode, flush);
      pthread_setspecific(workers_key, (void *)(intptr_t)(flush + 1));
    }
  }
  fp_set(flush ? saved | FP_FLUSH_BITS : saved & ~FP_FLUSH_BITS);
  return saved;
}

void hlo_mlir_fp_exit(unsigned saved) { fp_set(saved); }

/* The random state of rng instructions (passes/convert_hlo_to_linalg/rng.py): u64 words the calling thread
 * bound under the process-wide pthread key `hlo_mlir_rng_key` (runtime/rng_state.py sets both), so devices
 * running as threads of one process each use their own. A key, not `__thread`: see workers_key above. */
pthread_key_t hlo_mlir_rng_key; /* an unsigned int (glibc) */

int64_t hlo_mlir_rng_load(int64_t i) { return ((int64_t *)pthread_getspecific(hlo_mlir_rng_key))[i]; }

void hlo_mlir_rng_store(int64_t i, int64_t value) {
  ((int64_t *)pthread_getspecific(hlo_mlir_rng_key))[i] = value;
}
