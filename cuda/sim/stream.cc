/*
 * stream.cc - streams, events, graph capture and replay, copies and
 * launches as stream operations.
 *
 * Design notes
 * - An operation runs when the host waits for it (sim.h). Ordering: each
 *   stream in order; an operation of the legacy default stream waits for
 *   everything enqueued before it on the device's blocking streams, and an
 *   operation of a blocking stream for the legacy stream's earlier work
 *   (streams made with cudaStreamNonBlocking take part in neither);
 *   cudaStreamWaitEvent waits for the event's operation.
 * - Copies: to or from pageable host memory, cudaMemcpyAsync behaves as
 *   CUDA documents it (the source is staged before the call returns; a copy
 *   to pageable memory returns when done); with pinned memory or device to
 *   device it is truly deferred, so the host must not touch the buffer
 *   until the copy has run - here, never before the next wait.
 * - A capture records operations by value instead of running them; a
 *   replay runs the recorded kernels with the recorded arguments. Calls a
 *   GPU refuses during a capture are refused here too, and invalidate it:
 *   waiting on the capturing stream, legacy-stream work that would join a
 *   capturing blocking stream, allocation and blocking calls under a global
 *   capture, copies with pageable host memory.
 */
#include <deque>
#include <set>
#include <stdio.h>
#include <string.h>
#include <time.h>
#include <vector>

#include "cusim/cost.h"
#include "exec.h"

struct capture;

struct CUstream_st {
	int dev;
	unsigned flags;
	bool legacy;
	uint64_t last_seq;
	struct item {
		uint64_t seq;
		cusim::op *o;
		std::vector<std::pair<CUstream_st *, uint64_t>> deps;
	};
	std::deque<item> q;
	capture *cap;
};

struct CUevent_st {
	unsigned flags;
	CUstream_st *s;
	uint64_t seq;
	bool recorded, captured, destroyed;
	int refs; /* the handle, and each event operation not yet run */
	double ms;
};

struct CUgraph_st {
	std::vector<cusim::op *> nodes;
};

struct CUgraphExec_st {
	std::vector<cusim::op *> nodes;
	int refs; /* the handle, and each launch not yet run */
};

struct capture {
	CUstream_st *s;
	CUgraph_st *g;
	cudaStreamCaptureMode mode;
	pthread_t thread;
	cudaError_t invalid; /* why it was invalidated, or cudaSuccess */
};

