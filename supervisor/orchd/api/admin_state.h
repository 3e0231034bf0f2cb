#pragma once
/*
 * admin_state.h - the models added through the admin API, kept across
 * restarts: STATE_DIR/models.json holds each one's parameters (the admin
 * API's keys) and whether it was loaded. Written whole after every change
 * (temp file, fsync, rename, fsync of the directory), so a crash leaves the
 * previous or the next state, never a mix. Models of the configuration file
 * are not in it: the file says what they are. Thread: the loop.
 */
#include <stdbool.h>
#include <stddef.h>

#include "base/err.h"

struct cJSON;
struct cfg_model;
struct orchd;
struct orchd_config;

/*
 * admin_state_dir - where models.json lives: state_dir, else
 * $STATE_DIRECTORY (systemd's StateDirectory=, its first entry), else
 * runtime_dir. Written into @buf (@n bytes), which is returned.
 */
const char *admin_state_dir(const struct orchd *d, char *buf, size_t n);

/*
 * admin_state_save - write the runtime models (not being removed) to
 * models.json atomically. A failure is logged (the models go on, the file
 * keeps its previous state) and returned.
 */
orch_err admin_state_save(struct orchd *d);

/*
 * admin_state_restore - add the models models.json names (not those the
 * configuration has: it wins), starting those that were loaded. A file that
 * cannot be parsed is logged and moved aside as models.json.bad.
 */
void admin_state_restore(struct orchd *d);

/*
 * admin_kv_json - @c's KV pool keys into @o as the admin API takes them,
 * only those that differ from the default (kv_cache_mib, kv_cache_fraction,
 * kv_block_tokens, enable_prefix_cache).
 */
void admin_kv_json(struct cJSON *o, const struct cfg_model *c);

/*
 * admin_model_cfg - the admin API's load keys in @root (name, path, device,
 * slots, context, replicas, threads, tokenizer, the kv_* keys and
 * enable_prefix_cache; "loaded" is skipped) as a
 * new model @name of @tmp, checked as the configuration file's keys are.
 * False with the reason in @e.
 */
bool admin_model_cfg(struct orchd_config *tmp, const char *name, const struct cJSON *root,
                     struct orch_errinfo *e);
