/*
 * runtime.cc - the simulated device's configuration, errors and device
 * queries: what the rest of the runtime API needs that is not memory,
 * streams or kernels.
 */
#include <errno.h>
#include <map>
#include <stdarg.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "exec.h"

namespace cusim
{
namespace
{

pthread_mutex_t lock_mutex = [] {
	pthread_mutex_t m;
	pthread_mutexattr_t a;
	pthread_mutexattr_init(&a);
	pthread_mutexattr_settype(&a, PTHREAD_MUTEX_RECURSIVE);
	pthread_mutex_init(&m, &a);
	pthread_mutexattr_destroy(&a);
	return m;
}();

__thread cudaError_t last_error;
cudaError_t sticky;
__thread int cur_device;

uint64_t
parse_size(const char *s, uint64_t dflt)
{
	char *end;
	unsigned long long v;

	if (s == NULL || *s == '\0')
		return dflt;
	errno = 0;
	v = strtoull(s, &end, 10);
	if (errno != 0 || end == s)
		goto bad;
	switch (*end) {
	case 'k':
	case 'K':
		v <<= 10;
		end++;
		break;
	case 'm':
	case 'M':
		v <<= 20;
		end++;
		break;
	case 'g':
	case 'G':
		v <<= 30;
		end++;
		break;
	default:
		break;
	}
	if (*end == 'i' || *end == 'B')
		end++;
	if (*end == 'B')
		end++;
	if (*end != '\0' || v < (1u << 20) || v > (1ull << 40))
		goto bad;
	return v;
bad:
	fprintf(stderr,
	        "cusim: ORCH_CUDA_SIM_VRAM=%s: want a size from 1M to 1024G (e.g. 512M, 4G)\n", s);
	exit(2);
}

config
read_config(void)
{
	config c;
	const char *v;

	c.vram_bytes = parse_size(getenv("ORCH_CUDA_SIM_VRAM"), 4ull << 30);
	v = getenv("ORCH_CUDA_SIM_DEVICES");
	c.devices = v ? atoi(v) : 1;
	if (c.devices < 0 || c.devices > 8) {
		fprintf(stderr, "cusim: ORCH_CUDA_SIM_DEVICES=%s: want 0 to 8\n", v);
		exit(2);
	}
	v = getenv("ORCH_CUDA_SIM_CHECKS");
	c.checks = v == NULL || strcmp(v, "0") != 0;
	v = getenv("ORCH_CUDA_SIM_ON_FAULT");
	c.sticky = v != NULL && strcmp(v, "sticky") == 0;
	if (v != NULL && !c.sticky && strcmp(v, "abort") != 0) {
		fprintf(stderr, "cusim: ORCH_CUDA_SIM_ON_FAULT=%s: want abort or sticky\n", v);
		exit(2);
	}
	v = getenv("ORCH_CUDA_SIM_MATH");
	c.exact_math = v != NULL && strcmp(v, "exact") == 0;
	if (v != NULL && !c.exact_math && strcmp(v, "device") != 0) {
		fprintf(stderr, "cusim: ORCH_CUDA_SIM_MATH=%s: want device or exact\n", v);
		exit(2);
	}
	v = getenv("ORCH_CUDA_SIM_TRACE");
	c.trace = v != NULL && strcmp(v, "0") != 0;
	v = getenv("ORCH_CUDA_SIM_COST");
	c.cost = v != NULL && *v != '\0' && strcmp(v, "0") != 0;
	c.cost_file = c.cost && strcmp(v, "1") != 0 ? v : NULL;
	return c;
}

std::map<const void *, size_t> &
dyn_limits(void)
{
	static auto *m = new std::map<const void *, size_t>();
	return *m;
}

} // namespace

const config &
cfg(void)
{
	static const config c = read_config();
	return c;
}

api_lock::api_lock()
{
	pthread_mutex_lock(&lock_mutex);
}

api_lock::~api_lock()
{
	pthread_mutex_unlock(&lock_mutex);
}

cudaError_t
set_error(cudaError_t e)
{
	if (e != cudaSuccess)
		last_error = e;
	return e;
}

cudaError_t
sticky_error(void)
{
	return __atomic_load_n(&sticky, __ATOMIC_RELAXED);
}

void
note(const char *fmt, ...)
{
	va_list ap;

	fputs("cusim: ", stderr);
	va_start(ap, fmt);
	vfprintf(stderr, fmt, ap);
	va_end(ap);
	fputc('\n', stderr);
}

void
fault(cudaError_t code, const char *fmt, ...)
{
	char where[512], msg[4096];
	va_list ap;

	va_start(ap, fmt);
	vsnprintf(msg, sizeof(msg), fmt, ap);
	va_end(ap);
	fprintf(stderr, "cusim: FAULT (%s) in %s: %s\n", cudaGetErrorName(code),
	        current_kernel(where, sizeof(where)), msg);
	fflush(stderr);
	if (!cfg().sticky)
		abort();
	if (sticky_error() == cudaSuccess)
		__atomic_store_n(&sticky, code, __ATOMIC_RELAXED);
	last_error = code;
}

int
current_device(void)
{
	return cur_device;
}

size_t
max_dyn_smem(const void *fn)
{
	auto it = dyn_limits().find(fn);
	return it == dyn_limits().end() ? SMEM_STATIC_MAX : it->second;
}

void
set_max_dyn_smem(const void *fn, size_t bytes)
{
	dyn_limits()[fn] = bytes;
}

} // namespace cusim