namespace cusim
{
namespace
{

struct state {
	uint64_t seq;
	std::set<CUstream_st *> streams;
	CUstream_st *legacy[8];
	std::vector<capture *> captures;
	std::set<CUevent_st *> events;
	std::set<CUgraph_st *> graphs;
	std::set<CUgraphExec_st *> execs;
};

state &
st(void)
{
	static state *s = new state();
	return *s;
}

CUstream_st *
legacy(int dev)
{
	state &s = st();

	if (s.legacy[dev] == NULL) {
		s.legacy[dev] = new CUstream_st();
		s.legacy[dev]->dev = dev;
		s.legacy[dev]->legacy = true;
	}
	return s.legacy[dev];
}

/* The stream a handle names, or NULL for a handle that is no stream. */
CUstream_st *
resolve(cudaStream_t h)
{
	if (h == NULL || h == cudaStreamLegacy || h == cudaStreamPerThread)
		return legacy(current_device());
	return st().streams.count(h) ? h : NULL;
}

double
now_ms(void)
{
	struct timespec ts;

	clock_gettime(CLOCK_MONOTONIC, &ts);
	return (double)ts.tv_sec * 1e3 + (double)ts.tv_nsec / 1e6;
}

void drain(CUstream_st *s, uint64_t upto);

void
run_op(op *o)
{
	if (sticky_error() == cudaSuccess)
		o->run();
	delete o;
}

void
drain(CUstream_st *s, uint64_t upto)
{
	while (!s->q.empty() && s->q.front().seq <= upto) {
		CUstream_st::item it = std::move(s->q.front());
		s->q.pop_front();
		for (auto &d : it.deps)
			drain(d.first, d.second);
		run_op(it.o);
	}
}

void
invalidate(capture *c, cudaError_t why)
{
	if (c->invalid == cudaSuccess)
		c->invalid = why;
}

/* ---- operations ---- */

struct kernel_op final : op {
	kernel_base *k;
	dim3 grid, block;
	size_t smem;
	kernel_op(kernel_base *kk, dim3 g, dim3 b, size_t s) : k(kk), grid(g), block(b), smem(s)
	{
	}
	~kernel_op() override
	{
		delete k;
	}
	void run() override
	{
		run_kernel(k, grid, block, smem);
	}
	op *clone() const override
	{
		return new kernel_op(k->clone(), grid, block, smem);
	}
	const char *what() const override
	{
		return k->name;
	}
};

/* A copy: device ranges (and pinned host ranges) checked again when it runs. */
struct copy_op final : op {
	void *dst;
	const void *src;
	size_t n;
	std::vector<uint8_t> staged; /* pageable source, copied when enqueued */
	bool dst_dev, src_dev, dst_pinned, src_pinned;
	int value; /* memset: >= 0 */
	void run() override
	{
		const void *from = staged.empty() ? src : staged.data();
		if ((dst_dev && classify(dst, n) != MEM_DEVICE) ||
		    (value < 0 && src_dev && staged.empty() && classify(src, n) != MEM_DEVICE)) {
			fault(cudaErrorIllegalAddress,
			      "%s of %zu bytes (%p <- %p) ran after its device memory was freed "
			      "(cudaFree does not wait for queued work)",
			      value >= 0 ? "cudaMemsetAsync" : "cudaMemcpyAsync", n, dst, src);
			return;
		}
		if ((dst_pinned && !is_pinned((uintptr_t)dst, n)) ||
		    (value < 0 && src_pinned && staged.empty() && !is_pinned((uintptr_t)src, n))) {
			fault(cudaErrorIllegalAddress,
			      "cudaMemcpyAsync of %zu bytes (%p <- %p) ran after its pinned host "
			      "buffer was freed (cudaFreeHost does not wait for queued work)",
			      n, dst, src);
			return;
		}
		if (value >= 0 && dst_dev)
			device_memset(dst, value, n);
		else if (value >= 0)
			memset(dst, value, n);
		else
			device_memcpy(dst, from, n);
		if (value >= 0)
			cost_op("memset", CUSIM_COST_MEMSET, 0, dst_dev ? n : 0, 0, dst_dev ? 0 : n,
			        0, 0);
		else
			cost_op(src_dev && dst_dev ? "memcpy DtoD" : src_dev ? "memcpy DtoH"
			        : dst_dev              ? "memcpy HtoD"
			                               : "memcpy HtoH",
			        CUSIM_COST_MEMCPY, src_dev ? n : 0, dst_dev ? n : 0,
			        src_dev || !dst_dev ? 0 : n, dst_dev || !src_dev ? 0 : n, 0, 0);
	}
	op *clone() const override
	{
		return new copy_op(*this);
	}
	const char *what() const override
	{
		return value >= 0 ? "memset" : "memcpy";
	}
};

struct event_op final : op {
	CUevent_st *ev;
	uint64_t seq;
	explicit event_op(CUevent_st *e, uint64_t s) : ev(e), seq(s)
	{
		ev->refs++;
	}
	~event_op() override
	{
		if (--ev->refs == 0)
			delete ev;
	}
	void run() override
	{
		if (ev->seq == seq)
			ev->ms = now_ms();
	}
	op *clone() const override
	{
		return new event_op(ev, seq);
	}
	const char *what() const override
	{
		return "event";
	}
};

struct nop_op final : op {
	void run() override
	{
	}
	op *clone() const override
	{
		return new nop_op();
	}
	const char *what() const override
	{
		return "wait";
	}
};

struct graph_op final : op {
	CUgraphExec_st *x;
	explicit graph_op(CUgraphExec_st *e) : x(e)
	{
		x->refs++;
	}
	~graph_op() override
	{
		if (--x->refs == 0) {
			for (op *o : x->nodes)
				delete o;
			delete x;
		}
	}
	void run() override
	{
		bool was = cost_in_graph; /* a graph launched inside a graph is its node */
		if (!was)
			cost_op("graph", CUSIM_COST_GRAPH, 0, 0, 0, 0, 0, 0);
		cost_in_graph = true;
		for (op *o : x->nodes)
			if (sticky_error() == cudaSuccess)
				o->run();
		cost_in_graph = was;
	}
	op *clone() const override
	{
		return new graph_op(x);
	}
	const char *what() const override
	{
		return "graph";
	}
};

/* Put @o on @s (deps per the legacy stream's rules); its sequence number. */
uint64_t
push(CUstream_st *s, op *o)
{
	CUstream_st::item it;

	it.seq = ++st().seq;
	it.o = o;
	if (s->legacy) {
		for (CUstream_st *b : st().streams)
			if (b->dev == s->dev && !(b->flags & cudaStreamNonBlocking) &&
			    !b->q.empty())
				it.deps.push_back({b, b->last_seq});
	} else if (!(s->flags & cudaStreamNonBlocking)) {
		CUstream_st *l = legacy(s->dev);
		if (!l->q.empty())
			it.deps.push_back({l, l->last_seq});
	}
	s->last_seq = it.seq;
	s->q.push_back(std::move(it));
	return s->last_seq;
}

cudaError_t
enqueue_on(CUstream_st *s, op *o)
{
	if (s->cap != NULL) {
		if (s->cap->invalid != cudaSuccess) {
			delete o;
			return cudaErrorStreamCaptureInvalidated;
		}
		s->cap->g->nodes.push_back(o);
		return cudaSuccess;
	}
	if (s->legacy)
		for (capture *c : st().captures)
			if (c->s->dev == s->dev && !(c->s->flags & cudaStreamNonBlocking) &&
			    c->mode != cudaStreamCaptureModeRelaxed) {
				invalidate(c, cudaErrorStreamCaptureImplicit);
				delete o;
				return cudaErrorStreamCaptureImplicit;
			}
	push(s, o);
	return cudaSuccess;
}

bool
capturing(const CUstream_st *s)
{
	return s->cap != NULL;
}

cudaError_t
copy(void *dst, const void *src, size_t n, cudaMemcpyKind kind, cudaStream_t h, bool sync,
     const char *what)
{
	api_lock l;
	CUstream_st *s = resolve(h);
	cudaError_t e;

	if (s == NULL)
		return set_error(cudaErrorInvalidResourceHandle);
	if ((e = sticky_error()) != cudaSuccess)
		return set_error(e);
	if (sync && (e = unsafe_call(what)) != cudaSuccess)
		return set_error(e);
	if (n == 0)
		return cudaSuccess;
	if (dst == NULL || src == NULL || (unsigned)kind > cudaMemcpyDefault)
		return set_error(cudaErrorInvalidValue);
	mem_kind dk = classify(dst, n), sk = classify(src, n);
	if (dk == MEM_BAD_DEVICE || sk == MEM_BAD_DEVICE) {
		note("%s of %zu bytes (%p <- %p): the %s range is not inside one live device "
		     "allocation",
		     what, n, dst, src, dk == MEM_BAD_DEVICE ? "destination" : "source");
		return set_error(cudaErrorInvalidValue);
	}
	bool dd = dk == MEM_DEVICE, sd = sk == MEM_DEVICE;
	bool want_dd = kind == cudaMemcpyHostToDevice || kind == cudaMemcpyDeviceToDevice;
	bool want_sd = kind == cudaMemcpyDeviceToHost || kind == cudaMemcpyDeviceToDevice;
	if (kind != cudaMemcpyDefault && (dd != want_dd || sd != want_sd)) {
		note("%s of %zu bytes (%p <- %p): the pointers do not match the copy's kind %d",
		     what, n, dst, src, (int)kind);
		return set_error(cudaErrorInvalidValue);
	}
	bool pageable = (!dd && dk == MEM_PAGEABLE) || (!sd && sk == MEM_PAGEABLE);
	if (capturing(s) && pageable) {
		invalidate(s->cap, cudaErrorStreamCaptureUnsupported);
		note("%s of pageable host memory in a stream capture", what);
		return set_error(cudaErrorStreamCaptureUnsupported);
	}
	copy_op *o = new copy_op();
	o->dst = dst;
	o->src = src;
	o->n = n;
	o->dst_dev = dd;
	o->src_dev = sd;
	o->dst_pinned = dk == MEM_PINNED;
	o->src_pinned = sk == MEM_PINNED;
	o->value = -1;
	if (!sd && sk == MEM_PAGEABLE)
		o->staged.assign((const uint8_t *)src, (const uint8_t *)src + n);
	if ((e = enqueue_on(s, o)) != cudaSuccess)
		return set_error(e);
	if (sync || (!dd && dk == MEM_PAGEABLE))
		drain(s, s->last_seq);
	return sticky_error();
}

cudaError_t
fill(void *p, int value, size_t n, cudaStream_t h, const char *what)
{
	api_lock l;
	CUstream_st *s = resolve(h);
	cudaError_t e;

	if (s == NULL)
		return set_error(cudaErrorInvalidResourceHandle);
	if ((e = sticky_error()) != cudaSuccess)
		return set_error(e);
	if (n == 0)
		return cudaSuccess;
	if (classify(p, n) != MEM_DEVICE) {
		note("%s of %zu bytes at %p: not inside one live device allocation", what, n, p);
		return set_error(cudaErrorInvalidValue);
	}
	copy_op *o = new copy_op();
	o->dst = p;
	o->src = NULL;
	o->n = n;
	o->dst_dev = true;
	o->src_dev = o->dst_pinned = o->src_pinned = false;
	o->value = value & 0xff;
	if ((e = enqueue_on(s, o)) != cudaSuccess)
		return set_error(e);
	return sticky_error();
}

} // namespace

cudaError_t
enqueue(cudaStream_t h, op *o)
{
	CUstream_st *s = resolve(h);

	if (s == NULL) {
		delete o;
		return cudaErrorInvalidResourceHandle;
	}
	return enqueue_on(s, o);
}

cudaError_t
unsafe_call(const char *what)
{
	pthread_t self = pthread_self();

	for (capture *c : st().captures) {
		if (c->mode == cudaStreamCaptureModeRelaxed ||
		    (c->mode == cudaStreamCaptureModeThreadLocal &&
		     !pthread_equal(c->thread, self)))
			continue;
		invalidate(c, cudaErrorStreamCaptureUnsupported);
		note("%s during a stream capture: refused, and the capture is invalidated", what);
		return cudaErrorStreamCaptureUnsupported;
	}
	return cudaSuccess;
}

void
drain_all(void)
{
	for (int d = 0; d < 8; d++)
		if (st().legacy[d] != NULL)
			drain(st().legacy[d], UINT64_MAX);
	/* a copy of the set: a drained operation never adds or removes streams, but be safe */
	std::vector<CUstream_st *> all(st().streams.begin(), st().streams.end());
	for (CUstream_st *s : all)
		drain(s, UINT64_MAX);
}

void
submit(kernel_base *k, dim3 grid, dim3 block, size_t smem, cudaStream_t h)
{
	api_lock l;
	cudaError_t e;
	uint64_t threads = (uint64_t)block.x * block.y * block.z;

	if ((e = sticky_error()) != cudaSuccess) {
		delete k;
		set_error(e);
		return;
	}
	if (grid.x == 0 || grid.y == 0 || grid.z == 0 || grid.x > 0x7fffffffu || grid.y > 65535 ||
	    grid.z > 65535 || block.x == 0 || block.y == 0 || block.z == 0 || block.x > 1024 ||
	    block.y > 1024 || block.z > 64 || threads > MAX_THREADS || smem > max_dyn_smem(k->fn)) {
		note("launch of %s refused: grid (%u,%u,%u), block (%u,%u,%u), %zu bytes of dynamic "
		     "shared memory",
		     k->name, grid.x, grid.y, grid.z, block.x, block.y, block.z, smem);
		delete k;
		set_error(cudaErrorInvalidConfiguration);
		return;
	}
	if ((e = enqueue(h, new kernel_op(k, grid, block, smem))) != cudaSuccess)
		set_error(e);
}

} // namespace cusim

