/* The native backend's coverage for the libFuzzer inside atheris, under gcc.

   gcc's -fsanitize-coverage=trace-pc calls __sanitizer_cov_trace_pc() at the start of every basic
   block, and -fsanitize-coverage=trace-cmp calls __sanitizer_cov_trace_cmp*() at every comparison.
   libFuzzer (atheris 3.0's, LLVM's) makes trace_pc a no-op: it reads coverage from inline 8-bit
   counters that clang's -fsanitize-coverage=inline-8bit-counters lays out, which gcc cannot. So
   this library keeps counters of its own: each basic block's return address, hashed, XORed
   with the previous block's (an AFL-style edge), counts one of EDGES counters, which it hands to
   libFuzzer with a table of made-up PCs, one for each counter (__sanitizer_cov_8bit_counters_init,
   __sanitizer_cov_pcs_init, as clang's instrumentation does at load). The comparisons go on to
   libFuzzer's own callbacks (its table of recent comparisons, whose operands its mutations try),
   called by a tail jump so that libFuzzer sees the compared code's return address.

   It is preloaded before gcc's libasan and libubsan: those define every __sanitizer_cov_* entry
   point as a weak no-op and, preloaded, would take the calls of the instrumented modules, and
   atheris's own registration of its Python counters, which atheris's core module makes through
   its PLT. The two registration entry points are defined here too and forwarded. Until
   `fuzz_bind` names the loaded libFuzzer, registrations are kept and comparisons dropped.

   With RDBSPEC_FUZZ_BLOCKS set, a counter counts a basic block alone, not an edge: what a merge
   of the corpus keeps an input for (an edge's hash takes the calls before it along, so nearly
   every input reaches an edge no other does).

   `fuzz_native_edges` counts the counters that were ever hit; the count is printed when the
   process exits (libFuzzer ends a run with exit(), which Python's atexit does not hear of). */

#define _GNU_SOURCE
#include <dlfcn.h>
#include <stddef.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>

#define EDGES (1u << 20)
#define PENDING 64

typedef void (*init_fn)(uint8_t *start, uint8_t *stop);
typedef void (*cmp1_fn)(uint8_t, uint8_t);
typedef void (*cmp2_fn)(uint16_t, uint16_t);
typedef void (*cmp4_fn)(uint32_t, uint32_t);
typedef void (*cmp8_fn)(uint64_t, uint64_t);
typedef void (*switch_fn)(uint64_t, uint64_t *);

static uint8_t counters[EDGES] __attribute__((aligned(4096)));
static uint8_t ever[EDGES];
static struct { uintptr_t pc, flags; } pcs[EDGES];
static uint32_t previous;  /* not thread-local: a TLS access from a shared library is a call */
static int blocks;

static void ignore_init(uint8_t *start, uint8_t *stop) { (void)start; (void)stop; }
static void ignore_cmp1(uint8_t a, uint8_t b) { (void)a; (void)b; }
static void ignore_cmp2(uint16_t a, uint16_t b) { (void)a; (void)b; }
static void ignore_cmp4(uint32_t a, uint32_t b) { (void)a; (void)b; }
static void ignore_cmp8(uint64_t a, uint64_t b) { (void)a; (void)b; }
static void ignore_switch(uint64_t value, uint64_t *cases) { (void)value; (void)cases; }

static init_fn counters_init = ignore_init, pcs_init = ignore_init;
static cmp1_fn cmp1 = ignore_cmp1, const_cmp1 = ignore_cmp1;
static cmp2_fn cmp2 = ignore_cmp2, const_cmp2 = ignore_cmp2;
static cmp4_fn cmp4 = ignore_cmp4, const_cmp4 = ignore_cmp4;
static cmp8_fn cmp8 = ignore_cmp8, const_cmp8 = ignore_cmp8;
static switch_fn trace_switch = ignore_switch;

/* registrations made before `fuzz_bind`: (counters start, stop) then (pcs start, stop) */
static struct { int pcs; uint8_t *start, *stop; } pending[PENDING];
static int pending_count, bound;

void __sanitizer_cov_trace_pc(void) {
    uint32_t here = (uint32_t)(((uintptr_t)__builtin_return_address(0) * 0x9E3779B97F4A7C15ull) >> 44);
    uint32_t edge = (here ^ previous) & (EDGES - 1);
    counters[edge]++;
    ever[edge] = 1;
    previous = blocks ? 0 : here >> 1;
}

