#pragma once
/*
 * devices.h - orchd's inventory of devices: "cpu" always, and "cuda:N" for
 * each GPU NVML reports. NVML (libnvidia-ml, part of the driver) is loaded
 * with dlopen, so orchd runs where it is absent: then only cpu is listed.
 * cuda:N is NVML's index N, which is PCI bus order; orchd runs workers with
 * CUDA_DEVICE_ORDER=PCI_BUS_ID so CUDA numbers the GPUs the same way.
 */
#include <stdbool.h>
#include <stdint.h>

#define DEVICES_MAX 17 /* cpu + 16 GPUs */

/* A GPU's sensors NVML answered at the last devices_refresh() with @sensors (bits). */
enum {
	DEV_SENSOR_CLOCK = 1u << 0,
	DEV_SENSOR_TEMPERATURE = 1u << 1,
	DEV_SENSOR_POWER = 1u << 2,
	DEV_SENSOR_UTILIZATION = 1u << 3,
};

struct device_info {
	char id[16];          /* "cpu", "cuda:0" */
	char name[96];        /* "NVIDIA H200", or the CPU's model name */
	uint64_t total, free; /* bytes; refreshed by devices_refresh() */
	unsigned sensors;     /* DEV_SENSOR_* read; 0 for cpu and without NVML */
	uint32_t sm_clock_mhz, temperature_c, power_mw, utilization_pct;
};

struct nvml_api;

struct devices {
	struct device_info dev[DEVICES_MAX];
	uint32_t n;
	void *nvml;           /* the dlopen() handle, NULL without NVML */
	struct nvml_api *api; /* its entry points (devices.c), NULL without NVML */
	char nvml_note[160];  /* why there is no GPU, for status and the log */
};

/*
 * devices_open - build the inventory; loads @nvml_library when it can and
 * notes why not otherwise (never an error: cpu is always there). Call
 * devices_close() even then.
 */
void devices_open(struct devices *inv, const char *nvml_library);

/*
 * devices_refresh - read every device's total and free memory now, and with
 * @sensors each GPU's SM clock, temperature, power draw and utilization
 * (those its NVML and the device answer).
 */
void devices_refresh(struct devices *inv, bool sensors);

/* devices_find - the device named @id, or NULL. */
struct device_info *devices_find(struct devices *inv, const char *id);

void devices_close(struct devices *inv);
