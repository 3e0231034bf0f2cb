#pragma once
/*
 * device.h (simulated device) - the CUDA device language on the CPU, for
 * the .cu files that cusim-rewrite has made plain C++ (cuda/sim/README.md).
 *
 * Design notes
 * - A kernel is an ordinary C++ function. Each thread of a block runs it on
 *   a fiber of its own (cuda/sim/exec.cc); a fiber gives way only where a
 *   GPU thread can wait for others - __syncthreads, a warp collective, its
 *   end - so every thread of a block can block and resume, and a run is
 *   deterministic. Blocks run one after another.
 * - threadIdx and friends are calls declared const: a function runs on one
 *   fiber, so within it they never change.
 * - Collectives, barriers, atomics, shared memory and the math functions
 *   whose device accuracy differs from the host's are out of line, in the
 *   runtime, which checks them (masks, exited lanes, races) and counts them.
 * - Launches and __shared__ declarations come from cusim-rewrite as
 *   ::cusim::launch<K>(cfg)(args) and ::cusim::shared_var<T>(tag, align).
 */
#ifndef __cplusplus
#error "cusim/device.h is C++: the device language of the .cu files"
#endif

#include <cmath>
#include <math.h>
#include <stdint.h>
#include <string.h>
#include <tuple>
#include <type_traits>
#include <utility>

#include "cuda_bf16.h"
#include "cuda_fp16.h"
#include "cuda_runtime_api.h"

/* ---- qualifiers ---- */
#define __global__
#define __device__
#define __host__
#define __forceinline__ inline __attribute__((always_inline))
#define __noinline__    __attribute__((noinline))
#define __launch_bounds__(...)
#define __align__(n) __attribute__((aligned(n)))
#define __constant__ const
#define __shared__ \
	static_assert(false, "__shared__ outside a .cu file: cusim-rewrite did not see it");

namespace cusim
{

/* ---- built-in variables (the current thread's; const: a fiber is one thread) ---- */
[[gnu::const]] uint3 thread_idx(void);
[[gnu::const]] uint3 block_idx(void);
[[gnu::const]] dim3 block_dim(void);
[[gnu::const]] dim3 grid_dim(void);

} // namespace cusim

#define threadIdx (::cusim::thread_idx())
#define blockIdx  (::cusim::block_idx())
#define blockDim  (::cusim::block_dim())
#define gridDim   (::cusim::grid_dim())
static constexpr int warpSize = 32;

