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
