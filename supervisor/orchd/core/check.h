#pragma once
/*
 * check.h - `orchd --check-config`: what a configuration names is there. Each
 * model's file exists and is a valid GGUF, and each device it names is present
 * (cpu always; cuda:N when NVML lists GPU N). One line per model on stdout, the
 * problems on stderr.
 */

struct orchd;

/* check_config - check @d's configuration; main's exit code (0 ok, 1 a problem). */
int check_config(struct orchd *d);
