/* Conversions LLVM calls as library functions that GCC 12's libgcc lacks (bf16 arrived in GCC 13).
 * bf16 travels like _Float16: 16 bits in the low half of an XMM register. Linked into every module.
 *
 * The code calling them is AVX-512, and `cc` builds this file for any x86-64: in legacy SSE encoding, whose
 * writes to an XMM register while the registers' upper halves are in use cost a state transition each. On
 * this project's Xeon that was ~100 ns per call: a 500-element f32 -> bf16 convert took 53 us instead of 1,
 * half of graphsage_tf's run. So each conversion also has a VEX-encoded copy (target "avx"), called when the
 * CPU and the OS have AVX; the entry points only test a flag and jump (no SSE instruction of their own). */
#include <stdint.h>
#include <string.h>

static inline _Float16 bits_to_half(uint16_t b) {
  _Float16 r;
  memcpy(&r, &b, sizeof r);
  return r;
}

/* Round to nearest even; NaNs stay NaN (quiet bit set), as every other float conversion here. */
static inline _Float16 float_to_bf16(float x) {
  uint32_t u;
  memcpy(&u, &x, sizeof u);
  if ((u & 0x7fffffffu) > 0x7f800000u) return bits_to_half((uint16_t)((u >> 16) | 0x40u));
  u += 0x7fffu + ((u >> 16) & 1u);
  return bits_to_half((uint16_t)(u >> 16));
}

static inline float bf16_to_float(_Float16 h) {
  uint16_t b;
  memcpy(&b, &h, sizeof b);
  uint32_t u = (uint32_t)b << 16;
  float f;
  memcpy(&f, &u, sizeof f);
  return f;
}

/* f64 -> bf16 goes through f32, as XLA:CPU converts (two roundings: 1 + 2^-8 + 2^-30 gives 1, not 1 + 2^-7). */
#define CONVERSIONS(suffix, attributes)                                                                       \
  static attributes _Float16 truncsfbf2_##suffix(float x) { return float_to_bf16(x); }                         \
  static attributes _Float16 truncdfbf2_##suffix(double x) { return float_to_bf16((float)x); }                \
  static attributes float extendbfsf2_##suffix(_Float16 h) { return bf16_to_float(h); }

#if defined(__x86_64__) || defined(__i386__)
#include <cpuid.h>

CONVERSIONS(vex, __attribute__((noinline, target("avx"))))
CONVERSIONS(sse, __attribute__((noinline)))

/* -1: not asked yet (a race only writes the same answer twice); tests set it to run either copy. */
int hlo_mlir_bf16_avx = -1;

static __attribute__((noinline, cold)) int ask_avx(void) {
  unsigned a, b, c, d;
  int usable = 0;
  if (__get_cpuid(1, &a, &b, &c, &d) && (c & bit_AVX) && (c & bit_OSXSAVE)) {
    unsigned lo, hi;
    __asm__ volatile("xgetbv" : "=a"(lo), "=d"(hi) : "c"(0));
    usable = (lo & 6u) == 6u; /* the OS saves XMM and YMM state */
  }
  hlo_mlir_bf16_avx = usable;
  return usable;
}

static inline int use_avx(void) { return hlo_mlir_bf16_avx < 0 ? ask_avx() : hlo_mlir_bf16_avx; }

_Float16 __truncsfbf2(float x) { return use_avx() ? truncsfbf2_vex(x) : truncsfbf2_sse(x); }
_Float16 __truncdfbf2(double x) { return use_avx() ? truncdfbf2_vex(x) : truncdfbf2_sse(x); }
float __extendbfsf2(_Float16 h) { return use_avx() ? extendbfsf2_vex(h) : extendbfsf2_sse(h); }
#else
CONVERSIONS(plain, )
_Float16 __truncsfbf2(float x) { return truncsfbf2_plain(x); }
_Float16 __truncdfbf2(double x) { return truncdfbf2_plain(x); }
float __extendbfsf2(_Float16 h) { return extendbfsf2_plain(h); }
#endif

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
