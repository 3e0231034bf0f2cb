/*
 * memory.cc - device memory, pinned host memory and the copies between
 * them.
 *
 * Design notes
 * - Each device's memory is one reserved range of the process (untouched
 *   pages cost nothing) of ORCH_CUDA_SIM_VRAM bytes plus room for gaps. An
 *   allocation is 256-byte aligned and followed by an unused gap of a
 *   quarter of its size (4 KiB to 16 MiB), so an access that far past its
 *   end is outside every allocation - never silently in the next one, as it
 *   can be on a GPU.
 * - Free memory is counted in allocated bytes rounded up to 256: a request
 *   that does not fit fails with cudaErrorMemoryAllocation, cudaMemGetInfo
 *   reports what is left.
 * - A freed range stays in quarantine (its accesses are reported as a use
 *   after free) until 64 MiB more have been freed, or an allocation needs it.
 * - New allocations are filled with 0xff (a NaN in every float format, -1 in
 *   every signed integer) up to 64 MiB, so reading what was never written
 *   shows; larger ones are left as the kernel gave them (zero). Pinned host
 *   memory is filled with 0xa5.
 * - Under AddressSanitizer the gaps and freed ranges are poisoned, so the
 *   host side (copies) and ASan-instrumented kernels report them too.
 */
#include <deque>
#include <dlfcn.h>
#include <link.h>
#include <map>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/mman.h>

#include "exec.h"

#if defined(__SANITIZE_ADDRESS__)
#include <sanitizer/asan_interface.h>
#define POISON(p, n)   ASAN_POISON_MEMORY_REGION(p, n)
#define UNPOISON(p, n) ASAN_UNPOISON_MEMORY_REGION(p, n)
#else
#define POISON(p, n)   ((void)(p), (void)(n))
#define UNPOISON(p, n) ((void)(p), (void)(n))
#endif

