/*
 * orch-bench - a load generator for orchd's native API or any OpenAI-style
 * server's /v1/completions (orchd's, llama-server's): N concurrent clients,
 * each POSTing a request (fixed prompt, temperature 0) and reading its SSE
 * stream, one request after another until the total is done.
 *
 *   orch-bench --model M [--host H] [--port P] [--streams N] [--requests R]
 *              [--max-tokens T] [--prompt TEXT] [--api-key K] [--json]
 *              [--openai] [--ignore-eos] [--unique]
 *   orch-bench --model M --idle N [--hold-s S] [--orchd-pid PID]
 *
 * --openai streams /v1/completions with stream_options.include_usage: a
 * chunk with text is a token's arrival, the usage chunk's completion_tokens
 * the request's token count (a server may send two tokens' text in one
 * chunk). --ignore-eos sends ignore_eos (orchd and llama-server ban the end
 * of generation: every request makes max_tokens tokens); --unique starts
 * each request's prompt with this run's process id and its number, so no
 * server answers a prompt from a cache of an earlier identical one.
 *
 * Reports time to first token (request sent → first token event or chunk),
 * inter-token latency (between token events of one stream) p50/p99, the
 * decode rate of a stream ((tokens − 1) / (last token − first token)),
 * aggregate tokens/s over the wall time, and errors (non-200, an error
 * event, a stream cut short). --idle opens N streams and holds them
 * (against a model whose worker is paused, they stay idle: keep-alive
 * comments only); with --orchd-pid it reads orchd's VmRSS before and while
 * they are open. One thread, epoll, plain sockets; HTTP/1.1 with chunked
 * replies, as curl and the OpenAI clients see them.
 */
#include <arpa/inet.h>
#include <errno.h>
#include <fcntl.h>
#include <getopt.h>
#include <netinet/in.h>
#include <netinet/tcp.h>
#include <stdbool.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/epoll.h>
#include <sys/resource.h>
#include <sys/socket.h>
#include <unistd.h>

#include "base/clock.h"

enum phase { P_IDLE, P_HEAD, P_CHUNK_SIZE, P_CHUNK_DATA, P_CHUNK_END, P_DONE };

struct client {
	int fd, id, ep;
	enum phase phase;
	char *out; /* the request */
	size_t out_len, out_off;
	char in[16384]; /* unparsed bytes */
	size_t in_len;
	size_t chunk_left;
	char line[8192]; /* the SSE line being assembled */
	size_t line_len;
	char event[32];
	int status;
	bool seen_end, errored;
	uint64_t t_send, t_first, t_last;
	uint32_t tokens;       /* token events (native) or chunks with text (OpenAI) */
	uint32_t usage_tokens; /* OpenAI: the usage chunk's completion_tokens */
	uint32_t done_requests;
};

struct opts {
	const char *host, *model, *prompt, *api_key;
	int port;
	uint32_t streams, requests, max_tokens, idle, hold_s;
	int orchd_pid;
	bool json, openai, ignore_eos, unique;
};

struct stats {
	double *ttft, *itl, *rate;
	size_t n_ttft, n_itl, n_rate, cap_itl;
	uint64_t tokens, errors, requests;
	bool warned_usage;
};

static struct opts o = {.host = "127.0.0.1",
                        .port = 8080,
                        .prompt = "Once upon a time",
                        .streams = 1,
                        .max_tokens = 128};
static struct stats st;
static uint32_t started_requests;

static int
cmp_double(const void *a, const void *b)
{
	double x = *(const double *)a, y = *(const double *)b;
	return (x > y) - (x < y);
}

static double
pct(double *v, size_t n, double p)
{
	if (n == 0)
		return 0;
	qsort(v, n, sizeof(*v), cmp_double);
	size_t i = (size_t)(p * (double)(n - 1) + 0.5);
	return v[i < n ? i : n - 1];
}

