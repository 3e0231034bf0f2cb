/* check.c - orchd --check-config: the files and devices a configuration names (check.h). */
#include "check.h"

#include <stdio.h>
#include <string.h>

#include "base/err.h"
#include "gguf/gguf.h"
#include "model_pull.h"
#include "orchd.h"

/* One model: its file, then its devices; the number of problems. */
static unsigned
check_model(struct orchd *d, const struct cfg_model *m)
{
	struct orch_errinfo e = {0};
	struct gguf_file *g = NULL;
	unsigned bad = 0;
	char path[CFG_PATH_MAX];

	snprintf(path, sizeof(path), "%s", m->path);
	if (m->ref[0] != '\0' && model_pull_find(d, m->ref, path, sizeof(path), &e) != ORCH_OK) {
		if (!m->pull || e.code != ORCH_ENOTFOUND) {
			fprintf(stderr, "orchd: model '%s': %s\n", m->name, e.msg);
			return 1;
		}
		printf("orchd: model '%s': %s is not in the model store yet; orchd pulls it at its "
		       "first start (pull = yes)\n",
		       m->name, m->ref);
		return 0;
	}
	if (gguf_open(path, &g, &e) != ORCH_OK) {
		fprintf(stderr, "orchd: model '%s': %s\n", m->name, e.msg);
		bad++;
	}
	gguf_close(g);
	for (uint32_t i = 0; i < m->n_devices; i++)
		if (devices_find(&d->devices, m->devices[i]) == NULL) {
			if (d->devices.nvml_note[0])
				fprintf(stderr, "orchd: model '%s': device %s is not here (%s)\n",
				        m->name, m->devices[i], d->devices.nvml_note);
			else
				fprintf(stderr,
				        "orchd: model '%s': device %s is not here (NVML lists %u "
				        "GPU%s)\n",
				        m->name, m->devices[i], d->devices.n - 1,
				        d->devices.n == 2 ? "" : "s");
			bad++;
		}
	if (bad == 0)
		printf("orchd: model '%s': %s on %s%s: ok\n", m->name, path, m->devices[0],
		       m->n_devices > 1 ? " and more" : "");
	return bad;
}

int
check_config(struct orchd *d)
{
	unsigned bad = 0;
	const char *src = d->config_path ? d->config_path : "flags";

	devices_open(&d->devices, d->cfg.nvml_library);
	for (uint32_t i = 0; i < d->cfg.n_models; i++)
		bad += check_model(d, &d->cfg.models[i]);
	devices_close(&d->devices);
	if (bad > 0) {
		fprintf(stderr, "orchd: %s: %u problem%s\n", src, bad, bad == 1 ? "" : "s");
		return 1;
	}
	printf("orchd: %s: ok (%u model%s)\n", src, d->cfg.n_models,
	       d->cfg.n_models == 1 ? "" : "s");
	return 0;
}
