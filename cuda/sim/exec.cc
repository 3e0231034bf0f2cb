/*
 * exec.cc - kernels on the CPU: a block's threads as fibers, barriers, warp
 * collectives, shared memory, atomics.
 *
 * Design notes
 * - Each host thread that runs device work has one executor: a fiber stack
 *   for each of up to 1024 threads, a shared-memory arena and its shadow.
 *   Blocks run one after another. A block's thread runs until it must wait
 *   (at __syncthreads, at a warp collective whose lanes are not all there,
 *   or at its end), then the next thread that can run does, in thread order,
 *   so a run is the same every time.
 * - The last lane to reach a collective computes every lane's result and
 *   goes on; the others resume later. A collective whose mask names a lane
 *   that has exited, that waits at another collective or at a barrier, or
 *   that is not in the block, is a fault (on a GPU: undefined behaviour that
 *   often "works"); so is a shuffle that reads a lane outside its mask, and
 *   a block whose threads all wait but no barrier or collective can finish
 *   (a deadlock), reported with where each group of threads waits.
 * - A thread that has exited counts as arrived at __syncthreads (a GPU's
 *   bar.sync does the same for exited warps).
 * - Fibers switch with a few instructions (x86-64: the callee-saved
 *   registers); elsewhere through ucontext. Under
 *   AddressSanitizer every switch is announced to it.
 */
#include "exec.h"

#include <errno.h>
#include <pthread.h>
#include <stdarg.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/mman.h>
#include <time.h>

#if defined(__SANITIZE_ADDRESS__)
#include <sanitizer/asan_interface.h>
#include <sanitizer/common_interface_defs.h>
#define CUSIM_ASAN 1
#else
#define CUSIM_ASAN 0
#endif

#if !defined(__x86_64__)
#include <ucontext.h>
#endif

namespace cusim
{

__thread exec *tls_exec __attribute__((tls_model("initial-exec")));

namespace
{

size_t
stack_bytes(void)
{
	static size_t bytes;

	if (bytes == 0) {
		const char *s = getenv("ORCH_CUDA_SIM_STACK_KIB");
		long kib = s ? strtol(s, NULL, 10) : 0;
		bytes = (size_t)(kib >= 32 && kib <= 65536 ? kib : CUSIM_ASAN ? 256 : 128) << 10;
	}
	return bytes;
}

} // namespace
} // namespace cusim

/* ---- fibers ---- */
#if defined(__x86_64__)
extern "C" void cusim_switch(void **save_sp, void *load_sp);
extern "C" void cusim_fiber_entry(void);
extern "C" void cusim_fiber_main(cusim::exec *e);
/* cusim_switch saves the callee-saved registers on the current stack, stores its
 * pointer in *save_sp, and resumes the stack at load_sp. MXCSR and the x87 control
 * word are not switched: device code never changes them (they cost more than the
 * rest of a switch). */
asm(R"(
	.text
	.globl cusim_switch
	.hidden cusim_switch
	.type cusim_switch, @function
cusim_switch:
	pushq %rbp
	pushq %rbx
	pushq %r12
	pushq %r13
	pushq %r14
	pushq %r15
	movq %rsp, (%rdi)
	movq %rsi, %rsp
	popq %r15
	popq %r14
	popq %r13
	popq %r12
	popq %rbx
	popq %rbp
	ret
	.size cusim_switch, .-cusim_switch
	.globl cusim_fiber_entry
	.hidden cusim_fiber_entry
	.type cusim_fiber_entry, @function
cusim_fiber_entry:
	movq %r12, %rdi
	call cusim_fiber_main
	ud2
	.size cusim_fiber_entry, .-cusim_fiber_entry
)");
#else
extern "C" void cusim_fiber_main(cusim::exec *e);
#endif