static void
push_itl(double ms)
{
	if (st.n_itl == st.cap_itl) {
		size_t cap = st.cap_itl ? 2 * st.cap_itl : 65536;
		double *p = realloc(st.itl, cap * sizeof(*p));
		if (p == NULL)
			return;
		st.itl = p;
		st.cap_itl = cap;
	}
	st.itl[st.n_itl++] = ms;
}

static long
rss_kib(int pid)
{
	char path[64], line[256];
	long kib = -1;

	snprintf(path, sizeof(path), "/proc/%d/status", pid);
	FILE *f = fopen(path, "r");
	if (f == NULL)
		return -1;
	while (fgets(line, sizeof(line), f))
		if (sscanf(line, "VmRSS: %ld kB", &kib) == 1)
			break;
	fclose(f);
	return kib;
}

/* ---- one request ---- */

static bool
client_start(struct client *c, int ep)
{
	struct sockaddr_in sa = {.sin_family = AF_INET, .sin_port = htons((uint16_t)o.port)};
	char body[4096], auth[512] = "", num[32] = "";
	int one = 1;

	if (inet_pton(AF_INET, o.host, &sa.sin_addr) != 1) {
		fprintf(stderr, "orch-bench: --host wants an IPv4 address\n");
		exit(2);
	}
	c->fd = socket(AF_INET, SOCK_STREAM | SOCK_NONBLOCK | SOCK_CLOEXEC, 0);
	if (c->fd < 0)
		return false;
	setsockopt(c->fd, IPPROTO_TCP, TCP_NODELAY, &one, sizeof(one));
	if (connect(c->fd, (struct sockaddr *)&sa, sizeof(sa)) != 0 && errno != EINPROGRESS) {
		close(c->fd);
		c->fd = -1;
		return false;
	}
	if (o.unique)
		snprintf(num, sizeof(num), "%d-%u: ", (int)getpid(), started_requests);
	const char *eos = o.ignore_eos ? ",\"ignore_eos\":true" : "";
	int n = o.openai ? snprintf(body, sizeof(body),
	                            "{\"model\":\"%s\",\"prompt\":\"%s%s\",\"max_tokens\":%u,"
	                            "\"temperature\":0,\"seed\":1,\"stream\":true,"
	                            "\"stream_options\":{\"include_usage\":true}%s}",
	                            o.model, num, o.prompt, o.max_tokens, eos)
	                 : snprintf(body, sizeof(body),
	                            "{\"job_id\":\"bench-%d-%u-%u\",\"model\":\"%s\","
	                            "\"prompt\":\"%s%s\",\"max_tokens\":%u,\"temperature\":0,"
	                            "\"seed\":1%s}",
	                            (int)getpid(), (unsigned)c->id, started_requests, o.model, num,
	                            o.prompt, o.max_tokens, eos);
	started_requests++;
	if (o.api_key)
		snprintf(auth, sizeof(auth), "Authorization: Bearer %s\r\n", o.api_key);
	free(c->out);
	c->out = malloc(sizeof(body) + 1024);
	c->out_len =
	        (size_t)snprintf(c->out, sizeof(body) + 1024,
	                         "POST %s HTTP/1.1\r\nHost: %s\r\n%s"
	                         "Content-Type: application/json\r\nContent-Length: %d\r\n"
	                         "Accept: text/event-stream\r\n\r\n%s",
	                         o.openai ? "/v1/completions" : "/execute", o.host, auth, n, body);
	c->out_off = c->in_len = c->line_len = c->chunk_left = 0;
	c->phase = P_HEAD;
	c->status = 0;
	c->seen_end = c->errored = false;
	c->tokens = c->usage_tokens = 0;
	c->event[0] = '\0';
	c->t_send = orch_mono_ns();
	c->t_first = c->t_last = 0;
	c->ep = ep;
	struct epoll_event ev = {.events = EPOLLIN | EPOLLOUT, .data.ptr = c};
	return epoll_ctl(ep, EPOLL_CTL_ADD, c->fd, &ev) == 0;
}