using namespace cusim;

/* ---- copies ---- */

extern "C" cudaError_t
cudaMemcpy(void *dst, const void *src, size_t n, enum cudaMemcpyKind kind)
{
	return copy(dst, src, n, kind, NULL, true, "cudaMemcpy");
}

extern "C" cudaError_t
cudaMemcpyAsync(void *dst, const void *src, size_t n, enum cudaMemcpyKind kind, cudaStream_t s)
{
	return copy(dst, src, n, kind, s, false, "cudaMemcpyAsync");
}

extern "C" cudaError_t
cudaMemset(void *p, int value, size_t n)
{
	return fill(p, value, n, NULL, "cudaMemset");
}

extern "C" cudaError_t
cudaMemsetAsync(void *p, int value, size_t n, cudaStream_t s)
{
	return fill(p, value, n, s, "cudaMemsetAsync");
}

/* ---- streams ---- */

extern "C" cudaError_t
cudaStreamCreateWithFlags(cudaStream_t *ret, unsigned int flags)
{
	api_lock l;

	if (ret == NULL || (flags & ~cudaStreamNonBlocking) != 0)
		return set_error(cudaErrorInvalidValue);
	CUstream_st *s = new CUstream_st();
	s->dev = current_device();
	s->flags = flags;
	st().streams.insert(s);
	*ret = s;
	return cudaSuccess;
}