namespace cusim
{
namespace
{

#if !defined(__x86_64__)
/* The portable switch: a ucontext per saved context, its address in the "sp". */
struct uctx {
	ucontext_t uc;
};
#endif

/* Make @t's stack start cusim_fiber_main(e) when switched to. */
void
fiber_init(exec *e, sim_thread *t)
{
#if defined(__x86_64__)
	uint64_t *sp = (uint64_t *)(void *)t->stack_hi;
	*--sp = (uint64_t)(uintptr_t)cusim_fiber_entry; /* ret: rsp ≡ 0 (mod 16) after it */
	*--sp = 0;                                      /* rbp */
	*--sp = 0;                                      /* rbx */
	*--sp = (uint64_t)(uintptr_t)e;                 /* r12: cusim_fiber_entry's argument */
	*--sp = 0;                                      /* r13 */
	*--sp = 0;                                      /* r14 */
	*--sp = 0;                                      /* r15 */
	t->sp = sp;
#else
	uctx *u = (uctx *)(void *)t->stack_lo;
	getcontext(&u->uc);
	u->uc.uc_stack.ss_sp = t->stack_lo + sizeof(uctx);
	u->uc.uc_stack.ss_size = (size_t)(t->stack_hi - t->stack_lo) - sizeof(uctx);
	u->uc.uc_link = NULL;
	makecontext(&u->uc, (void (*)(void))cusim_fiber_main, 1, e);
	t->sp = u;
#endif
}

void
raw_switch(void **save, void *load)
{
#if defined(__x86_64__)
	cusim_switch(save, load);
#else
	static __thread uctx host;
	uctx *from = (uctx *)*save;
	if (from == NULL) {
		from = &host;
		*save = from;
	}
	swapcontext(&from->uc, &((uctx *)load)->uc);
#endif
}

/*
 * From the current context (@from_sp, its ASan fake stack @fake; @dying: it never
 * resumes) to the one saved at @to_sp whose stack is [bottom, bottom + size).
 */
void
switch_to(void **from_sp, void **fake, bool dying, void *to_sp, const void *bottom, size_t size)
{
#if CUSIM_ASAN
	__sanitizer_start_switch_fiber(dying ? NULL : fake, bottom, size);
#else
	(void)fake, (void)dying, (void)bottom, (void)size;
#endif
	raw_switch(from_sp, to_sp);
#if CUSIM_ASAN
	__sanitizer_finish_switch_fiber(*fake, NULL, NULL);
#endif
}

exec *
executor_new(void)
{
	size_t sb = stack_bytes(), page = 4096, per = sb + page;
	exec *e = (exec *)calloc(1, sizeof(*e));
	uint8_t *stacks, *smem;

	if (e == NULL || (e->th = (sim_thread *)calloc(MAX_THREADS, sizeof(sim_thread))) == NULL)
		goto oom;
	stacks = (uint8_t *)mmap(NULL, per * MAX_THREADS, PROT_READ | PROT_WRITE,
	                         MAP_PRIVATE | MAP_ANONYMOUS | MAP_NORESERVE, -1, 0);
	smem = (uint8_t *)mmap(NULL, SMEM_CAP + page, PROT_READ | PROT_WRITE,
	                       MAP_PRIVATE | MAP_ANONYMOUS, -1, 0);
	if (stacks == MAP_FAILED || smem == MAP_FAILED)
		goto oom;
	for (unsigned i = 0; i < MAX_THREADS; i++) {
		uint8_t *lo = stacks + i * per;
		mprotect(lo, page, PROT_NONE); /* a guard below each stack */
		e->th[i].stack_lo = lo + page;
		e->th[i].stack_hi = lo + per;
	}
	e->smem = smem;
#if CUSIM_ASAN
	ASAN_POISON_MEMORY_REGION(smem, SMEM_CAP);
#endif
	e->shadow = shadow_new();
	{
		pthread_attr_t a;
		void *addr = NULL;
		size_t size = 0;
		if (pthread_getattr_np(pthread_self(), &a) == 0) {
			pthread_attr_getstack(&a, &addr, &size);
			pthread_attr_destroy(&a);
		}
		e->host_stack_bottom = addr;
		e->host_stack_size = size;
	}
	return e;
oom:
	fprintf(stderr, "cusim: out of memory for an executor (%zu KiB stacks)\n", sb >> 10);
	abort();
}

/* The calling thread's executor (its stacks and arena stay mapped until the process exits). */
exec *
executor(void)
{
	static __thread exec *e;
	if (e == NULL)
		e = executor_new();
	return e;
}

[[noreturn]] void deadlock(exec *e);

sim_thread *
pick(exec *e, sim_thread *from)
{
	uint32_t n = e->n_threads, i = from ? from->linear : n - 1;

	if (i + 1 < n && e->th[i + 1].st <= TH_RUNNABLE) /* the usual: the next thread */
		return &e->th[i + 1];

	for (uint32_t k = 0; k < n; k++) {
		i = i + 1 == n ? 0 : i + 1;
		thread_state s = e->th[i].st;
		if (s == TH_RUNNABLE || s == TH_FRESH)
			return &e->th[i];
	}
	return NULL;
}

/* The current thread cannot go on (it waits, or @dying): run another, or end the block. */
void
schedule(exec *e, bool dying)
{
	sim_thread *from = e->cur, *to = pick(e, from);

	if (to == from && !dying)
		return;
	if (to == NULL) {
		if (e->n_exited != e->n_threads)
			deadlock(e);
		e->cur = NULL;
		switch_to(&from->sp, &from->fake_stack, true, e->host_sp, e->host_stack_bottom,
		          e->host_stack_size);
		__builtin_unreachable();
	}
	if (to->st == TH_FRESH) {
		fiber_init(e, to);
		to->st = TH_RUNNABLE;
	}
	e->cur = to;
	switch_to(&from->sp, &from->fake_stack, dying, to->sp, to->stack_lo,
	          (size_t)(to->stack_hi - to->stack_lo));
	/* resumed: e->cur is this thread again */
}

const char *
state_name(const sim_thread *t)
{
	switch (t->st) {
	case TH_FRESH:
		return "not started";
	case TH_RUNNABLE:
		return "runnable";
	case TH_BARRIER:
		return "waits at __syncthreads";
	case TH_COLLECTIVE:
		return "waits at a warp collective";
	case TH_EXITED:
		return "exited";
	}
	return "?";
}

[[noreturn]] void
deadlock(exec *e)
{
	char buf[4096];
	size_t o = 0;

	/* one line per run of threads in the same state at the same place */
	for (uint32_t i = 0; i < e->n_threads && o < sizeof(buf) - 256;) {
		const sim_thread *t = &e->th[i];
		uint32_t j = i + 1;
		while (j < e->n_threads && e->th[j].st == t->st && e->th[j].line == t->line &&
		       e->th[j].file == t->file && e->th[j].cmask == t->cmask)
			j++;
		o += (size_t)snprintf(buf + o, sizeof(buf) - o, "\n  threads %u-%u %s", i, j - 1,
		                      state_name(t));
		if (t->st == TH_BARRIER || t->st == TH_COLLECTIVE)
			o += (size_t)snprintf(buf + o, sizeof(buf) - o, " (%s:%d%s%08x)", t->file,
			                      t->line, t->st == TH_COLLECTIVE ? ", mask 0x" : "",
			                      t->st == TH_COLLECTIVE ? t->cmask : 0u);
		i = j;
	}
	fault(cudaErrorLaunchTimeout,
	      "deadlock: no thread of the block can go on (a GPU hangs here):%s", buf);
	abort(); /* even in sticky mode: the fibers cannot be unwound */
}

void
release_barrier(exec *e)
{
	int cnt = 0, all = 1, any = 0;

	for (uint32_t i = 0; i < e->n_threads; i++) {
		sim_thread *t = &e->th[i];
		if (t->st != TH_BARRIER)
			continue;
		cnt += t->bpred;
		all &= t->bpred;
		any |= t->bpred;
	}
	for (uint32_t i = 0; i < e->n_threads; i++) {
		sim_thread *t = &e->th[i];
		if (t->st != TH_BARRIER)
			continue;
		t->bres = t->bop == 0 ? cnt : t->bop == 1 ? all : any;
		t->st = TH_RUNNABLE;
	}
	for (uint32_t w = 0; w < e->n_warps; w++)
		e->warps[w].barrier = 0;
	e->n_barrier = 0;
	counts.barriers++;
	next_epoch(e);
}

void
lane_fault(exec *e, const char *what, uint32_t lanes, const char *file, int line)
{
	fault(cudaErrorIllegalInstruction, "%s at %s:%d (warp %u, lanes 0x%08x)", what, file, line,
	      e->cur->warp, lanes);
}

} // namespace

/* ---- the block ---- */

static void
run_block(exec *e, uint3 bidx)
{
	e->bidx = bidx;
	if (e->cost)
		cost_block_begin();
	next_epoch(e);
	e->block_epoch0 = e->epoch;
	e->svar_last = 0;
	e->n_exited = e->n_barrier = 0;
	e->n_svars = 0;
	e->smem_static = 0;
	e->dyn_placed = false;
	for (uint32_t w = 0; w < e->n_warps; w++) {
		uint32_t lanes = e->n_threads - 32 * w >= 32 ? 32 : e->n_threads - 32 * w;
		warp_state *ws = &e->warps[w];
		ws->waiting = ws->barrier = ws->wanted = ws->gen = ws->n_groups = 0;
		ws->exited = lanes == 32 ? 0 : ~((1u << lanes) - 1); /* lanes that do not exist */
	}
	for (uint32_t i = 0; i < e->n_threads; i++) {
		sim_thread *t = &e->th[i];
#if CUSIM_ASAN
		/* the frames its last run left on the stack, below where it stopped */
		uintptr_t low = (uintptr_t)t->sp - 2048;
		if (t->sp != NULL && low >= (uintptr_t)t->stack_lo && low < (uintptr_t)t->stack_hi)
			ASAN_UNPOISON_MEMORY_REGION((void *)low,
			                            (size_t)((uintptr_t)t->stack_hi - low));
#endif
		t->st = TH_FRESH;
		t->file = NULL;
		t->line = 0;
		t->cmask = 0;
	}
	sim_thread *first = &e->th[0];
	fiber_init(e, first);
	first->st = TH_RUNNABLE;
	e->cur = first;
	tls_exec = e;
	switch_to(&e->host_sp, &e->host_fake_stack, false, first->sp, first->stack_lo,
	          (size_t)(first->stack_hi - first->stack_lo));
	tls_exec = NULL;
#if CUSIM_ASAN
	for (unsigned i = 0; i < e->n_svars; i++)
		ASAN_POISON_MEMORY_REGION(e->smem + e->svars[i].off, e->svars[i].size);
	if (e->dyn_placed && e->dyn_bytes > 0)
		ASAN_POISON_MEMORY_REGION(e->smem + e->dyn_off, e->dyn_bytes);
#endif
}

void
run_kernel(const kernel_base *k, dim3 grid, dim3 block, size_t smem)
{
	exec *e = executor();

	if (cost_skip)
		return;
	if (cfg().trace)
		note("launch %s grid (%u,%u,%u) block (%u,%u,%u) smem %zu", k->name, grid.x, grid.y,
		     grid.z, block.x, block.y, block.z, smem);
	e->k = k;
	e->grid = grid;
	e->block = block;
	e->n_threads = block.x * block.y * block.z;
	e->n_warps = (e->n_threads + 31) / 32;
	e->dyn_bytes = smem;
	e->checks = cfg().checks;
	e->cost = cfg().cost;
	e->param_lo = (uintptr_t)k;
	e->param_hi = (uintptr_t)k + k->bytes();
	for (uint32_t i = 0; i < e->n_threads; i++) {
		sim_thread *t = &e->th[i];
		t->linear = i;
		t->tid = uint3{i % block.x, i / block.x % block.y, i / (block.x * block.y)};
		t->warp = i / 32;
		t->lane = i % 32;
		t->st = TH_EXITED;
	}
	if (e->cost)
		cost_launch_begin(e, smem);
	for (uint32_t z = 0; z < grid.z && sticky_error() == cudaSuccess; z++)
		for (uint32_t y = 0; y < grid.y && sticky_error() == cudaSuccess; y++)
			for (uint32_t x = 0; x < grid.x && sticky_error() == cudaSuccess; x++)
				run_block(e, uint3{x, y, z});
	if (e->cost)
		cost_launch_end(e);
	e->k = NULL;
}

bool
in_kernel(void)
{
	return tls_exec != NULL;
}

const char *
current_kernel(char *buf, size_t len)
{
	exec *e = tls_exec;

	if (e == NULL || e->cur == NULL) {
		snprintf(buf, len, "host code");
		return buf;
	}
	snprintf(buf, len,
	         "kernel %s, block (%u,%u,%u) of (%u,%u,%u), thread (%u,%u,%u) of (%u,%u,%u)",
	         e->k->name, e->bidx.x, e->bidx.y, e->bidx.z, e->grid.x, e->grid.y, e->grid.z,
	         e->cur->tid.x, e->cur->tid.y, e->cur->tid.z, e->block.x, e->block.y, e->block.z);
	return buf;
}

/* ---- built-in variables ---- */

static exec *
need_kernel(const char *what)
{
	exec *e = tls_exec;

	if (e == NULL) {
		fprintf(stderr, "cusim: %s used outside a kernel\n", what);
		abort();
	}
	return e;
}

uint3
thread_idx(void)
{
	return need_kernel("threadIdx")->cur->tid;
}

uint3
block_idx(void)
{
	return need_kernel("blockIdx")->bidx;
}

dim3
block_dim(void)
{
	return need_kernel("blockDim")->block;
}

dim3
grid_dim(void)
{
	return need_kernel("gridDim")->grid;
}

/* ---- barriers ---- */

static int
barrier(int op, int pred, const char *file, int line)
{
	exec *e = need_kernel("__syncthreads");
	sim_thread *t = e->cur;
	warp_state *w = &e->warps[t->warp];

	if (w->wanted & (1u << t->lane))
		lane_fault(e,
		           "__syncthreads while lanes of its warp wait for this one at a warp "
		           "collective (deadlock)",
		           w->waiting, file, line);
	t->st = TH_BARRIER;
	t->file = file;
	t->line = line;
	t->bop = op;
	t->bpred = pred != 0;
	w->barrier |= 1u << t->lane;
	e->n_barrier++;
	if (e->n_barrier + e->n_exited == e->n_threads)
		release_barrier(e);
	else
		schedule(e, false);
	return t->bres;
}

void
syncthreads(const char *file, int line)
{
	(void)barrier(0, 0, file, line);
}

int
syncthreads_op(int op, int pred, const char *file, int line)
{
	return barrier(op, pred, file, line);
}

/* ---- warp collectives ---- */

static const char *
coll_name(coll_kind k)
{
	switch (k) {
	case COLL_SHFL_IDX:
		return "__shfl_sync";
	case COLL_SHFL_UP:
		return "__shfl_up_sync";
	case COLL_SHFL_DOWN:
		return "__shfl_down_sync";
	case COLL_SHFL_XOR:
		return "__shfl_xor_sync";
	case COLL_BALLOT:
		return "__ballot_sync";
	case COLL_ANY:
		return "__any_sync";
	case COLL_ALL:
		return "__all_sync";
	case COLL_SYNCWARP:
		return "__syncwarp";
	case COLL_REDUCE_ADD:
		return "__reduce_add_sync";
	case COLL_MATCH_ANY:
		return "__match_any_sync";
	}
	return "?";
}

/* The source lane of a shuffle by @lane (itself when the source is outside its segment). */
static uint32_t
shfl_src(const sim_thread *t)
{
	uint32_t lane = t->lane, w = (uint32_t)t->cwidth, seg = lane & ~(w - 1);
	int a = t->carg;

	switch (t->ckind) {
	case COLL_SHFL_IDX:
		return seg + ((uint32_t)a & (w - 1));
	case COLL_SHFL_UP:
		return (lane & (w - 1)) < (uint32_t)a ? lane : lane - (uint32_t)a;
	case COLL_SHFL_DOWN:
		return (lane & (w - 1)) + (uint32_t)a >= w ? lane : lane + (uint32_t)a;
	case COLL_SHFL_XOR: {
		uint32_t s = lane ^ (uint32_t)a;
		return (s & ~(w - 1)) == seg ? s : lane;
	}
	default:
		return lane;
	}
}

/* Every lane of pending group @gi of warp @w has arrived: their results. */
static void
complete(exec *e, uint32_t w, unsigned gi)
{
	sim_thread *lanes = &e->th[32 * w];
	warp_state *ws = &e->warps[w];
	coll_group g = ws->groups[gi];
	uint32_t mask = g.mask;
	uint64_t ballot = 0, sum = 0;

	ws->groups[gi] = ws->groups[--ws->n_groups];
	counts.collectives++;
	if (g.kind == COLL_BALLOT || g.kind == COLL_ANY || g.kind == COLL_ALL ||
	    g.kind == COLL_REDUCE_ADD)
		for (uint32_t m = mask; m; m &= m - 1) {
			uint32_t l = (uint32_t)__builtin_ctz(m);
			ballot |= (uint64_t)(lanes[l].cval != 0) << l;
			sum += (uint32_t)lanes[l].cval;
		}
	for (uint32_t m = mask; m; m &= m - 1) {
		uint32_t l = (uint32_t)__builtin_ctz(m);
		sim_thread *t = &lanes[l];
		switch (g.kind) {
		case COLL_SHFL_IDX:
		case COLL_SHFL_UP:
		case COLL_SHFL_DOWN:
		case COLL_SHFL_XOR: {
			uint32_t src = shfl_src(t);
			if (!(mask & (1u << src))) {
				e->cur = t;
				lane_fault(
				        e,
				        "a shuffle reads a lane its mask does not name (the value is "
				        "undefined)",
				        1u << src, t->file, t->line);
			}
			t->cres = lanes[src].cval;
			break;
		}
		case COLL_BALLOT:
			t->cres = ballot;
			break;
		case COLL_ANY:
			t->cres = ballot != 0;
			break;
		case COLL_ALL:
			t->cres = ballot == mask;
			break;
		case COLL_REDUCE_ADD:
			t->cres = (uint32_t)sum;
			break;
		case COLL_MATCH_ANY: {
			uint64_t r = 0;
			for (uint32_t k = mask; k; k &= k - 1) {
				uint32_t j = (uint32_t)__builtin_ctz(k);
				r |= (uint64_t)(lanes[j].cval == t->cval) << j;
			}
			t->cres = r;
			break;
		}
		case COLL_SYNCWARP:
			t->cres = 0;
			break;
		}
		if (t != e->cur)
			t->st = TH_RUNNABLE;
	}
	ws->waiting &= ~mask;
	ws->wanted = 0;
	for (unsigned i = 0; i < ws->n_groups; i++)
		ws->wanted |= ws->groups[i].mask;
	if (g.kind == COLL_SYNCWARP && (mask | ws->exited) == 0xffffffffu)
		ws->gen++;
}

/*
 * Why @t (a lane of @ws) cannot join @kind with @mask: a fault. The rules: a
 * collective names only lanes that exist, have not exited, include the
 * caller and are not at __syncthreads; lanes of one collective agree on its
 * kind, mask and width; two collectives whose lanes wait for each other
 * deadlock. (Otherwise several may be pending, even naming the same lanes:
 * those waiting at one may reach the other next.)
 */
static __attribute__((noinline)) bool
collective_misuse(exec *e, const sim_thread *t, const warp_state *ws, coll_kind kind, uint32_t mask,
                  int width, const char *file, int line)
{
	uint32_t bit = 1u << t->lane;
	char what[240];

	if (!(mask & bit)) {
		snprintf(what, sizeof(what),
		         "%s with a mask that does not name the calling lane %u", coll_name(kind),
		         t->lane);
		lane_fault(e, what, mask, file, line);
		return true;
	}
	if (width <= 0 || width > 32 || (width & (width - 1)) != 0) {
		snprintf(what, sizeof(what), "%s with width %d (a power of 2 up to 32)",
		         coll_name(kind), width);
		lane_fault(e, what, mask, file, line);
		return true;
	}
	if (mask & ws->exited) {
		snprintf(what, sizeof(what),
		         "%s names lanes that have exited or are not in the block",
		         coll_name(kind));
		lane_fault(e, what, mask & ws->exited, file, line);
		return true;
	}
	if (mask & ws->barrier) {
		snprintf(what, sizeof(what), "%s names lanes that wait at __syncthreads (deadlock)",
		         coll_name(kind));
		lane_fault(e, what, mask & ws->barrier, file, line);
		return true;
	}
	for (unsigned i = 0; i < ws->n_groups; i++) {
		const coll_group *g = &ws->groups[i];
		bool same = g->kind == kind && g->mask == mask && g->width == width;
		if (same || !(g->mask & mask))
			continue;
		const sim_thread *o = &e->th[32 * t->warp + (uint32_t)__builtin_ctz(g->arrived)];
		if ((g->mask & bit) && (g->arrived & mask)) {
			snprintf(
			        what, sizeof(what),
			        "%s (mask 0x%08x) while lane %u, which it names, waits for this one at "
			        "%s (mask 0x%08x) at %s:%d (deadlock)",
			        coll_name(kind), mask, o->lane, coll_name(o->ckind), g->mask,
			        o->file, o->line);
			lane_fault(e, what, mask, file, line);
			return true;
		}
		/* else one waits for the other, which may come there next */
	}
	return false;
}

uint64_t
collective(coll_kind kind, unsigned mask, uint64_t value, unsigned size, int arg, int width,
           const char *file, int line)
{
	exec *e = tls_exec;

	if (__builtin_expect(e == NULL, 0))
		e = need_kernel(coll_name(kind));
	sim_thread *t = e->cur;
	warp_state *ws = &e->warps[t->warp];
	uint32_t bit = 1u << t->lane;
	unsigned gi = 0;

	(void)size;
	/* the usual: the warp's one pending collective is this one, or there is none */
	if (__builtin_expect(!(mask & bit) || (unsigned)(width - 1) > 31u ||
	                             (width & (width - 1)) || (mask & (ws->exited | ws->barrier)) ||
	                             ws->n_groups > 1 ||
	                             (ws->n_groups == 1 &&
	                              (ws->groups[0].kind != kind || ws->groups[0].mask != mask ||
	                               ws->groups[0].width != width)),
	                     0)) {
		if (collective_misuse(e, t, ws, kind, mask, width, file, line))
			return 0; /* sticky mode: the block goes on, its results are void */
		for (gi = 0; gi < ws->n_groups; gi++)
			if (ws->groups[gi].kind == kind && ws->groups[gi].mask == mask &&
			    ws->groups[gi].width == width)
				break;
	}
	if (gi == ws->n_groups) {
		ws->groups[gi] = coll_group{kind, width, mask, 0};
		ws->n_groups++;
		ws->wanted |= mask;
	}
	t->ckind = kind;
	t->cmask = mask;
	t->cval = value;
	t->carg = arg;
	t->cwidth = width;
	t->file = file;
	t->line = line;
	ws->waiting |= bit;
	ws->groups[gi].arrived |= bit;
	if (ws->groups[gi].arrived == mask) {
		complete(e, t->warp, gi);
		return t->cres;
	}
	t->st = TH_COLLECTIVE;
	schedule(e, false);
	return t->cres;
}

unsigned
active_mask(void)
{
	exec *e = need_kernel("__activemask");
	/* fibers have no convergence: the lanes that have not exited */
	return ~e->warps[e->cur->warp].exited;
}

void
threadfence(void)
{
	__atomic_thread_fence(__ATOMIC_SEQ_CST);
}

/* ---- shared memory ---- */

void *
shared_alloc(const void *tag, size_t size, size_t align, const char *name)
{
	exec *e = need_kernel("__shared__");

	for (unsigned i = 0; i < e->n_svars; i++)
		if (e->svars[i].tag == tag)
			return e->smem + e->svars[i].off;
	if (!e->dyn_placed) {
		e->dyn_off = 0;
		e->dyn_placed = true;
		e->smem_static = e->dyn_bytes + SMEM_GAP;
	}
	if (align < 16)
		align = 16;
	size_t off = (e->smem_static + align - 1) & ~(align - 1);
	if (e->n_svars == MAX_SVARS || off + size - (e->dyn_bytes + SMEM_GAP) > SMEM_STATIC_MAX ||
	    off + size > SMEM_CAP) {
		fault(cudaErrorLaunchOutOfResources,
		      "__shared__ variables of more than %zu bytes (or %u of them) in one block",
		      SMEM_STATIC_MAX, MAX_SVARS);
		abort();
	}
	e->svars[e->n_svars++] = svar{tag, name, (uint32_t)off, (uint32_t)size};
	e->smem_static = off + size + SMEM_GAP;
#if CUSIM_ASAN
	ASAN_UNPOISON_MEMORY_REGION(e->smem + off, size);
#endif
	memset(e->smem + off, 0xff, size); /* uninitialized: NaN, -1 */
	return e->smem + off;
}

void *
shared_dyn(size_t align)
{
	exec *e = need_kernel("extern __shared__");

	(void)align; /* offset 0 of the arena: aligned to its page */
	if (!e->dyn_placed) {
		e->dyn_off = 0;
		e->dyn_placed = true;
		e->smem_static = e->dyn_bytes + SMEM_GAP;
#if CUSIM_ASAN
		ASAN_UNPOISON_MEMORY_REGION(e->smem, e->dyn_bytes);
#endif
		memset(e->smem, 0xff, e->dyn_bytes);
	}
	return e->smem + e->dyn_off;
}

} // namespace cusim