/* The end of one request: its numbers into the stats. */
static void
client_finish(struct client *c)
{
	bool ok = c->status == 200 && c->seen_end && !c->errored;

	close(c->fd);
	c->fd = -1;
	c->phase = P_DONE;
	st.requests++;
	c->done_requests++;
	if (!ok) {
		st.errors++;
		return;
	}
	if (o.openai && c->usage_tokens == 0 && !st.warned_usage) {
		st.warned_usage = true;
		fprintf(stderr,
		        "orch-bench: no usage chunk: counting chunks with text as tokens\n");
	}
	st.tokens += o.openai && c->usage_tokens ? c->usage_tokens : c->tokens;
	if (c->t_first)
		st.ttft[st.n_ttft++] = (double)(c->t_first - c->t_send) / 1e6;
	if (c->tokens > 1 && c->t_last > c->t_first)
		st.rate[st.n_rate++] =
		        (double)(c->tokens - 1) / ((double)(c->t_last - c->t_first) / 1e9);
}

static void
token_arrived(struct client *c, uint64_t t)
{
	if (c->tokens == 0)
		c->t_first = t;
	else
		push_itl((double)(t - c->t_last) / 1e6);
	c->t_last = t;
	c->tokens++;
}

/* An OpenAI stream's data line @d (NUL-terminated): a chunk, its usage, [DONE], an error. */
static void
openai_data(struct client *c, const char *d)
{
	const char *u = strstr(d, "\"completion_tokens\":");
	const char *text = strstr(d, "\"text\":\"");

	while (*d == ' ')
		d++;
	if (strcmp(d, "[DONE]") == 0) {
		c->seen_end = true;
	} else if (strncmp(d, "{\"error\"", 8) == 0) {
		c->errored = true;
		if (st.errors < 5)
			fprintf(stderr, "orch-bench: error chunk: %s\n", d);
	} else {
		if (u != NULL)
			c->usage_tokens = (uint32_t)strtoul(u + 20, NULL, 10);
		if (text != NULL && text[8] != '"')
			token_arrived(c, orch_mono_ns());
	}
}

/* One complete SSE line of the body (NUL-terminated at @n). */
static void
sse_line(struct client *c, const char *line, size_t n)
{
	if (o.openai) {
		if (n >= 5 && memcmp(line, "data:", 5) == 0)
			openai_data(c, line + 5);
		return;
	}
	if (n >= 7 && memcmp(line, "event: ", 7) == 0) {
		snprintf(c->event, sizeof(c->event), "%.*s", (int)(n - 7), line + 7);
	} else if (n >= 5 && memcmp(line, "data:", 5) == 0) {
		uint64_t t = orch_mono_ns();
		if (strcmp(c->event, "token") == 0) {
			token_arrived(c, t);
		} else if (strcmp(c->event, "end") == 0) {
			c->seen_end = true;
		} else if (strcmp(c->event, "error") == 0) {
			c->errored = true;
			if (st.errors < 5)
				fprintf(stderr, "orch-bench: error event: %.*s\n", (int)n, line);
		}
	} else if (n == 0) {
		c->event[0] = '\0';
	}
}

static void
body_bytes(struct client *c, const char *p, size_t n)
{
	for (size_t i = 0; i < n; i++) {
		if (p[i] == '\n') {
			if (c->line_len > 0 && c->line[c->line_len - 1] == '\r')
				c->line_len--; /* a CRLF line */
			c->line[c->line_len] = '\0';
			sse_line(c, c->line, c->line_len);
			c->line_len = 0;
		} else if (c->line_len < sizeof(c->line) - 1) {
			c->line[c->line_len++] = p[i];
		}
	}
}