extern "C" cudaError_t
cudaStreamCreate(cudaStream_t *ret)
{
	return cudaStreamCreateWithFlags(ret, cudaStreamDefault);
}

extern "C" cudaError_t
cudaStreamDestroy(cudaStream_t h)
{
	api_lock l;

	if (h == NULL || !st().streams.count(h))
		return set_error(cudaErrorInvalidResourceHandle);
	if (h->cap != NULL)
		return set_error(cudaErrorStreamCaptureUnmatched);
	/* queued work still runs, as the device would finish it after the call returns */
	drain(h, UINT64_MAX);
	/* nothing waits on it any more: its work is done */
	std::vector<CUstream_st *> all(st().streams.begin(), st().streams.end());
	for (int d = 0; d < 8; d++)
		if (st().legacy[d] != NULL)
			all.push_back(st().legacy[d]);
	for (CUstream_st *s : all)
		for (auto &it : s->q)
			for (size_t i = it.deps.size(); i-- > 0;)
				if (it.deps[i].first == h)
					it.deps.erase(it.deps.begin() + (long)i);
	for (CUevent_st *ev : st().events)
		if (ev->s == h)
			ev->s = NULL;
	st().streams.erase(h);
	delete h;
	return sticky_error();
}

extern "C" cudaError_t
cudaStreamSynchronize(cudaStream_t h)
{
	api_lock l;
	CUstream_st *s = resolve(h);

	if (s == NULL)
		return set_error(cudaErrorInvalidResourceHandle);
	if (capturing(s)) {
		invalidate(s->cap, cudaErrorStreamCaptureUnsupported);
		note("cudaStreamSynchronize on a capturing stream: refused, the capture is "
		     "invalidated");
		return set_error(cudaErrorStreamCaptureUnsupported);
	}
	if (s->legacy) {
		cudaError_t e = unsafe_call("cudaStreamSynchronize(legacy stream)");
		if (e != cudaSuccess)
			return set_error(e);
	}
	drain(s, UINT64_MAX);
	return sticky_error();
}