using namespace cusim;

#if defined(__SANITIZE_ADDRESS__)
#include <sanitizer/common_interface_defs.h>
#include <signal.h>
#include <unistd.h>

/*
 * The sanitizer build: say which kernel thread a report came from. ASan
 * calls its death callback before the process goes; a UBSan report ends in
 * abort() (UBSAN_OPTIONS=abort_on_error=1, as the tests set it), where a
 * SIGABRT handler says it, then restores the previous disposition and raises
 * the signal again.
 */
static struct sigaction prev_abrt;
static volatile sig_atomic_t reported;

static void
report_kernel(void)
{
	char where[512], line[600];

	if (reported || !in_kernel())
		return;
	reported = 1;
	int n = snprintf(line, sizeof(line), "cusim: the report above is from %s\n",
	                 current_kernel(where, sizeof(where)));
	if (n > 0 && write(2, line, (size_t)n) < 0)
		reported = 1;
}

static void
on_abort(int sig)
{
	report_kernel();
	sigaction(SIGABRT, &prev_abrt, NULL);
	raise(sig);
}

__attribute__((constructor)) static void
sanitizer_hooks(void)
{
	struct sigaction sa;

	__sanitizer_set_death_callback(report_kernel);
	memset(&sa, 0, sizeof(sa));
	sa.sa_handler = on_abort;
	sigemptyset(&sa.sa_mask);
	sigaction(SIGABRT, &sa, &prev_abrt);
}
#endif

extern "C" cudaError_t
cudaGetLastError(void)
{
	cudaError_t e = last_error;

	last_error = sticky_error();
	return e;
}

extern "C" cudaError_t
cudaPeekAtLastError(void)
{
	return last_error;
}