namespace cusim
{
namespace
{

constexpr size_t ALIGN = 256;
constexpr size_t FILL_MAX = 64ull << 20;
constexpr size_t QUARANTINE_BYTES = 64ull << 20;

struct device_mem {
	uintptr_t base;
	size_t reserved;
	uint64_t used;
	std::map<uintptr_t, size_t> free_ranges; /* start -> bytes */
	std::deque<uintptr_t> quarantine;
	size_t quarantined;
};

struct state {
	device_mem dev[8];
	int n_dev;
	std::map<uintptr_t, allocation> allocs; /* by base, every device */
	std::map<uintptr_t, size_t> pinned;     /* by base */
	std::vector<std::pair<uintptr_t, uintptr_t>> images;
};

state &
st(void)
{
	static state *s = new state();
	return *s;
}

size_t
round_up(size_t n, size_t a)
{
	return (n + a - 1) / a * a;
}

/* The bytes an allocation of @size takes: rounded up, and an unused gap after it of a
 * quarter of it (4 KiB to 16 MiB), which an overrun of that length lands in. */
size_t
span_of(size_t size)
{
	size_t acct = round_up(size ? size : 1, ALIGN), gap = acct / 4;

	gap = gap < 4096 ? 4096 : gap > (16u << 20) ? 16u << 20 : round_up(gap, ALIGN);
	return acct + gap;
}

device_mem *
dev_mem(int d)
{
	state &s = st();

	if (s.n_dev == 0) {
		s.n_dev = cfg().devices;
		for (int i = 0; i < s.n_dev; i++) {
			device_mem *m = &s.dev[i];
			size_t want = cfg().vram_bytes;
			m->reserved = want + want / 2 + (256ull << 20); /* room for the gaps */
			void *p = mmap(NULL, m->reserved, PROT_READ | PROT_WRITE,
			               MAP_PRIVATE | MAP_ANONYMOUS | MAP_NORESERVE, -1, 0);
			if (p == MAP_FAILED) {
				fprintf(stderr, "cusim: cannot reserve %zu bytes for device %d\n",
				        m->reserved, i);
				abort();
			}
			m->base = (uintptr_t)p;
			m->free_ranges[m->base] = m->reserved;
		}
	}
	return d >= 0 && d < s.n_dev ? &s.dev[d] : NULL;
}

void
release_range(device_mem *m, uintptr_t a, size_t n)
{
	auto next = m->free_ranges.lower_bound(a);
	if (next != m->free_ranges.end() && a + n == next->first) {
		n += next->second;
		next = m->free_ranges.erase(next);
	}
	if (next != m->free_ranges.begin()) {
		auto prev = std::prev(next);
		if (prev->first + prev->second == a) {
			prev->second += n;
			return;
		}
	}
	m->free_ranges[a] = n;
}

/* Return the oldest quarantined allocation's range to the free list. */
void
unquarantine_one(device_mem *m)
{
	state &s = st();
	uintptr_t base = m->quarantine.front();
	m->quarantine.pop_front();
	auto it = s.allocs.find(base);
	size_t span = span_of(it->second.size);
	m->quarantined -= span;
	/* give the pages back, only those wholly inside the range: madvise works on whole
	 * pages, and the next allocation may start in the last one */
	uintptr_t lo = round_up(base, 4096), hi = (base + span) / 4096 * 4096;
	if (hi > lo && hi - lo >= (1u << 20))
		madvise((void *)lo, hi - lo, MADV_DONTNEED);
	s.allocs.erase(it);
	alloc_gen++;
	release_range(m, base, span);
}

uintptr_t
take_range(device_mem *m, size_t span)
{
	for (;;) {
		for (auto it = m->free_ranges.begin(); it != m->free_ranges.end(); ++it) {
			if (it->second < span)
				continue;
			uintptr_t a = it->first;
			size_t left = it->second - span;
			m->free_ranges.erase(it);
			if (left > 0)
				m->free_ranges[a + span] = left;
			return a;
		}
		if (m->quarantine.empty())
			return 0;
		unquarantine_one(m);
	}
}

int
collect_image(struct dl_phdr_info *info, size_t, void *ctx)
{
	auto *v = (std::vector<std::pair<uintptr_t, uintptr_t>> *)ctx;

	for (int i = 0; i < info->dlpi_phnum; i++) {
		const ElfW(Phdr) *ph = &info->dlpi_phdr[i];
		if (ph->p_type != PT_LOAD)
			continue;
		uintptr_t a = info->dlpi_addr + ph->p_vaddr;
		v->push_back({a, a + ph->p_memsz});
	}
	return 0;
}

} // namespace

uint64_t alloc_gen;

bool
device_span(int d, uintptr_t *base, size_t *reserved)
{
	device_mem *m = dev_mem(d);

	if (m == NULL)
		return false;
	*base = m->base;
	*reserved = m->reserved;
	return true;
}

const allocation *
find_device_alloc(uintptr_t a, bool nearest)
{
	state &s = st();
	auto it = s.allocs.upper_bound(a);

	if (it == s.allocs.begin())
		return NULL;
	--it;
	if (nearest || a < it->second.base + span_of(it->second.size))
		return &it->second;
	return NULL;
}

bool
is_pinned(uintptr_t a, size_t n)
{
	state &s = st();
	auto it = s.pinned.upper_bound(a);

	if (it == s.pinned.begin())
		return false;
	--it;
	return a + n <= it->first + it->second;
}

bool
in_module_image(uintptr_t a, size_t n)
{
	state &s = st();

	for (int pass = 0; pass < 2; pass++) {
		for (auto &r : s.images)
			if (a >= r.first && a + n <= r.second)
				return true;
		if (pass == 0) { /* a module loaded since: look again */
			s.images.clear();
			dl_iterate_phdr(collect_image, &s.images);
		}
	}
	return false;
}

mem_kind
classify(const void *p, size_t n)
{
	uintptr_t a = (uintptr_t)p;
	const allocation *al = find_device_alloc(a, false);

	if (al != NULL)
		return !al->freed && a + n <= al->base + al->size ? MEM_DEVICE : MEM_BAD_DEVICE;
	for (int d = 0; d < st().n_dev; d++)
		if (a - st().dev[d].base < st().dev[d].reserved)
			return MEM_BAD_DEVICE;
	return is_pinned(a, n) ? MEM_PINNED : MEM_PAGEABLE;
}

void
device_memcpy(void *dst, const void *src, size_t n)
{
	if (n > 0)
		memmove(dst, src, n);
}

void
device_memset(void *dst, int value, size_t n)
{
	uintptr_t a = (uintptr_t)dst, lo = round_up(a, 4096), hi = (a + n) / 4096 * 4096;

	/* zeros over whole pages: the pages given back (they read as zero again, and a large
	 * KV pool cleared at load costs no memory until written) */
	if (value == 0 && hi > lo && hi - lo >= (1u << 20) &&
	    madvise((void *)lo, hi - lo, MADV_DONTNEED) == 0) {
		memset(dst, 0, lo - a);
		memset((void *)hi, 0, a + n - hi);
		return;
	}
	memset(dst, value, n);
}

} // namespace cusim

using namespace cusim;