extern "C" cudaError_t
cudaStreamQuery(cudaStream_t h)
{
	/* the simulated device is done whenever it is asked: the work runs now */
	return cudaStreamSynchronize(h);
}

extern "C" cudaError_t
cudaStreamWaitEvent(cudaStream_t h, cudaEvent_t ev, unsigned int flags)
{
	api_lock l;
	CUstream_st *s = resolve(h);

	(void)flags;
	if (s == NULL || ev == NULL || !st().events.count(ev))
		return set_error(cudaErrorInvalidResourceHandle);
	if (!ev->recorded || ev->captured)
		return cudaSuccess;
	nop_op *o = new nop_op();
	if (capturing(s)) {
		/* the order is the capture's; the recorded node waits for nothing */
		s->cap->g->nodes.push_back(o);
		return cudaSuccess;
	}
	push(s, o);
	s->q.back().deps.push_back({ev->s, ev->seq});
	return cudaSuccess;
}

extern "C" cudaError_t
cudaDeviceSynchronize(void)
{
	api_lock l;
	cudaError_t e;

	if ((e = unsafe_call("cudaDeviceSynchronize")) != cudaSuccess)
		return set_error(e);
	drain_all();
	return sticky_error();
}

/* ---- events ---- */

extern "C" cudaError_t
cudaEventCreateWithFlags(cudaEvent_t *ret, unsigned int flags)
{
	api_lock l;

	if (ret == NULL)
		return set_error(cudaErrorInvalidValue);
	CUevent_st *e = new CUevent_st();
	e->flags = flags;
	e->refs = 1;
	st().events.insert(e);
	*ret = e;
	return cudaSuccess;
}