namespace cusim
{

/* ---- barriers and warp collectives (exec.cc) ---- */
enum coll_kind {
	COLL_SHFL_IDX,
	COLL_SHFL_UP,
	COLL_SHFL_DOWN,
	COLL_SHFL_XOR,
	COLL_BALLOT,
	COLL_ANY,
	COLL_ALL,
	COLL_SYNCWARP,
	COLL_REDUCE_ADD,
	COLL_MATCH_ANY,
};

void syncthreads(const char *file, int line);
int syncthreads_op(int op, int pred, const char *file, int line); /* 0 count, 1 and, 2 or */
uint64_t collective(coll_kind kind, unsigned mask, uint64_t value, unsigned size, int arg,
                    int width, const char *file, int line);
unsigned active_mask(void);
void threadfence(void);

template <typename T>
static inline T
shfl(coll_kind kind, const char *file, int line, unsigned mask, T v, int arg, int width = 32)
{
	static_assert(sizeof(T) <= 8 && std::is_trivially_copyable<T>::value,
	              "warp shuffles move at most 8 bytes");
	uint64_t u = 0;
	T r;

	memcpy(&u, &v, sizeof(T));
	u = collective(kind, mask, u, sizeof(T), arg, width, file, line);
	memcpy(&r, &u, sizeof(T));
	return r;
}

/* ---- shared memory (exec.cc): @tag names a __shared__ declaration ---- */
void *shared_alloc(const void *tag, size_t size, size_t align, const char *name);
void *shared_dyn(size_t align);

template <typename T>
static inline T &
shared_var(const void *tag, size_t align, const char *name)
{
	return *static_cast<T *>(shared_alloc(tag, sizeof(T), align ? align : alignof(T), name));
}

/* ---- math with the device's documented accuracy (math.cc) ---- */
float dev_expf(float x);
float dev_exp2f(float x);
float dev_exp10f(float x);
float dev_logf(float x);
float dev_log2f(float x);
float dev_log10f(float x);
float dev_log1pf(float x);
float dev_expm1f(float x);
float dev_powf(float x, float y);
float dev_sinf(float x);
float dev_cosf(float x);
float dev_tanf(float x);
float dev_tanhf(float x);
float dev_erff(float x);
float dev_rsqrtf(float x);
float dev_fast_expf(float x);
float dev_fast_logf(float x);
float dev_fast_sinf(float x);
float dev_fast_cosf(float x);
float dev_fast_powf(float x, float y);
float dev_fast_fdividef(float x, float y);
double dev_exp(double x);
double dev_log(double x);
double dev_pow(double x, double y);
double dev_tanh(double x);
double dev_sin(double x);
double dev_cos(double x);
void dev_sincospi(double x, double *s, double *c);
void dev_sincospif(float x, float *s, float *c);
void dev_sincosf(float x, float *s, float *c);

/* Operations the cost counters (cost.cc, cusim/cost.h) take differences of across a
 * launch. One host thread runs device code at a time (the API lock), so plain adds. */
struct op_counts {
	uint64_t fma32, dp4a, collectives, barriers;
};
extern op_counts counts;
void count_slow(uint64_t *c); /* cost.cc, not instrumented */

/* ++*c, unseen by the access hooks: the counts are the simulator's, not the kernel's */
static inline void
bump(uint64_t *c)
{
#if defined(__x86_64__)
	__asm__("incq %0" : "+m"(*c));
#else
	count_slow(c);
#endif
}

/* fmaf in device code: counted; the same rounding (one) as the host's */
static inline float
dev_fmaf(float a, float b, float c)
{
	bump(&counts.fma32);
	return __builtin_fmaf(a, b, c);
}

/* __dp4a: the four byte products (signed or unsigned) added to @c */
static inline int
dp4a(int a, int b, int c)
{
	bump(&counts.dp4a);
	return c + (int)(int8_t)a * (int)(int8_t)b + (int)(int8_t)(a >> 8) * (int)(int8_t)(b >> 8) +
	       (int)(int8_t)(a >> 16) * (int)(int8_t)(b >> 16) +
	       (int)(int8_t)(a >> 24) * (int)(int8_t)(b >> 24);
}

static inline unsigned
dp4a_u(unsigned a, unsigned b, unsigned c)
{
	bump(&counts.dp4a);
	return c + (a & 0xffu) * (b & 0xffu) + (a >> 8 & 0xffu) * (b >> 8 & 0xffu) +
	       (a >> 16 & 0xffu) * (b >> 16 & 0xffu) + (a >> 24) * (b >> 24);
}

} // namespace cusim