/* Parse what is buffered; false once the reply is complete. */
static bool
parse(struct client *c)
{
	for (;;) {
		char *crlf;
		size_t used;
		switch (c->phase) {
		case P_HEAD:
			crlf = memmem(c->in, c->in_len, "\r\n\r\n", 4);
			if (crlf == NULL)
				return true;
			*crlf = '\0';
			if (sscanf(c->in, "HTTP/1.%*d %d", &c->status) != 1)
				return false;
			if (strcasestr(c->in, "transfer-encoding: chunked") == NULL) {
				if (c->status != 200 && st.errors < 5)
					fprintf(stderr, "orch-bench: HTTP %d: %.*s\n", c->status,
					        (int)(c->in_len - (size_t)(crlf + 4 - c->in)),
					        crlf + 4);
				return false; /* an error reply with a body: done with it */
			}
			used = (size_t)(crlf + 4 - c->in);
			c->phase = P_CHUNK_SIZE;
			break;
		case P_CHUNK_SIZE:
			crlf = memmem(c->in, c->in_len, "\r\n", 2);
			if (crlf == NULL)
				return true;
			c->chunk_left = strtoul(c->in, NULL, 16);
			used = (size_t)(crlf + 2 - c->in);
			c->phase = c->chunk_left ? P_CHUNK_DATA : P_DONE;
			break;
		case P_CHUNK_DATA:
			used = c->in_len < c->chunk_left ? c->in_len : c->chunk_left;
			body_bytes(c, c->in, used);
			c->chunk_left -= used;
			if (c->chunk_left == 0)
				c->phase = P_CHUNK_END;
			if (used == 0)
				return true;
			break;
		case P_CHUNK_END:
			if (c->in_len < 2)
				return true;
			used = 2;
			c->phase = P_CHUNK_SIZE;
			break;
		default:
			return false;
		}
		memmove(c->in, c->in + used, c->in_len - used);
		c->in_len -= used;
		if (c->phase == P_DONE)
			return false;
	}
}

/* Socket ready: write the request, read the reply. False once done with it. */
static bool
client_io(struct client *c, uint32_t events)
{
	if ((events & EPOLLOUT) && c->out_off < c->out_len) {
		ssize_t k = write(c->fd, c->out + c->out_off, c->out_len - c->out_off);
		if (k > 0)
			c->out_off += (size_t)k;
		else if (k < 0 && errno != EAGAIN)
			return false;
		if (c->out_off == c->out_len) { /* sent: stop asking (a writable socket spins) */
			struct epoll_event ev = {.events = EPOLLIN, .data.ptr = c};
			epoll_ctl(c->ep, EPOLL_CTL_MOD, c->fd, &ev);
		}
	}
	if (events & (EPOLLIN | EPOLLHUP | EPOLLERR)) {
		for (;;) {
			ssize_t k = read(c->fd, c->in + c->in_len, sizeof(c->in) - c->in_len);
			if (k < 0 && errno == EAGAIN)
				break;
			if (k <= 0)
				return false;
			c->in_len += (size_t)k;
			if (!parse(c))
				return false;
		}
	}
	return true;
}

/* ---- modes ---- */

static void
raise_nofile(uint32_t need)
{
	struct rlimit rl;

	if (getrlimit(RLIMIT_NOFILE, &rl) == 0 && rl.rlim_cur < need + 64) {
		rl.rlim_cur = rl.rlim_max;
		setrlimit(RLIMIT_NOFILE, &rl);
	}
}