extern "C" cudaError_t
cudaEventCreate(cudaEvent_t *ret)
{
	return cudaEventCreateWithFlags(ret, cudaEventDefault);
}

extern "C" cudaError_t
cudaEventDestroy(cudaEvent_t ev)
{
	api_lock l;

	if (ev == NULL || !st().events.count(ev))
		return set_error(cudaErrorInvalidResourceHandle);
	st().events.erase(ev);
	ev->destroyed = true;
	if (--ev->refs == 0)
		delete ev;
	return cudaSuccess;
}

extern "C" cudaError_t
cudaEventRecord(cudaEvent_t ev, cudaStream_t h)
{
	api_lock l;
	CUstream_st *s = resolve(h);
	cudaError_t e;

	if (s == NULL || ev == NULL || !st().events.count(ev))
		return set_error(cudaErrorInvalidResourceHandle);
	if (capturing(s)) {
		ev->captured = true;
		ev->recorded = true;
		return cudaSuccess;
	}
	event_op *o = new event_op(ev, st().seq + 1);
	if ((e = enqueue_on(s, o)) != cudaSuccess)
		return set_error(e);
	ev->s = s;
	ev->seq = s->last_seq;
	ev->recorded = true;
	ev->captured = false;
	return cudaSuccess;
}

extern "C" cudaError_t
cudaEventSynchronize(cudaEvent_t ev)
{
	api_lock l;

	if (ev == NULL || !st().events.count(ev))
		return set_error(cudaErrorInvalidResourceHandle);
	if (ev->captured)
		return set_error(cudaErrorCapturedEvent);
	if (ev->recorded && ev->s != NULL)
		drain(ev->s, ev->seq);
	return sticky_error();
}

extern "C" cudaError_t
cudaEventQuery(cudaEvent_t ev)
{
	return cudaEventSynchronize(ev);
}

extern "C" cudaError_t
cudaEventElapsedTime(float *ms, cudaEvent_t a, cudaEvent_t b)
{
	api_lock l;

	if (ms == NULL || a == NULL || b == NULL)
		return set_error(cudaErrorInvalidValue);
	if ((a->flags | b->flags) & cudaEventDisableTiming)
		return set_error(cudaErrorInvalidResourceHandle);
	if (!a->recorded || !b->recorded)
		return set_error(cudaErrorInvalidResourceHandle);
	*ms = (float)(b->ms - a->ms);
	return cudaSuccess;
}

/* ---- graphs ---- */

extern "C" cudaError_t
cudaStreamBeginCapture(cudaStream_t h, enum cudaStreamCaptureMode mode)
{
	api_lock l;
	CUstream_st *s = resolve(h);

	if (s == NULL)
		return set_error(cudaErrorInvalidResourceHandle);
	if (s->legacy)
		return set_error(cudaErrorStreamCaptureUnsupported);
	if (s->cap != NULL)
		return set_error(cudaErrorIllegalState);
	capture *c = new capture();
	c->s = s;
	c->g = new CUgraph_st();
	c->mode = mode;
	c->thread = pthread_self();
	c->invalid = cudaSuccess;
	s->cap = c;
	st().captures.push_back(c);
	return cudaSuccess;
}