/* ---- fibers start here ---- */
extern "C" void
cusim_fiber_main(cusim::exec *e)
{
#if CUSIM_ASAN
	__sanitizer_finish_switch_fiber(NULL, NULL, NULL);
#endif
	cusim::sim_thread *t = e->cur;
	e->k->run_thread();
	/* the thread's end */
	cusim::warp_state *w = &e->warps[t->warp];
	uint32_t bit = 1u << t->lane;
	t->st = cusim::TH_EXITED;
	e->n_exited++;
	w->exited |= bit;
	if (w->wanted & bit) {
		char what[] = "a lane exits while lanes of its warp wait for it at a collective";
		cusim::fault(cudaErrorIllegalInstruction, "%s (warp %u, lanes 0x%08x waiting)",
		             what, t->warp, w->waiting);
		abort();
	}
	if (e->n_barrier > 0 && e->n_barrier + e->n_exited == e->n_threads)
		cusim::release_barrier(e);
	cusim::schedule(e, true);
	__builtin_unreachable();
}

/* ---- atomics: an atomic access (checked as such), then the operation ---- */
namespace
{
template <typename T, typename F>
T
rmw(T *p, F f)
{
	cusim::check_access(p, sizeof(T), cusim::ACC_WRITE | cusim::ACC_ATOMIC);
	T old;
	memcpy(&old, p, sizeof(T));
	T v = f(old);
	memcpy(p, &v, sizeof(T));
	return old;
}
} // namespace