/* The CUDA math library (device accuracy inside a kernel, the host's outside). */
#ifndef CUSIM_RUNTIME /* the runtime's own files call the host's */
#define expf(x)            ::cusim::dev_expf(x)
#define exp2f(x)           ::cusim::dev_exp2f(x)
#define exp10f(x)          ::cusim::dev_exp10f(x)
#define logf(x)            ::cusim::dev_logf(x)
#define log2f(x)           ::cusim::dev_log2f(x)
#define log10f(x)          ::cusim::dev_log10f(x)
#define log1pf(x)          ::cusim::dev_log1pf(x)
#define expm1f(x)          ::cusim::dev_expm1f(x)
#define powf(x, y)         ::cusim::dev_powf(x, y)
#define sinf(x)            ::cusim::dev_sinf(x)
#define cosf(x)            ::cusim::dev_cosf(x)
#define tanf(x)            ::cusim::dev_tanf(x)
#define tanhf(x)           ::cusim::dev_tanhf(x)
#define erff(x)            ::cusim::dev_erff(x)
#define rsqrtf(x)          ::cusim::dev_rsqrtf(x)
#define __expf(x)          ::cusim::dev_fast_expf(x)
#define __logf(x)          ::cusim::dev_fast_logf(x)
#define __sinf(x)          ::cusim::dev_fast_sinf(x)
#define __cosf(x)          ::cusim::dev_fast_cosf(x)
#define __powf(x, y)       ::cusim::dev_fast_powf(x, y)
#define __fdividef(x, y)   ::cusim::dev_fast_fdividef(x, y)
#define exp(x)             ::cusim::dev_exp(x)
#define log(x)             ::cusim::dev_log(x)
#define pow(x, y)          ::cusim::dev_pow(x, y)
#define tanh(x)            ::cusim::dev_tanh(x)
#define sin(x)             ::cusim::dev_sin(x)
#define cos(x)             ::cusim::dev_cos(x)
#define sincospi(x, s, c)  ::cusim::dev_sincospi(x, s, c)
#define sincospif(x, s, c) ::cusim::dev_sincospif(x, s, c)
#define sincosf(x, s, c)   ::cusim::dev_sincosf(x, s, c)
#define fmaf(x, y, z)      ::cusim::dev_fmaf(x, y, z)
#endif

/* ---- barriers and collectives ---- */
#define __syncthreads()        ::cusim::syncthreads(__FILE__, __LINE__)
#define __syncthreads_count(p) ::cusim::syncthreads_op(0, (p) != 0, __FILE__, __LINE__)
#define __syncthreads_and(p)   ::cusim::syncthreads_op(1, (p) != 0, __FILE__, __LINE__)
#define __syncthreads_or(p)    ::cusim::syncthreads_op(2, (p) != 0, __FILE__, __LINE__)
#define __syncwarp(...)        ::cusim::syncwarp_at(__FILE__, __LINE__)(__VA_ARGS__)
#define __shfl_sync(...)       ::cusim::shfl(::cusim::COLL_SHFL_IDX, __FILE__, __LINE__, __VA_ARGS__)
#define __shfl_up_sync(...)    ::cusim::shfl(::cusim::COLL_SHFL_UP, __FILE__, __LINE__, __VA_ARGS__)
#define __shfl_down_sync(...) \
	::cusim::shfl(::cusim::COLL_SHFL_DOWN, __FILE__, __LINE__, __VA_ARGS__)
#define __shfl_xor_sync(...) ::cusim::shfl(::cusim::COLL_SHFL_XOR, __FILE__, __LINE__, __VA_ARGS__)
#define __ballot_sync(m, p)                                                                   \
	((unsigned)::cusim::collective(::cusim::COLL_BALLOT, m, (p) != 0, 4, 0, 32, __FILE__, \
	                               __LINE__))
#define __any_sync(m, p) \
	((int)::cusim::collective(::cusim::COLL_ANY, m, (p) != 0, 4, 0, 32, __FILE__, __LINE__))
#define __all_sync(m, p) \
	((int)::cusim::collective(::cusim::COLL_ALL, m, (p) != 0, 4, 0, 32, __FILE__, __LINE__))
#define __reduce_add_sync(m, v)                                                              \
	((unsigned)::cusim::collective(::cusim::COLL_REDUCE_ADD, m, (unsigned)(v), 4, 0, 32, \
	                               __FILE__, __LINE__))
#define __match_any_sync(m, v)                                                                  \
	((unsigned)::cusim::collective(::cusim::COLL_MATCH_ANY, m, (uint64_t)(v), sizeof(v), 0, \
	                               32, __FILE__, __LINE__))
#define __activemask()         ::cusim::active_mask()
#define __threadfence()        ::cusim::threadfence()
#define __threadfence_block()  ::cusim::threadfence()
#define __threadfence_system() ::cusim::threadfence()

