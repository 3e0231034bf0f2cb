/*
 * devices.c - the device inventory: /proc/meminfo for cpu, NVML through
 * dlopen for GPUs. The few NVML entry points used are declared here from
 * NVML's documented C API, so building needs no driver headers.
 */
#include "devices.h"

#include <dlfcn.h>
#include <stdio.h>
#include <string.h>

#include "base/alloc.h"
#include "base/log.h"
#include "base/meminfo.h"

/* NVML's C API: nvmlReturn_t is an int (0 = NVML_SUCCESS), a device an opaque handle. */
typedef int nvml_ret;
typedef struct nvml_dev *nvml_dev;
struct nvml_memory {
	unsigned long long total, free, used;
};
struct nvml_utilization {
	unsigned int gpu, memory; /* percent of the last sample period */
};
#define NVML_CLOCK_SM        1 /* nvmlClockType_t */
#define NVML_TEMPERATURE_GPU 0 /* nvmlTemperatureSensors_t */

struct nvml_api {
	nvml_ret (*init)(void);
	nvml_ret (*shutdown)(void);
	nvml_ret (*count)(unsigned int *);
	nvml_ret (*handle)(unsigned int, nvml_dev *);
	nvml_ret (*name)(nvml_dev, char *, unsigned int);
	nvml_ret (*memory)(nvml_dev, struct nvml_memory *);
	const char *(*error)(nvml_ret);
	/* optional (NULL when the library lacks one; a device may not support it) */
	nvml_ret (*clock)(nvml_dev, int, unsigned int *);       /* MHz */
	nvml_ret (*temperature)(nvml_dev, int, unsigned int *); /* degrees C */
	nvml_ret (*power)(nvml_dev, unsigned int *);            /* milliwatts */
	nvml_ret (*utilization)(nvml_dev, struct nvml_utilization *);
};

static void
cpu_name(struct device_info *d)
{
	FILE *f = fopen("/proc/cpuinfo", "r");
	char line[256];

	snprintf(d->name, sizeof(d->name), "cpu");
	if (f == NULL)
		return;
	while (fgets(line, sizeof(line), f)) {
		char *colon = strchr(line, ':');
		if (strncmp(line, "model name", 10) != 0 || colon == NULL)
			continue;
		snprintf(d->name, sizeof(d->name), "%.*s", (int)strcspn(colon + 2, "\n"),
		         colon + 2);
		break;
	}
	fclose(f);
}

/* dlsym into a function pointer without a cast between object and function pointers. */
static bool
sym(void *h, const char *name, void *fnptr, size_t size)
{
	void *p = dlsym(h, name);

	if (p == NULL)
		return false;
	memcpy(fnptr, &p, size);
	return true;
}

static bool
load_nvml(struct devices *inv, const char *lib)
{
	void *h = dlopen(lib, RTLD_NOW | RTLD_LOCAL);
	struct nvml_api *api = h ? orch_calloc(1, sizeof(*api)) : NULL;

	if (h == NULL) {
		snprintf(inv->nvml_note, sizeof(inv->nvml_note), "no NVML (%s): cpu only",
		         dlerror());
		return false;
	}
	if (api == NULL) {
		snprintf(inv->nvml_note, sizeof(inv->nvml_note), "out of memory: cpu only");
		dlclose(h);
		return false;
	}
	if (!sym(h, "nvmlInit_v2", &api->init, sizeof(api->init)) ||
	    !sym(h, "nvmlShutdown", &api->shutdown, sizeof(api->shutdown)) ||
	    !sym(h, "nvmlDeviceGetCount_v2", &api->count, sizeof(api->count)) ||
	    !sym(h, "nvmlDeviceGetHandleByIndex_v2", &api->handle, sizeof(api->handle)) ||
	    !sym(h, "nvmlDeviceGetName", &api->name, sizeof(api->name)) ||
	    !sym(h, "nvmlDeviceGetMemoryInfo", &api->memory, sizeof(api->memory)) ||
	    !sym(h, "nvmlErrorString", &api->error, sizeof(api->error))) {
		snprintf(inv->nvml_note, sizeof(inv->nvml_note),
		         "%s lacks an NVML entry point: cpu only", lib);
		orch_free(api);
		dlclose(h);
		return false;
	}
	/* the sensors: optional, each a gauge only where the device answers it */
	if (!sym(h, "nvmlDeviceGetClockInfo", &api->clock, sizeof(api->clock)))
		api->clock = NULL;
	if (!sym(h, "nvmlDeviceGetTemperature", &api->temperature, sizeof(api->temperature)))
		api->temperature = NULL;
	if (!sym(h, "nvmlDeviceGetPowerUsage", &api->power, sizeof(api->power)))
		api->power = NULL;
	if (!sym(h, "nvmlDeviceGetUtilizationRates", &api->utilization, sizeof(api->utilization)))
		api->utilization = NULL;
	nvml_ret r = api->init();
	if (r != 0) {
		snprintf(inv->nvml_note, sizeof(inv->nvml_note), "NVML init: %s: cpu only",
		         api->error(r));
		orch_free(api);
		dlclose(h);
		return false;
	}
	inv->nvml = h;
	inv->api = api;
	return true;
}

