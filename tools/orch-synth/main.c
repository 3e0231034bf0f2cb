/*
 * orch-synth - write a synthetic GGUF model with real shapes.
 *
 *   orch-synth --preset NAME [--quant TYPE|MIX] [--vocab VOCAB.gguf | --metadata-from REAL.gguf]
 *              [--layers N] [--seed S] -o OUT.gguf
 *   orch-synth --list
 */
#include <getopt.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "base/parse.h"
#include "synth.h"

static void
usage(FILE *out)
{
	fprintf(out,
	        "usage: orch-synth --preset NAME [--quant TYPE|MIX]\n"
	        "                  [--vocab VOCAB.gguf | --metadata-from REAL.gguf]\n"
	        "                  [--layers N] [--seed S] -o OUT.gguf\n"
	        "       orch-synth --list\n"
	        "types: F32 F16 BF16 Q8_0 Q4_0 Q4_1 Q5_0 Q5_1 Q2_K Q3_K Q4_K Q5_K Q6_K; mixes: Q4_K_M Q8_0\n");
}

static void
list_presets(void)
{
	for (size_t i = 0; i < synth_preset_count(); i++) {
		const struct synth_preset *p = synth_preset_at(i);
		printf("%-14s arch=%-6s layers=%-3u embd=%-5u heads=%u/%u ff=%-5u vocab=%u ctx=%u\n",
		       p->name, p->arch, p->n_layer, p->n_embd, p->n_head, p->n_head_kv, p->n_ff,
		       p->n_vocab, p->n_ctx);
	}
}

int
main(int argc, char **argv)
{
	static const struct option longopts[] = {{"preset", required_argument, NULL, 'p'},
	                                         {"quant", required_argument, NULL, 'q'},
	                                         {"vocab", required_argument, NULL, 'v'},
	                                         {"metadata-from", required_argument, NULL, 'm'},
	                                         {"layers", required_argument, NULL, 'l'},
	                                         {"seed", required_argument, NULL, 's'},
	                                         {"output", required_argument, NULL, 'o'},
	                                         {"list", no_argument, NULL, 'L'},
	                                         {"help", no_argument, NULL, 'h'},
	                                         {NULL, 0, NULL, 0}};
	struct synth_opts o = {0};
	struct orch_errinfo e = {0};
	uint64_t v;
	int c;

	while ((c = getopt_long(argc, argv, "p:q:v:m:l:s:o:h", longopts, NULL)) != -1) {
		switch (c) {
		case 'p':
			o.preset = optarg;
			break;
		case 'q':
			o.quant = optarg;
			break;
		case 'v':
			o.vocab_path = optarg;
			break;
		case 'm':
			o.metadata_from = optarg;
			break;
		case 'l':
			if (orch_parse_u64(optarg, 1, 1024, &v) != ORCH_OK) {
				fprintf(stderr, "orch-synth: --layers wants 1..1024, got '%s'\n",
				        optarg);
				return 2;
			}
			o.layers = (uint32_t)v;
			break;
		case 's':
			if (orch_parse_u64(optarg, 0, UINT64_MAX, &o.seed) != ORCH_OK) {
				fprintf(stderr,
				        "orch-synth: --seed wants an unsigned integer, got '%s'\n",
				        optarg);
				return 2;
			}
			break;
		case 'o':
			o.out = optarg;
			break;
		case 'L':
			list_presets();
			return 0;
		case 'h':
			usage(stdout);
			return 0;
		default:
			usage(stderr);
			return 2;
		}
	}
	if (o.preset == NULL || o.out == NULL || optind != argc) {
		usage(stderr);
		return 2;
	}
	orch_err rv = synth_write(&o, &e);
	if (rv != ORCH_OK) {
		fprintf(stderr, "orch-synth: %s\n", e.msg[0] ? e.msg : orch_err_name(rv));
		return 1;
	}
	return 0;
}