namespace cusim
{
/* __syncwarp(mask = all lanes), with the call's place */
struct syncwarp_at {
	const char *file;
	int line;
	syncwarp_at(const char *f, int l) : file(f), line(l)
	{
	}
	void operator()(unsigned mask = 0xffffffffu) const
	{
		(void)collective(COLL_SYNCWARP, mask, 0, 0, 0, 32, file, line);
	}
};
} // namespace cusim

/* ---- atomics (exec.cc: checked as atomic accesses, counted) ---- */
int atomicAdd(int *p, int v);
unsigned atomicAdd(unsigned *p, unsigned v);
unsigned long long atomicAdd(unsigned long long *p, unsigned long long v);
float atomicAdd(float *p, float v);
double atomicAdd(double *p, double v);
int atomicSub(int *p, int v);
unsigned atomicSub(unsigned *p, unsigned v);
int atomicExch(int *p, int v);
unsigned atomicExch(unsigned *p, unsigned v);
unsigned long long atomicExch(unsigned long long *p, unsigned long long v);
float atomicExch(float *p, float v);
int atomicMin(int *p, int v);
unsigned atomicMin(unsigned *p, unsigned v);
long long atomicMin(long long *p, long long v);
unsigned long long atomicMin(unsigned long long *p, unsigned long long v);
int atomicMax(int *p, int v);
unsigned atomicMax(unsigned *p, unsigned v);
long long atomicMax(long long *p, long long v);
unsigned long long atomicMax(unsigned long long *p, unsigned long long v);
int atomicCAS(int *p, int cmp, int v);
unsigned atomicCAS(unsigned *p, unsigned cmp, unsigned v);
unsigned long long atomicCAS(unsigned long long *p, unsigned long long cmp, unsigned long long v);
unsigned short atomicCAS(unsigned short *p, unsigned short cmp, unsigned short v);
int atomicAnd(int *p, int v);
unsigned atomicAnd(unsigned *p, unsigned v);
int atomicOr(int *p, int v);
unsigned atomicOr(unsigned *p, unsigned v);
int atomicXor(int *p, int v);
unsigned atomicXor(unsigned *p, unsigned v);
unsigned atomicInc(unsigned *p, unsigned v);
unsigned atomicDec(unsigned *p, unsigned v);