static int
run_load(void)
{
	uint32_t total = o.requests ? o.requests : o.streams;
	struct client *cs = calloc(o.streams, sizeof(*cs));
	int ep = epoll_create1(EPOLL_CLOEXEC);
	uint32_t active = 0;

	st.ttft = calloc(total, sizeof(double));
	st.rate = calloc(total, sizeof(double));
	if (cs == NULL || ep < 0 || st.ttft == NULL || st.rate == NULL)
		return 1;
	uint64_t t0 = orch_mono_ns();
	for (uint32_t i = 0; i < o.streams && started_requests < total; i++) {
		cs[i].id = (int)i;
		if (client_start(&cs[i], ep)) {
			active++;
		} else {
			st.errors++;
			st.requests++;
		}
	}
	struct epoll_event evs[256];
	while (active > 0) {
		int n = epoll_wait(ep, evs, 256, 60000);
		if (n <= 0) {
			fprintf(stderr, "orch-bench: nothing for 60 s; %u streams open\n", active);
			return 1;
		}
		for (int i = 0; i < n; i++) {
			struct client *c = evs[i].data.ptr;
			if (client_io(c, evs[i].events))
				continue;
			client_finish(c);
			active--;
			if (started_requests < total) {
				if (client_start(c, ep)) {
					active++;
				} else {
					st.errors++;
					st.requests++;
				}
			}
		}
	}
	double wall = (double)(orch_mono_ns() - t0) / 1e9;
	double ttft50 = pct(st.ttft, st.n_ttft, 0.5), ttft99 = pct(st.ttft, st.n_ttft, 0.99);
	double itl50 = pct(st.itl, st.n_itl, 0.5), itl99 = pct(st.itl, st.n_itl, 0.99);
	double rate50 = pct(st.rate, st.n_rate, 0.5);
	if (o.json)
		printf("{\"streams\":%u,\"requests\":%llu,\"errors\":%llu,\"tokens\":%llu,"
		       "\"wall_s\":%.3f,\"tokens_per_s\":%.1f,\"stream_decode_tok_s_p50\":%.1f,"
		       "\"ttft_ms_p50\":%.3f,\"ttft_ms_p99\":%.3f,\"itl_ms_p50\":%.3f,"
		       "\"itl_ms_p99\":%.3f}\n",
		       o.streams, (unsigned long long)st.requests, (unsigned long long)st.errors,
		       (unsigned long long)st.tokens, wall, (double)st.tokens / wall, rate50,
		       ttft50, ttft99, itl50, itl99);
	else
		printf("streams %4u  requests %5llu  errors %llu  tokens %7llu  wall %.2f s  "
		       "%8.0f tok/s  stream %7.0f tok/s  TTFT p50 %7.2f p99 %7.2f ms  "
		       "ITL p50 %6.3f p99 %6.3f ms\n",
		       o.streams, (unsigned long long)st.requests, (unsigned long long)st.errors,
		       (unsigned long long)st.tokens, wall, (double)st.tokens / wall, rate50,
		       ttft50, ttft99, itl50, itl99);
	return st.errors ? 1 : 0;
}

static int
run_idle(void)
{
	struct client *cs = calloc(o.idle, sizeof(*cs));
	int ep = epoll_create1(EPOLL_CLOEXEC);
	uint32_t open_ok = 0;
	long before = o.orchd_pid ? rss_kib(o.orchd_pid) : -1;

	if (cs == NULL || ep < 0)
		return 1;
	for (uint32_t i = 0; i < o.idle; i++) {
		cs[i].id = (int)i;
		if (!client_start(&cs[i], ep))
			st.errors++;
	}
	/* wait until every stream has its headers (or failed), then hold */
	uint64_t deadline = orch_mono_ns() + 30000000000ull;
	struct epoll_event evs[256];
	while (open_ok + st.errors < o.idle && orch_mono_ns() < deadline) {
		int n = epoll_wait(ep, evs, 256, 1000);
		for (int i = 0; i < n; i++) {
			struct client *c = evs[i].data.ptr;
			bool had = c->phase > P_HEAD;
			if (!client_io(c, evs[i].events)) {
				epoll_ctl(ep, EPOLL_CTL_DEL, c->fd, NULL);
				st.errors++;
				continue;
			}
			if (!had && c->phase > P_HEAD) {
				open_ok++;
				struct epoll_event ev = {.events = EPOLLIN, .data.ptr = c};
				epoll_ctl(ep, EPOLL_CTL_MOD, c->fd, &ev);
			}
		}
	}
	uint64_t hold_end = orch_mono_ns() + (uint64_t)o.hold_s * 1000000000ull;
	while (orch_mono_ns() < hold_end) { /* read keep-alives; count streams that end */
		int n = epoll_wait(ep, evs, 256, 200);
		for (int i = 0; i < n; i++) {
			struct client *c = evs[i].data.ptr;
			if (!client_io(c, evs[i].events)) {
				epoll_ctl(ep, EPOLL_CTL_DEL, c->fd, NULL);
				open_ok--;
				st.errors++;
			}
		}
	}
	long during = o.orchd_pid ? rss_kib(o.orchd_pid) : -1;
	printf("idle streams %u open, %llu failed or ended", open_ok,
	       (unsigned long long)st.errors);
	if (before > 0 && during > 0 && open_ok > 0)
		printf("; orchd VmRSS %ld -> %ld KiB: %.1f KiB per stream", before, during,
		       (double)(during - before) / open_ok);
	printf("\n");
	for (uint32_t i = 0; i < o.idle; i++)
		if (cs[i].fd >= 0)
			close(cs[i].fd);
	return st.errors ? 1 : 0;
}