#define CUSIM_ATOMIC(R, NAME, T, EXPR)                                     \
	R NAME(T *p, T v)                                                  \
	{                                                                  \
		return rmw(p, [v]([[maybe_unused]] T o) { return EXPR; }); \
	}
CUSIM_ATOMIC(int, atomicAdd, int, (int)((unsigned)o + (unsigned)v))
CUSIM_ATOMIC(unsigned, atomicAdd, unsigned, o + v)
CUSIM_ATOMIC(unsigned long long, atomicAdd, unsigned long long, o + v)
CUSIM_ATOMIC(float, atomicAdd, float, o + v)
CUSIM_ATOMIC(double, atomicAdd, double, o + v)
CUSIM_ATOMIC(int, atomicSub, int, (int)((unsigned)o - (unsigned)v))
CUSIM_ATOMIC(unsigned, atomicSub, unsigned, o - v)
CUSIM_ATOMIC(int, atomicExch, int, v)
CUSIM_ATOMIC(unsigned, atomicExch, unsigned, v)
CUSIM_ATOMIC(unsigned long long, atomicExch, unsigned long long, v)
CUSIM_ATOMIC(float, atomicExch, float, v)
CUSIM_ATOMIC(int, atomicMin, int, o < v ? o : v)
CUSIM_ATOMIC(unsigned, atomicMin, unsigned, o < v ? o : v)
CUSIM_ATOMIC(long long, atomicMin, long long, o < v ? o : v)
CUSIM_ATOMIC(unsigned long long, atomicMin, unsigned long long, o < v ? o : v)
CUSIM_ATOMIC(int, atomicMax, int, o > v ? o : v)
CUSIM_ATOMIC(unsigned, atomicMax, unsigned, o > v ? o : v)
CUSIM_ATOMIC(long long, atomicMax, long long, o > v ? o : v)
CUSIM_ATOMIC(unsigned long long, atomicMax, unsigned long long, o > v ? o : v)
CUSIM_ATOMIC(int, atomicAnd, int, o &v)
CUSIM_ATOMIC(unsigned, atomicAnd, unsigned, o &v)
CUSIM_ATOMIC(int, atomicOr, int, o | v)
CUSIM_ATOMIC(unsigned, atomicOr, unsigned, o | v)
CUSIM_ATOMIC(int, atomicXor, int, o ^ v)
CUSIM_ATOMIC(unsigned, atomicXor, unsigned, o ^ v)
CUSIM_ATOMIC(unsigned, atomicInc, unsigned, o >= v ? 0u : o + 1)
CUSIM_ATOMIC(unsigned, atomicDec, unsigned, (o == 0 || o > v) ? v : o - 1)
#undef CUSIM_ATOMIC

