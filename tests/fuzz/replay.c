/*
 * replay.c - run a fuzz target over every file of a corpus directory
 * (SQLite's fuzzcheck): in the normal and the ASan+UBSan builds this turns
 * every stored input, crashes found earlier included, into a regression
 * test. Each input gets a 10-second alarm.
 */
#include <dirent.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size);

static int
run_file(const char *path)
{
	FILE *fp = fopen(path, "rb");
	uint8_t *buf = NULL;
	long n;

	if (fp == NULL || fseek(fp, 0, SEEK_END) != 0 || (n = ftell(fp)) < 0 ||
	    fseek(fp, 0, SEEK_SET) != 0) {
		fprintf(stderr, "replay: cannot read %s\n", path);
		if (fp)
			fclose(fp);
		return -1;
	}
	buf = malloc(n ? (size_t)n : 1);
	if (buf == NULL || fread(buf, 1, (size_t)n, fp) != (size_t)n) {
		fprintf(stderr, "replay: cannot read %s\n", path);
		free(buf);
		fclose(fp);
		return -1;
	}
	fclose(fp);
	alarm(10);
	LLVMFuzzerTestOneInput(buf, (size_t)n);
	alarm(0);
	free(buf);
	return 0;
}

int
main(int argc, char **argv)
{
	int files = 0, errors = 0;

	for (int a = 1; a < argc; a++) {
		DIR *d = opendir(argv[a]);
		struct dirent *e;
		if (d == NULL) {
			fprintf(stderr, "replay: cannot open %s\n", argv[a]);
			return 1;
		}
		while ((e = readdir(d)) != NULL) {
			char path[4096];
			if (e->d_name[0] == '.')
				continue;
			snprintf(path, sizeof(path), "%s/%s", argv[a], e->d_name);
			errors += run_file(path) != 0;
			files++;
		}
		closedir(d);
	}
	printf("replayed %d inputs, %d unreadable\n", files, errors);
	return files == 0 || errors ? 1 : 0;
}
