#pragma once
/*
 * sim.h - the simulated device's internals, shared by the .cc files of cuda/sim. Not for
 * use elsewhere: the interface is CUDA's (include/).
 *
 * Design notes
 * - Work is lazy: an operation enqueued on a stream runs when the host
 *   waits for it (a synchronize, a blocking copy, an event it waits on, a
 *   stream or device teardown), in stream order, with the legacy default
 *   stream's implicit ordering against blocking streams. So a host buffer
 *   reused before the copy that reads it has run gives the later bytes, as
 *   a fast host and a busy GPU would - every time, not once in a while.
 * - One lock (api_lock) guards every table; the thread that runs device
 *   work holds it, so the access checks read the tables without it.
 * - A fault (an access outside every allocation, a race, a collective
 *   misused, a deadlock) is reported with the kernel, block and thread; then
 *   the process aborts, or with ORCH_CUDA_SIM_ON_FAULT=sticky the context
 *   takes a sticky error as a GPU's would.
 */
#include <map>
#include <pthread.h>
#include <stddef.h>
#include <stdint.h>
#include <vector>

#include "cusim/device.h"

namespace cusim
{

/* ---- configuration (environment, read once) ---- */
struct config {
	uint64_t vram_bytes;   /* ORCH_CUDA_SIM_VRAM: each device's memory (default 4 GiB) */
	int devices;           /* ORCH_CUDA_SIM_DEVICES (default 1) */
	bool checks;           /* ORCH_CUDA_SIM_CHECKS=0: no race, bounds or init checks */
	bool sticky;           /* ORCH_CUDA_SIM_ON_FAULT=sticky: no abort */
	bool exact_math;       /* ORCH_CUDA_SIM_MATH=exact: no ulp error in device math */
	bool trace;            /* ORCH_CUDA_SIM_TRACE=1: one stderr line a launch */
	bool cost;             /* ORCH_CUDA_SIM_COST set: the cost counters count */
	const char *cost_file; /* ORCH_CUDA_SIM_COST=FILE (not "1"): records appended */
};
const config &cfg(void);

/* ---- the API lock (recursive) ---- */
struct api_lock {
	api_lock();
	~api_lock();
	api_lock(const api_lock &) = delete;
	api_lock &operator=(const api_lock &) = delete;
};

/* ---- errors ---- */
cudaError_t set_error(cudaError_t e); /* the thread's last error (unless e is success); e */
cudaError_t sticky_error(void);       /* the context's sticky error, or cudaSuccess */
/* fault - report a device fault (printf-style) with the current kernel's context; aborts,
 * or in sticky mode records @code and returns. */
void fault(cudaError_t code, const char *fmt, ...) __attribute__((format(printf, 2, 3)));
void note(const char *fmt, ...) __attribute__((format(printf, 1, 2)));

/* ---- memory (memory.cc) ---- */
struct allocation {
	uintptr_t base;
	size_t size;
	int dev;
	bool freed; /* in quarantine: an access is a use after free */
};
int current_device(void);
/* find_device_alloc - the allocation (live, or freed and in quarantine) holding @a, or the
 * nearest one below it when @nearest; NULL if none. */
const allocation *find_device_alloc(uintptr_t a, bool nearest);
bool is_pinned(uintptr_t a, size_t n);
bool in_module_image(uintptr_t a, size_t n);
enum mem_kind { MEM_PAGEABLE, MEM_PINNED, MEM_DEVICE, MEM_BAD_DEVICE };
/* classify - what [p, p + n) is: host (pageable or pinned), inside one live device
 * allocation, or device memory it overruns / freed (MEM_BAD_DEVICE). */
mem_kind classify(const void *p, size_t n);
void device_memcpy(void *dst, const void *src, size_t n); /* the bytes; checked by callers */
void device_memset(void *dst, int value, size_t n);       /* the bytes; checked by callers */
/* device_span - device @d's reserved range (every allocation of it is inside); false if
 * there is no such device. */
bool device_span(int d, uintptr_t *base, size_t *reserved);

/* ---- streams (stream.cc) ---- */
struct op {
	virtual ~op() = default;
	virtual void run() = 0;
	virtual op *clone() const = 0;
	virtual const char *what() const = 0;
};
/* enqueue - @o on @st, or into its capture; takes @o. cudaSuccess or the capture's error. */
cudaError_t enqueue(cudaStream_t st, op *o);
/* prohibited_in_capture - whether an unsafe call must fail because of an active capture
 * (and invalidates it); the error to return. */
cudaError_t unsafe_call(const char *what);
void drain_all(void);

/* ---- kernels (exec.cc) ---- */
void run_kernel(const kernel_base *k, dim3 grid, dim3 block, size_t smem);
const char *current_kernel(char *buf, size_t len); /* "name block (x,y,z) thread (x,y,z)" */
bool in_kernel(void);
size_t max_dyn_smem(const void *fn);
void set_max_dyn_smem(const void *fn, size_t bytes);

/* ---- cost counters (cost.cc; include/cusim/cost.h) ---- */
/* cost_op - an operation that is no kernel of ours: a copy, a memset, a library call, a
 * graph launch (bytes of device memory read and written, of pinned host memory, FLOPs). */
void cost_op(const char *name, int kind, uint64_t rd, uint64_t wr, uint64_t host_rd,
             uint64_t host_wr, uint64_t tensor_flops, uint64_t fp32_flops);
/* whether the operations running now are a graph's nodes (stream.cc sets it) */
extern bool cost_in_graph;
/* cusim_cost_skip's setting: kernels and library calls are not run */
extern bool cost_skip;

/* ---- access checks (check.cc) ---- */
enum access_flags { ACC_READ = 0, ACC_WRITE = 1, ACC_ATOMIC = 2 };
void check_access(const void *p, size_t n, int flags);

} // namespace cusim