void
devices_open(struct devices *inv, const char *nvml_library)
{
	memset(inv, 0, sizeof(*inv));
	snprintf(inv->dev[0].id, sizeof(inv->dev[0].id), "cpu");
	cpu_name(&inv->dev[0]);
	inv->n = 1;
	if (load_nvml(inv, nvml_library)) {
		unsigned int count = 0;
		nvml_ret r = inv->api->count(&count);
		if (r != 0)
			snprintf(inv->nvml_note, sizeof(inv->nvml_note), "NVML device count: %s",
			         inv->api->error(r));
		for (unsigned int i = 0; r == 0 && i < count && inv->n < DEVICES_MAX; i++) {
			struct device_info *d = &inv->dev[inv->n++];
			nvml_dev h;
			snprintf(d->id, sizeof(d->id), "cuda:%u", i);
			snprintf(d->name, sizeof(d->name), "?");
			if (inv->api->handle(i, &h) == 0)
				inv->api->name(h, d->name, sizeof(d->name));
		}
		if (r == 0 && count == 0)
			snprintf(inv->nvml_note, sizeof(inv->nvml_note),
			         "NVML sees no GPU: cpu only");
	}
	devices_refresh(inv, false);
	for (uint32_t i = 0; i < inv->n; i++)
		orch_log(ORCH_LOG_INFO, "device", "id=%s name=\"%s\" total=%llu free=%llu",
		         inv->dev[i].id, inv->dev[i].name, (unsigned long long)inv->dev[i].total,
		         (unsigned long long)inv->dev[i].free);
	if (inv->nvml_note[0])
		orch_log(ORCH_LOG_INFO, "devices", "note=\"%s\"", inv->nvml_note);
}

/* @d's sensors, each where NVML has its entry point and the device answers it. */
static void
read_sensors(const struct nvml_api *api, nvml_dev h, struct device_info *d)
{
	struct nvml_utilization u;
	unsigned int v;

	d->sensors = 0;
	if (api->clock && api->clock(h, NVML_CLOCK_SM, &v) == 0) {
		d->sm_clock_mhz = v;
		d->sensors |= DEV_SENSOR_CLOCK;
	}
	if (api->temperature && api->temperature(h, NVML_TEMPERATURE_GPU, &v) == 0) {
		d->temperature_c = v;
		d->sensors |= DEV_SENSOR_TEMPERATURE;
	}
	if (api->power && api->power(h, &v) == 0) {
		d->power_mw = v;
		d->sensors |= DEV_SENSOR_POWER;
	}
	if (api->utilization && api->utilization(h, &u) == 0) {
		d->utilization_pct = u.gpu;
		d->sensors |= DEV_SENSOR_UTILIZATION;
	}
}

void
devices_refresh(struct devices *inv, bool sensors)
{
	orch_meminfo(&inv->dev[0].total, &inv->dev[0].free);
	for (uint32_t i = 1; inv->nvml && i < inv->n; i++) {
		struct nvml_memory mem;
		nvml_dev h;
		if (inv->api->handle(i - 1, &h) != 0)
			continue;
		if (inv->api->memory(h, &mem) == 0) {
			inv->dev[i].total = mem.total;
			inv->dev[i].free = mem.free;
		}
		if (sensors)
			read_sensors(inv->api, h, &inv->dev[i]);
	}
}

struct device_info *
devices_find(struct devices *inv, const char *id)
{
	for (uint32_t i = 0; i < inv->n; i++)
		if (strcmp(inv->dev[i].id, id) == 0)
			return &inv->dev[i];
	return NULL;
}

void
devices_close(struct devices *inv)
{
	if (inv->nvml) {
		inv->api->shutdown();
		dlclose(inv->nvml);
		orch_free(inv->api);
		inv->nvml = NULL;
		inv->api = NULL;
	}
}