extern "C" cudaError_t
cudaMalloc(void **p, size_t size)
{
	api_lock l;
	cudaError_t e;

	if (p == NULL)
		return set_error(cudaErrorInvalidValue);
	*p = NULL;
	if ((e = sticky_error()) != cudaSuccess || (e = unsafe_call("cudaMalloc")) != cudaSuccess)
		return set_error(e);
	device_mem *m = dev_mem(current_device());
	size_t acct = round_up(size ? size : 1, ALIGN), span = span_of(size);
	if (size > cfg().vram_bytes || m->used + acct > cfg().vram_bytes)
		return set_error(cudaErrorMemoryAllocation);
	uintptr_t a = take_range(m, span);
	if (a == 0)
		return set_error(cudaErrorMemoryAllocation);
	m->used += acct;
	st().allocs[a] = allocation{a, size, current_device(), false};
	alloc_gen++;
	UNPOISON((void *)a, size);
	POISON((void *)(a + size), span - size);
	if (size <= FILL_MAX)
		memset((void *)a, 0xff, size);
	*p = (void *)a;
	return cudaSuccess;
}

extern "C" cudaError_t
cudaFree(void *p)
{
	api_lock l;
	cudaError_t e;

	if (p == NULL)
		return cudaSuccess;
	if ((e = unsafe_call("cudaFree")) != cudaSuccess)
		return set_error(e);
	auto it = st().allocs.find((uintptr_t)p);
	if (it == st().allocs.end() || it->second.freed)
		return set_error(cudaErrorInvalidValue);
	/* no implicit synchronization: CUDA only says it "may" synchronize, so work still
	 * queued that uses this memory finds it freed */
	allocation *al = &it->second;
	device_mem *m = dev_mem(al->dev);
	size_t acct = round_up(al->size ? al->size : 1, ALIGN);
	m->used -= acct;
	al->freed = true;
	alloc_gen++;
	POISON(p, span_of(al->size));
	m->quarantine.push_back(al->base);
	m->quarantined += span_of(al->size);
	while (m->quarantined > QUARANTINE_BYTES && m->quarantine.size() > 1)
		unquarantine_one(m);
	return sticky_error();
}

extern "C" cudaError_t
cudaMemGetInfo(size_t *free_b, size_t *total_b)
{
	api_lock l;
	device_mem *m = dev_mem(current_device());

	if (free_b == NULL || total_b == NULL)
		return set_error(cudaErrorInvalidValue);
	*total_b = cfg().vram_bytes;
	*free_b = cfg().vram_bytes - m->used;
	return sticky_error();
}

extern "C" cudaError_t
cudaHostAlloc(void **p, size_t size, unsigned int flags)
{
	api_lock l;
	cudaError_t e;

	(void)flags;
	if (p == NULL)
		return set_error(cudaErrorInvalidValue);
	*p = NULL;
	if ((e = unsafe_call("cudaMallocHost")) != cudaSuccess)
		return set_error(e);
	void *a = NULL;
	if (posix_memalign(&a, 4096, size ? size : 1) != 0)
		return set_error(cudaErrorMemoryAllocation);
	memset(a, 0xa5, size); /* not zero: what was never written shows */
	st().pinned[(uintptr_t)a] = size;
	*p = a;
	return cudaSuccess;
}

extern "C" cudaError_t
cudaMallocHost(void **p, size_t size)
{
	return cudaHostAlloc(p, size, cudaHostAllocDefault);
}

extern "C" cudaError_t
cudaFreeHost(void *p)
{
	api_lock l;
	cudaError_t e;

	if (p == NULL)
		return cudaSuccess;
	if ((e = unsafe_call("cudaFreeHost")) != cudaSuccess)
		return set_error(e);
	auto it = st().pinned.find((uintptr_t)p);
	if (it == st().pinned.end())
		return set_error(cudaErrorInvalidValue);
	/* no implicit synchronization either: a copy still queued from or to this memory
	 * is a fault when it runs (stream.cc) */
	st().pinned.erase(it);
	free(p);
	return sticky_error();
}

extern "C" cudaError_t
cudaPointerGetAttributes(struct cudaPointerAttributes *a, const void *p)
{
	api_lock l;

	if (a == NULL)
		return set_error(cudaErrorInvalidValue);
	memset(a, 0, sizeof(*a));
	a->device = -2;
	const allocation *al = find_device_alloc((uintptr_t)p, false);
	if (al != NULL && !al->freed && (uintptr_t)p < al->base + (al->size ? al->size : 1)) {
		a->type = cudaMemoryTypeDevice;
		a->device = al->dev;
		a->devicePointer = (void *)p;
	} else if (is_pinned((uintptr_t)p, 1)) {
		a->type = cudaMemoryTypeHost;
		a->device = current_device();
		a->devicePointer = (void *)p;
		a->hostPointer = (void *)p;
	} else {
		a->type = cudaMemoryTypeUnregistered;
	}
	return cudaSuccess;
}