/* ---- intrinsics: IEEE-exact ones are the host's operations ---- */
static inline float
__fadd_rn(float a, float b)
{
	return a + b;
}
static inline float
__fsub_rn(float a, float b)
{
	return a - b;
}
static inline float
__fmul_rn(float a, float b)
{
	return a * b;
}
static inline float
__fdiv_rn(float a, float b)
{
	return a / b;
}
static inline float
__frcp_rn(float a)
{
	return 1.0f / a;
}
static inline float
__fsqrt_rn(float a)
{
	return sqrtf(a);
}
static inline float
__fmaf_rn(float a, float b, float c)
{
	return fmaf(a, b, c);
}
static inline double
__dadd_rn(double a, double b)
{
	return a + b;
}
static inline double
__dmul_rn(double a, double b)
{
	return a * b;
}
static inline double
__fma_rn(double a, double b, double c)
{
	return fma(a, b, c);
}
static inline float
__saturatef(float a)
{
	return a != a ? 0.0f : a < 0.0f ? 0.0f : a > 1.0f ? 1.0f : a;
}
static inline float
__int_as_float(int i)
{
	float f;
	memcpy(&f, &i, 4);
	return f;
}
static inline int
__float_as_int(float f)
{
	int i;
	memcpy(&i, &f, 4);
	return i;
}
static inline float
__uint_as_float(unsigned u)
{
	float f;
	memcpy(&f, &u, 4);
	return f;
}
static inline unsigned
__float_as_uint(float f)
{
	unsigned u;
	memcpy(&u, &f, 4);
	return u;
}
static inline double
__longlong_as_double(long long i)
{
	double d;
	memcpy(&d, &i, 8);
	return d;
}
static inline long long
__double_as_longlong(double d)
{
	long long i;
	memcpy(&i, &d, 8);
	return i;
}
static inline int
__float2int_rn(float f)
{
	return (int)rintf(f);
}
static inline int
__float2int_rz(float f)
{
	return (int)f;
}
static inline unsigned
__float2uint_rn(float f)
{
	return (unsigned)rintf(f);
}
static inline int
__popc(unsigned x)
{
	return __builtin_popcount(x);
}
static inline int
__popcll(unsigned long long x)
{
	return __builtin_popcountll(x);
}
static inline int
__clz(int x)
{
	return x == 0 ? 32 : __builtin_clz((unsigned)x);
}
static inline int
__clzll(long long x)
{
	return x == 0 ? 64 : __builtin_clzll((unsigned long long)x);
}
static inline int
__ffs(int x)
{
	return __builtin_ffs(x);
}
static inline int
__ffsll(long long x)
{
	return __builtin_ffsll(x);
}
static inline unsigned
__brev(unsigned x)
{
	x = ((x >> 1) & 0x55555555u) | ((x & 0x55555555u) << 1);
	x = ((x >> 2) & 0x33333333u) | ((x & 0x33333333u) << 2);
	x = ((x >> 4) & 0x0f0f0f0fu) | ((x & 0x0f0f0f0fu) << 4);
	x = ((x >> 8) & 0x00ff00ffu) | ((x & 0x00ff00ffu) << 8);
	return (x >> 16) | (x << 16);
}
static inline unsigned
__umulhi(unsigned a, unsigned b)
{
	return (unsigned)(((unsigned long long)a * b) >> 32);
}
static inline int
__mulhi(int a, int b)
{
	return (int)(((long long)a * b) >> 32);
}
static inline unsigned long long
__umul64hi(unsigned long long a, unsigned long long b)
{
	return (unsigned long long)(((unsigned __int128)a * b) >> 64);
}
static inline unsigned
__byte_perm(unsigned x, unsigned y, unsigned s)
{
	unsigned long long v = ((unsigned long long)y << 32) | x;
	unsigned r = 0;
	for (int i = 0; i < 4; i++)
		r |= (unsigned)((v >> (8 * ((s >> (4 * i)) & 7))) & 0xffu) << (8 * i);
	return r;
}
static inline unsigned
__funnelshift_r(unsigned lo, unsigned hi, unsigned sh)
{
	unsigned long long v = ((unsigned long long)hi << 32) | lo;
	return (unsigned)(v >> (sh & 31));
}
static inline unsigned
__funnelshift_l(unsigned lo, unsigned hi, unsigned sh)
{
	unsigned long long v = ((unsigned long long)hi << 32) | lo;
	return (unsigned)((v << (sh & 31)) >> 32);
}
static inline unsigned
__funnelshift_rc(unsigned lo, unsigned hi, unsigned sh)
{
	unsigned long long v = ((unsigned long long)hi << 32) | lo;
	return (unsigned)(v >> (sh > 32 ? 32 : sh));
}
static inline int
__dp4a(int a, int b, int c)
{
	return ::cusim::dp4a(a, b, c);
}
static inline unsigned
__dp4a(unsigned a, unsigned b, unsigned c)
{
	return ::cusim::dp4a_u(a, b, c);
}
long long clock64(void);

template <typename T>
static inline T
__ldg(const T *p)
{
	return *p;
}

/* min and max for every integer pair the device headers declare, float and double. */
#define CUSIM_MINMAX(T)               \
	static inline T min(T a, T b) \
	{                             \
		return a < b ? a : b; \
	}                             \
	static inline T max(T a, T b) \
	{                             \
		return a > b ? a : b; \
	}