#define CUSIM_CAS(T)                                                       \
	T atomicCAS(T *p, T cmp, T v)                                      \
	{                                                                  \
		return rmw(p, [cmp, v](T o) { return o == cmp ? v : o; }); \
	}
CUSIM_CAS(int)
CUSIM_CAS(unsigned)
CUSIM_CAS(unsigned long long)
CUSIM_CAS(unsigned short)
#undef CUSIM_CAS

long long
clock64(void)
{
	struct timespec ts;

	clock_gettime(CLOCK_MONOTONIC, &ts);
	return (long long)ts.tv_sec * 1000000000LL + ts.tv_nsec;
}

const char *
cusim::kernel_name_of(const char *pretty)
{
	const char *k = strstr(pretty, "K = ");
	size_t n;
	char *s;

	if (k == NULL)
		return pretty;
	k += 4;
	if (*k == '&')
		k++;
	n = strlen(k);
	while (n > 0 && (k[n - 1] == ']' || k[n - 1] == ';'))
		n--;
	/* "(anonymous namespace)::" tells nothing */
	const char *anon = "(anonymous namespace)::";
	if (strncmp(k, anon, strlen(anon)) == 0) {
		k += strlen(anon);
		n -= strlen(anon);
	}
	if ((s = (char *)malloc(n + 1)) == NULL)
		return pretty;
	memcpy(s, k, n);
	s[n] = '\0';
	return s;
}