extern "C" cudaError_t
cudaStreamEndCapture(cudaStream_t h, cudaGraph_t *ret)
{
	api_lock l;
	CUstream_st *s = resolve(h);

	if (ret != NULL)
		*ret = NULL;
	if (s == NULL)
		return set_error(cudaErrorInvalidResourceHandle);
	if (s->cap == NULL)
		return set_error(cudaErrorIllegalState);
	capture *c = s->cap;
	s->cap = NULL;
	for (size_t i = 0; i < st().captures.size(); i++)
		if (st().captures[i] == c)
			st().captures.erase(st().captures.begin() + (long)i);
	cudaError_t why = c->invalid;
	CUgraph_st *g = c->g;
	delete c;
	if (why != cudaSuccess || ret == NULL) {
		for (op *o : g->nodes)
			delete o;
		delete g;
		return set_error(why != cudaSuccess ? cudaErrorStreamCaptureInvalidated
		                                    : cudaErrorInvalidValue);
	}
	st().graphs.insert(g);
	*ret = g;
	return cudaSuccess;
}

extern "C" cudaError_t
cudaStreamIsCapturing(cudaStream_t h, enum cudaStreamCaptureStatus *status)
{
	api_lock l;
	CUstream_st *s = resolve(h);

	if (s == NULL || status == NULL)
		return set_error(cudaErrorInvalidValue);
	*status = s->cap == NULL                   ? cudaStreamCaptureStatusNone
	          : s->cap->invalid != cudaSuccess ? cudaStreamCaptureStatusInvalidated
	                                           : cudaStreamCaptureStatusActive;
	return cudaSuccess;
}

extern "C" cudaError_t
cudaGraphInstantiate(cudaGraphExec_t *ret, cudaGraph_t g, unsigned long long flags)
{
	api_lock l;

	(void)flags;
	if (ret == NULL || g == NULL || !st().graphs.count(g))
		return set_error(cudaErrorInvalidValue);
	CUgraphExec_st *x = new CUgraphExec_st();
	x->refs = 1;
	for (op *o : g->nodes)
		x->nodes.push_back(o->clone());
	st().execs.insert(x);
	*ret = x;
	return cudaSuccess;
}

extern "C" cudaError_t
cudaGraphLaunch(cudaGraphExec_t x, cudaStream_t h)
{
	api_lock l;
	cudaError_t e;

	if (x == NULL || !st().execs.count(x))
		return set_error(cudaErrorInvalidResourceHandle);
	if ((e = sticky_error()) != cudaSuccess)
		return set_error(e);
	if ((e = enqueue(h, new graph_op(x))) != cudaSuccess)
		return set_error(e);
	return cudaSuccess;
}

extern "C" cudaError_t
cudaGraphExecDestroy(cudaGraphExec_t x)
{
	api_lock l;

	if (x == NULL || !st().execs.count(x))
		return set_error(cudaErrorInvalidResourceHandle);
	st().execs.erase(x);
	if (--x->refs == 0) {
		for (op *o : x->nodes)
			delete o;
		delete x;
	}
	return cudaSuccess;
}

extern "C" cudaError_t
cudaGraphDestroy(cudaGraph_t g)
{
	api_lock l;

	if (g == NULL || !st().graphs.count(g))
		return set_error(cudaErrorInvalidResourceHandle);
	st().graphs.erase(g);
	for (op *o : g->nodes)
		delete o;
	delete g;
	return cudaSuccess;
}

extern "C" cudaError_t
cudaGraphGetNodes(cudaGraph_t g, cudaGraphNode_t *nodes, size_t *n)
{
	api_lock l;

	if (g == NULL || n == NULL || !st().graphs.count(g))
		return set_error(cudaErrorInvalidValue);
	if (nodes != NULL)
		for (size_t i = 0; i < *n && i < g->nodes.size(); i++)
			nodes[i] = (cudaGraphNode_t)(uintptr_t)(i + 1);
	*n = g->nodes.size();
	return cudaSuccess;
}