extern "C" const char *
cudaGetErrorName(cudaError_t e)
{
	switch (e) {
#define N(x)    \
	case x: \
		return #x;
		N(cudaSuccess)
		N(cudaErrorInvalidValue)
		N(cudaErrorMemoryAllocation)
		N(cudaErrorInitializationError)
		N(cudaErrorCudartUnloading)
		N(cudaErrorInvalidConfiguration)
		N(cudaErrorInvalidSymbol)
		N(cudaErrorInvalidHostPointer)
		N(cudaErrorInvalidDevicePointer)
		N(cudaErrorInvalidMemcpyDirection)
		N(cudaErrorInsufficientDriver)
		N(cudaErrorInvalidDeviceFunction)
		N(cudaErrorNoDevice)
		N(cudaErrorInvalidDevice)
		N(cudaErrorNoKernelImageForDevice)
		N(cudaErrorInvalidResourceHandle)
		N(cudaErrorIllegalState)
		N(cudaErrorNotReady)
		N(cudaErrorIllegalAddress)
		N(cudaErrorLaunchOutOfResources)
		N(cudaErrorLaunchTimeout)
		N(cudaErrorAssert)
		N(cudaErrorHostMemoryAlreadyRegistered)
		N(cudaErrorHostMemoryNotRegistered)
		N(cudaErrorIllegalInstruction)
		N(cudaErrorMisalignedAddress)
		N(cudaErrorLaunchFailure)
		N(cudaErrorNotPermitted)
		N(cudaErrorNotSupported)
		N(cudaErrorStreamCaptureUnsupported)
		N(cudaErrorStreamCaptureInvalidated)
		N(cudaErrorStreamCaptureMerge)
		N(cudaErrorStreamCaptureUnmatched)
		N(cudaErrorStreamCaptureUnjoined)
		N(cudaErrorStreamCaptureIsolation)
		N(cudaErrorStreamCaptureImplicit)
		N(cudaErrorCapturedEvent)
		N(cudaErrorStreamCaptureWrongThread)
		N(cudaErrorUnknown)
#undef N
	}
	return "cudaErrorUnrecognized";
}

extern "C" const char *
cudaGetErrorString(cudaError_t e)
{
	switch (e) {
	case cudaSuccess:
		return "no error";
	case cudaErrorInvalidValue:
		return "invalid argument";
	case cudaErrorMemoryAllocation:
		return "out of memory";
	case cudaErrorInvalidConfiguration:
		return "invalid configuration argument";
	case cudaErrorNoDevice:
		return "no CUDA-capable device is detected";
	case cudaErrorInvalidDevice:
		return "invalid device ordinal";
	case cudaErrorInvalidResourceHandle:
		return "invalid resource handle";
	case cudaErrorIllegalState:
		return "the operation cannot be performed in the present state";
	case cudaErrorIllegalAddress:
		return "an illegal memory access was encountered";
	case cudaErrorMisalignedAddress:
		return "misaligned address";
	case cudaErrorLaunchFailure:
		return "unspecified launch failure";
	case cudaErrorLaunchOutOfResources:
		return "too many resources requested for launch";
	case cudaErrorLaunchTimeout:
		return "the launch timed out and was terminated";
	case cudaErrorIllegalInstruction:
		return "an illegal instruction was encountered";
	case cudaErrorStreamCaptureUnsupported:
		return "operation not permitted when stream is capturing";
	case cudaErrorStreamCaptureInvalidated:
		return "operation failed due to a previous error during capture";
	case cudaErrorStreamCaptureImplicit:
		return "operation would make the legacy stream depend on a capturing blocking "
		       "stream";
	case cudaErrorCapturedEvent:
		return "operation not permitted on an event last recorded in a capturing stream";
	case cudaErrorNotSupported:
		return "operation not supported";
	default:
		return cudaGetErrorName(e);
	}
}

extern "C" cudaError_t
cudaRuntimeGetVersion(int *v)
{
	if (v == NULL)
		return set_error(cudaErrorInvalidValue);
	*v = CUDART_VERSION;
	return cudaSuccess;
}

extern "C" cudaError_t
cudaDriverGetVersion(int *v)
{
	if (v == NULL)
		return set_error(cudaErrorInvalidValue);
	*v = CUDART_VERSION;
	return cudaSuccess;
}

extern "C" cudaError_t
cudaGetDeviceCount(int *count)
{
	if (count == NULL)
		return set_error(cudaErrorInvalidValue);
	*count = cfg().devices;
	return cfg().devices == 0 ? set_error(cudaErrorNoDevice) : cudaSuccess;
}