CUSIM_MINMAX(int)
CUSIM_MINMAX(unsigned)
CUSIM_MINMAX(long)
CUSIM_MINMAX(unsigned long)
CUSIM_MINMAX(long long)
CUSIM_MINMAX(unsigned long long)
#undef CUSIM_MINMAX
static inline unsigned
min(int a, unsigned b)
{
	return min((unsigned)a, b);
}
static inline unsigned
min(unsigned a, int b)
{
	return min(a, (unsigned)b);
}
static inline unsigned
max(int a, unsigned b)
{
	return max((unsigned)a, b);
}
static inline unsigned
max(unsigned a, int b)
{
	return max(a, (unsigned)b);
}
static inline float
min(float a, float b)
{
	return fminf(a, b);
}
static inline float
max(float a, float b)
{
	return fmaxf(a, b);
}
static inline double
min(double a, double b)
{
	return fmin(a, b);
}
static inline double
max(double a, double b)
{
	return fmax(a, b);
}

/* ---- launches ---- */
namespace cusim
{

/* One launch's kernel and arguments, by value (a graph replays the same values). */
struct kernel_base {
	const char *name = nullptr;
	const void *fn = nullptr;
	virtual ~kernel_base() = default;
	virtual void run_thread() const = 0;
	virtual kernel_base *clone() const = 0;
	virtual size_t bytes() const = 0;
};

template <typename F> struct kernel_params;
template <typename... P> struct kernel_params<void (*)(P...)> {
	using tuple = std::tuple<std::decay_t<P>...>;
};

/* "auto K = (anonymous namespace)::mmvq_kernel<12, 1>" out of __PRETTY_FUNCTION__ */
const char *kernel_name_of(const char *pretty);

template <auto K>
static const char *
kernel_name(void)
{
	static const char *name = kernel_name_of(__PRETTY_FUNCTION__);
	return name;
}

template <auto K, typename Tuple> struct kernel_closure final : kernel_base {
	Tuple args;
	explicit kernel_closure(Tuple &&a) : args(std::move(a))
	{
		name = kernel_name<K>();
		fn = reinterpret_cast<const void *>(K);
	}
	kernel_closure(const kernel_closure &o) : kernel_base(o), args(o.args)
	{
	}
	void run_thread() const override
	{
		std::apply(K, args);
	}
	kernel_base *clone() const override
	{
		return new kernel_closure(*this);
	}
	size_t bytes() const override
	{
		return sizeof(*this);
	}
};

/* submit - validate the configuration, enqueue @k on @st (or record it in a capture); owns @k. */
void submit(kernel_base *k, dim3 grid, dim3 block, size_t smem, cudaStream_t st);

template <auto K> struct launcher {
	dim3 grid, block;
	size_t smem;
	cudaStream_t st;
	template <typename... A> void operator()(A &&...a) const
	{
		using Tuple = typename kernel_params<decltype(K)>::tuple;
		static_assert(std::tuple_size<Tuple>::value == sizeof...(A),
		              "a launch passes as many arguments as the kernel takes");
		submit(new kernel_closure<K, Tuple>(Tuple(std::forward<A>(a)...)), grid, block,
		       smem, st);
	}
};

template <auto K>
static inline launcher<K>
launch(dim3 grid, dim3 block, size_t smem = 0, cudaStream_t st = 0)
{
	return launcher<K>{grid, block, smem, st};
}

} // namespace cusim

/* ---- C++ overloads of the runtime API ---- */
template <typename T>
static inline cudaError_t
cudaMalloc(T **p, size_t size)
{
	return cudaMalloc(reinterpret_cast<void **>(p), size);
}

template <typename T>
static inline cudaError_t
cudaMallocHost(T **p, size_t size)
{
	return cudaMallocHost(reinterpret_cast<void **>(p), size);
}

template <typename T>
static inline cudaError_t
cudaFuncGetAttributes(cudaFuncAttributes *attr, T *kernel)
{
	return cudaFuncGetAttributes(attr, reinterpret_cast<const void *>(kernel));
}

template <typename T>
static inline cudaError_t
cudaFuncSetAttribute(T *kernel, cudaFuncAttribute attr, int value)
{
	return cudaFuncSetAttribute(reinterpret_cast<const void *>(kernel), attr, value);
}
