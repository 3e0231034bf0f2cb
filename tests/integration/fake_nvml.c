/*
 * fake_nvml.c - a stand-in for libnvidia-ml that orchd's tests load through
 * the nvml_library key: the GPUs of $FAKE_NVML, "NAME:TOTAL_MIB:FREE_MIB"
 * separated by commas (unset or empty: NVML finds no GPU; "fail": init
 * fails). Only the entry points orchd's inventory uses (supervisor/orchd/
 * leaf/devices.c), with NVML's documented signatures. GPU i's sensors read
 * 1500 + i MHz (SM clock), 40 + i degrees C, 250000 + i mW and 30 + i %
 * busy; with $FAKE_NVML_NO_SENSORS set they are not supported.
 */
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#define MAX_GPUS 16

struct fake_memory {
	unsigned long long total, free, used;
};

struct fake_gpu {
	char name[64];
	unsigned long long total, free;
};

static struct fake_gpu gpus[MAX_GPUS];
static unsigned int n_gpus;

int nvmlInit_v2(void);
int nvmlShutdown(void);
int nvmlDeviceGetCount_v2(unsigned int *n);
int nvmlDeviceGetHandleByIndex_v2(unsigned int i, void **h);
int nvmlDeviceGetName(void *h, char *name, unsigned int len);
int nvmlDeviceGetMemoryInfo(void *h, struct fake_memory *m);
const char *nvmlErrorString(int r);
int nvmlDeviceGetClockInfo(void *h, int type, unsigned int *mhz);
int nvmlDeviceGetTemperature(void *h, int sensor, unsigned int *c);
int nvmlDeviceGetPowerUsage(void *h, unsigned int *mw);
int nvmlDeviceGetUtilizationRates(void *h, unsigned int *rates);

int
nvmlInit_v2(void)
{
	const char *spec = getenv("FAKE_NVML");
	char buf[1024];

	n_gpus = 0;
	if (spec && strcmp(spec, "fail") == 0)
		return 9; /* NVML_ERROR_DRIVER_NOT_LOADED */
	snprintf(buf, sizeof(buf), "%s", spec ? spec : "");
	for (char *save = NULL, *g = strtok_r(buf, ",", &save); g && n_gpus < MAX_GPUS;
	     g = strtok_r(NULL, ",", &save)) {
		struct fake_gpu *x = &gpus[n_gpus];
		unsigned long long t, f;
		if (sscanf(g, "%63[^:]:%llu:%llu", x->name, &t, &f) != 3)
			continue;
		x->total = t << 20;
		x->free = f << 20;
		n_gpus++;
	}
	return 0;
}

int
nvmlShutdown(void)
{
	return 0;
}

int
nvmlDeviceGetCount_v2(unsigned int *n)
{
	*n = n_gpus;
	return 0;
}

int
nvmlDeviceGetHandleByIndex_v2(unsigned int i, void **h)
{
	if (i >= n_gpus)
		return 2; /* NVML_ERROR_INVALID_ARGUMENT */
	*h = &gpus[i];
	return 0;
}

int
nvmlDeviceGetName(void *h, char *name, unsigned int len)
{
	snprintf(name, len, "%s", ((struct fake_gpu *)h)->name);
	return 0;
}

int
nvmlDeviceGetMemoryInfo(void *h, struct fake_memory *m)
{
	const struct fake_gpu *g = h;

	m->total = g->total;
	m->free = g->free;
	m->used = g->total - g->free;
	return 0;
}

/* GPU @h's index, or -1 when its sensors are "not supported" (NVML_ERROR_NOT_SUPPORTED 3). */
static int
sensor_index(void *h)
{
	if (getenv("FAKE_NVML_NO_SENSORS") != NULL)
		return -1;
	return (int)((struct fake_gpu *)h - gpus);
}

int
nvmlDeviceGetClockInfo(void *h, int type, unsigned int *mhz)
{
	int i = sensor_index(h);

	if (i < 0 || type != 1) /* NVML_CLOCK_SM only */
		return 3;
	*mhz = 1500u + (unsigned)i;
	return 0;
}

int
nvmlDeviceGetTemperature(void *h, int sensor, unsigned int *c)
{
	int i = sensor_index(h);

	if (i < 0 || sensor != 0) /* NVML_TEMPERATURE_GPU */
		return 3;
	*c = 40u + (unsigned)i;
	return 0;
}

int
nvmlDeviceGetPowerUsage(void *h, unsigned int *mw)
{
	int i = sensor_index(h);

	if (i < 0)
		return 3;
	*mw = 250000u + (unsigned)i;
	return 0;
}

int
nvmlDeviceGetUtilizationRates(void *h, unsigned int *rates)
{
	int i = sensor_index(h);

	if (i < 0)
		return 3;
	rates[0] = 30u + (unsigned)i; /* gpu */
	rates[1] = 10u;               /* memory */
	return 0;
}

const char *
nvmlErrorString(int r)
{
	return r == 9 ? "Driver Not Loaded" : "Unknown Error";
}