extern "C" cudaError_t
cudaSetDevice(int d)
{
	if (d < 0 || d >= cfg().devices)
		return set_error(cudaErrorInvalidDevice);
	cur_device = d;
	return cudaSuccess;
}

extern "C" cudaError_t
cudaGetDevice(int *d)
{
	if (d == NULL)
		return set_error(cudaErrorInvalidValue);
	*d = cur_device;
	return cudaSuccess;
}

extern "C" cudaError_t
cudaGetDeviceProperties(struct cudaDeviceProp *p, int d)
{
	if (p == NULL)
		return set_error(cudaErrorInvalidValue);
	if (d < 0 || d >= cfg().devices)
		return set_error(cudaErrorInvalidDevice);
	memset(p, 0, sizeof(*p));
	snprintf(p->name, sizeof(p->name), "orch simulated GPU (cusim, sm_90 on the CPU)");
	p->totalGlobalMem = cfg().vram_bytes;
	p->sharedMemPerBlock = SMEM_STATIC_MAX;
	p->sharedMemPerBlockOptin = SMEM_CAP;
	p->sharedMemPerMultiprocessor = 233472;
	p->reservedSharedMemPerBlock = 1024;
	p->regsPerBlock = 65536;
	p->regsPerMultiprocessor = 65536;
	p->warpSize = 32;
	p->memPitch = 0x7fffffff;
	p->maxThreadsPerBlock = MAX_THREADS;
	p->maxThreadsDim[0] = 1024;
	p->maxThreadsDim[1] = 1024;
	p->maxThreadsDim[2] = 64;
	p->maxGridSize[0] = 0x7fffffff;
	p->maxGridSize[1] = 65535;
	p->maxGridSize[2] = 65535;
	p->totalConstMem = 65536;
	p->major = 9;
	p->minor = 0;
	p->textureAlignment = 512;
	p->multiProcessorCount = 132;
	p->canMapHostMemory = 1;
	p->concurrentKernels = 1;
	p->asyncEngineCount = 2;
	p->unifiedAddressing = 1;
	p->memoryBusWidth = 5120;
	p->l2CacheSize = 50 << 20;
	p->maxThreadsPerMultiProcessor = 2048;
	p->managedMemory = 1;
	p->maxBlocksPerMultiProcessor = 32;
	p->pciBusID = d;
	return cudaSuccess;
}

extern "C" cudaError_t
cudaDeviceReset(void)
{
	api_lock l;

	drain_all();
	return cudaSuccess;
}

extern "C" cudaError_t
cudaFuncGetAttributes(struct cudaFuncAttributes *a, const void *fn)
{
	if (a == NULL || fn == NULL)
		return set_error(cudaErrorInvalidDeviceFunction);
	memset(a, 0, sizeof(*a));
	/* registers, local and static shared memory are not known before a run */
	a->maxThreadsPerBlock = MAX_THREADS;
	a->maxDynamicSharedSizeBytes = (int)max_dyn_smem(fn);
	a->ptxVersion = 90;
	a->binaryVersion = 90;
	return cudaSuccess;
}

extern "C" cudaError_t
cudaFuncSetAttribute(const void *fn, enum cudaFuncAttribute attr, int value)
{
	api_lock l;

	if (fn == NULL)
		return set_error(cudaErrorInvalidDeviceFunction);
	if (attr == cudaFuncAttributeMaxDynamicSharedMemorySize) {
		if (value < 0 || (size_t)value > SMEM_CAP)
			return set_error(cudaErrorInvalidValue);
		set_max_dyn_smem(fn, (size_t)value);
	}
	return cudaSuccess;
}

extern "C" cudaError_t
cudaProfilerStart(void)
{
	return cudaSuccess;
}

extern "C" cudaError_t
cudaProfilerStop(void)
{
	return cudaSuccess;
}
