/*
 * cli_serve.c - "orch-worker serve": the worker process orchd runs, one per
 * (device, model), speaking docs/protocol.md on --endpoint.
 */
#include <getopt.h>
#include <stdio.h>
#include <string.h>

#include "base/parse.h"
#include "cli.h"
#include "serve/serve.h"

static bool
count(const char *flag, const char *s, uint64_t lo, uint64_t hi, uint32_t *out)
{
	uint64_t v;

	if (orch_parse_u64(s, lo, hi, &v) != ORCH_OK) {
		fprintf(stderr,
		        "orch-worker serve: %s wants an integer in [%llu, %llu], got '%s'\n", flag,
		        (unsigned long long)lo, (unsigned long long)hi, s);
		return false;
	}
	*out = (uint32_t)v;
	return true;
}

/* One option into @o; *@ok false when its value is bad or it is unknown. */
static void
serve_opt(struct serve_opts *o, int c, bool *ok)
{
	switch (c) {
	case 'e':
		o->endpoint = optarg;
		break;
	case 'm':
		o->model = optarg;
		break;
	case 'd':
		o->device = optarg;
		break;
	case 'w':
		o->worker_id = optarg;
		break;
	case 's':
		*ok = count("--slots", optarg, 1, 256, &o->slots);
		break;
	case 'c':
		*ok = count("--context", optarg, 1, 1u << 20, &o->n_ctx);
		break;
	case 't':
		*ok = count("--threads", optarg, 1, 256, &o->threads);
		break;
	case 'h':
		*ok = count("--heartbeat-ms", optarg, 10, 60000, &o->heartbeat_ms);
		break;
	case 'T':
		*ok = count("--supervisor-timeout-ms", optarg, 0, 3600000,
		            &o->supervisor_timeout_ms);
		break;
	case 'D':
		o->debug_endpoint = optarg;
		break;
	case 'k':
		*ok = count("--chunk", optarg, 1, 65536, &o->chunk);
		break;
	case 'S':
		if (strcmp(optarg, "decode_first") == 0) {
			o->policy = SCHED_DECODE_FIRST;
		} else if (strcmp(optarg, "prefill_first") == 0) {
			o->policy = SCHED_PREFILL_FIRST;
		} else {
			fprintf(stderr,
			        "orch-worker serve: --scheduler wants decode_first or prefill_first, "
			        "got '%s'\n",
			        optarg);
			*ok = false;
		}
		break;
	case 'r':
		*ok = count("--residency-check-s", optarg, 1, 86400, &o->residency_s);
		break;
	case 'G':
		o->no_graphs = true;
		break;
	case 'H':
		o->hash_cache_dir = optarg;
		break;
	case 'B':
		o->no_hash_beside = true;
		break;
	case 'M':
		*ok = count("--kv-cache-mib", optarg, 1, 1u << 30, &o->kv_cache_mib);
		break;
	case 'F':
		if (orch_parse_double(optarg, 0.001, 1.0, &o->kv_cache_fraction) != ORCH_OK) {
			fprintf(stderr,
			        "orch-worker serve: --kv-cache-fraction wants a number in [0.001, 1], "
			        "got '%s'\n",
			        optarg);
			*ok = false;
		}
		break;
	case 'b':
		*ok = count("--kv-block-tokens", optarg, 1, 256, &o->kv_block_tokens);
		break;
	case 'P':
		o->no_prefix_cache = true;
		break;
	case 'K':
		if (text_source_parse(optarg, &o->tokenizer) != ORCH_OK) {
			fprintf(stderr,
			        "orch-worker serve: --tokenizer wants gguf or hf-json, got '%s'\n",
			        optarg);
			*ok = false;
		}
		break;
	default:
		*ok = false;
	}
}

int
cli_serve(int argc, char **argv)
{
	static const struct option longopts[] = {
	        {"endpoint", required_argument, NULL, 'e'},
	        {"model", required_argument, NULL, 'm'},
	        {"device", required_argument, NULL, 'd'},
	        {"worker-id", required_argument, NULL, 'w'},
	        {"slots", required_argument, NULL, 's'},
	        {"context", required_argument, NULL, 'c'},
	        {"threads", required_argument, NULL, 't'},
	        {"heartbeat-ms", required_argument, NULL, 'h'},
	        {"supervisor-timeout-ms", required_argument, NULL, 'T'},
	        {"chunk", required_argument, NULL, 'k'},
	        {"scheduler", required_argument, NULL, 'S'},
	        {"debug-endpoint", required_argument, NULL, 'D'},
	        {"residency-check-s", required_argument, NULL, 'r'},
	        {"no-graphs", no_argument, NULL, 'G'},
	        {"tokenizer", required_argument, NULL, 'K'},
	        {"hash-cache-dir", required_argument, NULL, 'H'},
	        {"no-hash-beside", no_argument, NULL, 'B'},
	        {"kv-cache-mib", required_argument, NULL, 'M'},
	        {"kv-cache-fraction", required_argument, NULL, 'F'},
	        {"kv-block-tokens", required_argument, NULL, 'b'},
	        {"no-prefix-cache", no_argument, NULL, 'P'},
	        {NULL, 0, NULL, 0}};
	struct serve_opts o = {
	        .device = "cpu", .slots = 4, .heartbeat_ms = 1000, .chunk = 512, .residency_s = 60};
	int c;
	bool ok = true;

	optind = 1;
	while (ok && (c = getopt_long(argc, argv, "", longopts, NULL)) != -1) {
		serve_opt(&o, c, &ok);
	}
	if (ok && o.kv_cache_mib && o.kv_cache_fraction > 0) {
		fprintf(stderr, "orch-worker serve: --kv-cache-mib and --kv-cache-fraction both "
		                "size the KV pool: give one\n");
		return 2;
	}
	if (!ok || optind != argc || !o.endpoint || !o.model || !o.worker_id) {
		cli_usage("serve");
		return 2;
	}
	return serve_run(&o);
}