static void registration(int is_pcs, uint8_t *start, uint8_t *stop) {
    if (bound) {
        (is_pcs ? pcs_init : counters_init)(start, stop);
    } else if (pending_count < PENDING) {
        pending[pending_count].pcs = is_pcs;
        pending[pending_count].start = start;
        pending[pending_count++].stop = stop;
    }
}

void __sanitizer_cov_8bit_counters_init(uint8_t *start, uint8_t *stop) { registration(0, start, stop); }
void __sanitizer_cov_pcs_init(uint8_t *start, uint8_t *stop) { registration(1, start, stop); }

void __sanitizer_cov_trace_cmp1(uint8_t a, uint8_t b) { cmp1(a, b); }
void __sanitizer_cov_trace_cmp2(uint16_t a, uint16_t b) { cmp2(a, b); }
void __sanitizer_cov_trace_cmp4(uint32_t a, uint32_t b) { cmp4(a, b); }
void __sanitizer_cov_trace_cmp8(uint64_t a, uint64_t b) { cmp8(a, b); }
void __sanitizer_cov_trace_const_cmp1(uint8_t a, uint8_t b) { const_cmp1(a, b); }
void __sanitizer_cov_trace_const_cmp2(uint16_t a, uint16_t b) { const_cmp2(a, b); }
void __sanitizer_cov_trace_const_cmp4(uint32_t a, uint32_t b) { const_cmp4(a, b); }
void __sanitizer_cov_trace_const_cmp8(uint64_t a, uint64_t b) { const_cmp8(a, b); }
void __sanitizer_cov_trace_switch(uint64_t value, uint64_t *cases) { trace_switch(value, cases); }
/* gcc's floating-point comparisons, which libFuzzer has no callback for */
void __sanitizer_cov_trace_cmpf(float a, float b) { (void)a; (void)b; }
void __sanitizer_cov_trace_cmpd(double a, double b) { (void)a; (void)b; }

size_t fuzz_native_edges(void);

static void report(void) {
    fprintf(stderr, "rdbspec-fuzz: native edges: %zu\n", fuzz_native_edges());
}

#define BIND(var, name) do { void *f = dlsym(lib, name); if (f == NULL) return -1; *(void **)&(var) = f; } while (0)

/* Binds to the libFuzzer of the shared object at `path` (atheris's core module, loaded), hands it
   the registrations kept so far and then this library's counters. 0, or -1 when a symbol is missing. */
int fuzz_bind(const char *path) {
    void *lib = dlopen(path, RTLD_NOW | RTLD_NOLOAD);
    if (lib == NULL) return -1;
    BIND(counters_init, "__sanitizer_cov_8bit_counters_init");
    BIND(pcs_init, "__sanitizer_cov_pcs_init");
    BIND(cmp1, "__sanitizer_cov_trace_cmp1");
    BIND(cmp2, "__sanitizer_cov_trace_cmp2");
    BIND(cmp4, "__sanitizer_cov_trace_cmp4");
    BIND(cmp8, "__sanitizer_cov_trace_cmp8");
    BIND(const_cmp1, "__sanitizer_cov_trace_const_cmp1");
    BIND(const_cmp2, "__sanitizer_cov_trace_const_cmp2");
    BIND(const_cmp4, "__sanitizer_cov_trace_const_cmp4");
    BIND(const_cmp8, "__sanitizer_cov_trace_const_cmp8");
    BIND(trace_switch, "__sanitizer_cov_trace_switch");
    bound = 1;
    blocks = getenv("RDBSPEC_FUZZ_BLOCKS") != NULL;
    for (int i = 0; i < pending_count; i++)
        registration(pending[i].pcs, pending[i].start, pending[i].stop);
    pending_count = 0;
    /* made-up PCs, one a counter, apart from atheris's (small numbers: its counters' indexes) */
    for (uint32_t i = 0; i < EDGES; i++)
        pcs[i].pc = (uintptr_t)&counters[i];
    counters_init(counters, counters + EDGES);
    pcs_init((uint8_t *)pcs, (uint8_t *)(pcs + EDGES));
    atexit(report);
    return 0;
}

/* The counters hit at least once since the library was loaded. */
size_t fuzz_native_edges(void) {
    size_t hit = 0;
    for (uint32_t i = 0; i < EDGES; i++)
        hit += ever[i];
    return hit;
}