static void
usage(void)
{
	fprintf(stderr,
	        "usage: orch-bench --model M [--host IP] [--port P] [--streams N] [--requests R]\n"
	        "                  [--max-tokens T] [--prompt TEXT] [--api-key K] [--json]\n"
	        "                  [--openai] [--ignore-eos] [--unique]\n"
	        "       orch-bench --model M --idle N [--hold-s S] [--orchd-pid PID]\n");
}

int
main(int argc, char **argv)
{
	static const struct option longopts[] = {{"host", required_argument, NULL, 'h'},
	                                         {"port", required_argument, NULL, 'p'},
	                                         {"model", required_argument, NULL, 'm'},
	                                         {"streams", required_argument, NULL, 's'},
	                                         {"requests", required_argument, NULL, 'r'},
	                                         {"max-tokens", required_argument, NULL, 'n'},
	                                         {"prompt", required_argument, NULL, 'P'},
	                                         {"api-key", required_argument, NULL, 'k'},
	                                         {"idle", required_argument, NULL, 'i'},
	                                         {"hold-s", required_argument, NULL, 'H'},
	                                         {"orchd-pid", required_argument, NULL, 'o'},
	                                         {"json", no_argument, NULL, 'j'},
	                                         {"openai", no_argument, NULL, 'O'},
	                                         {"ignore-eos", no_argument, NULL, 'E'},
	                                         {"unique", no_argument, NULL, 'U'},
	                                         {NULL, 0, NULL, 0}};
	int c;

	o.hold_s = 5;
	while ((c = getopt_long(argc, argv, "", longopts, NULL)) != -1) {
		switch (c) {
		case 'h':
			o.host = optarg;
			break;
		case 'p':
			o.port = atoi(optarg);
			break;
		case 'm':
			o.model = optarg;
			break;
		case 's':
			o.streams = (uint32_t)strtoul(optarg, NULL, 10);
			break;
		case 'r':
			o.requests = (uint32_t)strtoul(optarg, NULL, 10);
			break;
		case 'n':
			o.max_tokens = (uint32_t)strtoul(optarg, NULL, 10);
			break;
		case 'P':
			o.prompt = optarg;
			break;
		case 'k':
			o.api_key = optarg;
			break;
		case 'i':
			o.idle = (uint32_t)strtoul(optarg, NULL, 10);
			break;
		case 'H':
			o.hold_s = (uint32_t)strtoul(optarg, NULL, 10);
			break;
		case 'o':
			o.orchd_pid = atoi(optarg);
			break;
		case 'j':
			o.json = true;
			break;
		case 'O':
			o.openai = true;
			break;
		case 'E':
			o.ignore_eos = true;
			break;
		case 'U':
			o.unique = true;
			break;
		default:
			usage();
			return 2;
		}
	}
	if (o.model == NULL || optind != argc || o.streams == 0 || o.port <= 0 ||
	    strpbrk(o.prompt, "\"\\") != NULL) {
		usage();
		return 2;
	}
	raise_nofile(o.idle > o.streams ? o.idle : o.streams);
	return o.idle ? run_idle() : run_load();
}
