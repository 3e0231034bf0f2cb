/*
 * log_test.c - log lines are logfmt whatever the values hold: a newline,
 * quotes, '=', spaces, control characters and ill-formed UTF-8 in a value
 * are escaped, so a value cannot end its line or add a field (issue 16).
 */
#include <fcntl.h>
#include <stdarg.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <termios.h>
#include <unistd.h>

#include "base/log.h"
#include "t.h"

/* The last line handed to the sink, and how many lines there were. */
static char got[4096];
static size_t got_n;
static int lines;

static void
sink(void *ctx, enum orch_log_level level, const char *line, size_t n)
{
	(void)ctx;
	(void)level;
	memcpy(got, line, n < sizeof(got) - 1 ? n : sizeof(got) - 1);
	got_n = n < sizeof(got) - 1 ? n : sizeof(got) - 1;
	got[got_n] = '\0';
	lines++;
}

static void
test_plain(void)
{
	orch_log(ORCH_LOG_INFO, "ev", "job=%s n=%u x=%.1f", "j1", 7u, 1.25);
	T_STREQ(got, "event=ev job=j1 n=7 x=1.2");
	orch_log(ORCH_LOG_INFO, "ev", "a=%lld b=%zu c=%llu d=%d%%", -5ll, (size_t)9,
	         18446744073709551615ull, 3);
	T_STREQ(got, "event=ev a=-5 b=9 c=18446744073709551615 d=3%");
	orch_log(ORCH_LOG_INFO, "ev", "line=\"%.*s\" w=%5s|", 3, "abcdef", "ab");
	T_STREQ(got, "event=ev line=\"abc\" w=\"   ab|\"");
	orch_log(ORCH_LOG_INFO, "ev", "model=%s missing=%s: started", "a", "cuda:0");
	T_STREQ(got, "event=ev model=a missing=cuda:0: started");
	orch_log(ORCH_LOG_INFO, "ev", "empty=%s utf8=%s", "", "h\xc3\xa9");
	T_STREQ(got, "event=ev empty= utf8=h\xc3\xa9");
}

/* The attack of issue 16: a job_id with a newline and a fake line after it. */
static void
test_forged(void)
{
	int before = lines;

	orch_log(ORCH_LOG_INFO, "job_end", "job=%s model=%s", "x\n<3>event=forged job=y", "m");
	T_EQ(lines, before + 1);
	T_STREQ(got, "event=job_end job=\"x\\n<3>event=forged job=y\" model=m");
	orch_log(ORCH_LOG_INFO, "ev", "job=%s", "a b=c");
	T_STREQ(got, "event=ev job=\"a b=c\"");
	orch_log(ORCH_LOG_INFO, "ev", "why=\"%s\" after", "say \"hi\"\\ \r\t\x01\x7f");
	T_STREQ(got, "event=ev why=\"say \\\"hi\\\"\\\\ \\r\\t\\u0001\\u007f\" after");
	orch_log(ORCH_LOG_INFO, "ev", "bad=%s c1=%s sep=%s", "a\xff\xc3", "\xc2\x9b",
	         "\xe2\x80\xa8");
	T_STREQ(got, "event=ev bad=\"a\\xff\\xc3\" c1=\"\\u009b\" sep=\"\\u2028\"");
	orch_log(ORCH_LOG_INFO, "ev", "ch=%c", '\n');
	T_STREQ(got, "event=ev ch=\"\\n\"");
}

static void
test_err(void)
{
	struct orch_errinfo e = {0};

	orch_errf(&e, ORCH_EINVAL, "bad \"file\"\nx");
	T_ERR(orch_log_err(ORCH_EINVAL, &e, "load_failed", "path=%s", "/a b"), ORCH_EINVAL);
	T_STREQ(got, "event=load_failed err=INVALID_REQUEST code=ORCH_EINVAL "
	             "msg=\"bad \\\"file\\\"\\nx\" path=\"/a b\"");
	/* a failure no client sees: no wire code (ORCH_EIO's would say MODEL_LOAD_FAILED) */
	orch_errf(&e, ORCH_EIO, "not a regular file");
	T_ERR(orch_log_fail(ORCH_EIO, &e, "api_keys_reload_failed", "file=%s", "k"), ORCH_EIO);
	T_STREQ(got,
	        "event=api_keys_reload_failed code=ORCH_EIO msg=\"not a regular file\" file=k");
}

/* A value past the line's length is cut, its quote closed, the line ended once. */
static void
test_long(void)
{
	char big[5000];

	memset(big, 'a', sizeof(big) - 1);
	big[sizeof(big) - 1] = '\0';
	big[10] = ' ';
	orch_log(ORCH_LOG_INFO, "ev", "v=%s tail=%s", big, "t");
	T_TRUE(got_n > 1000 && got_n < 2048);
	T_EQ(got[got_n - 1], '"');
	T_TRUE(strstr(got, "tail=") == NULL);
	T_TRUE(strchr(got, '\n') == NULL);
}

/* The bytes on stderr: one line per event, with its level prefix. */
static void
test_stderr(void)
{
	char path[] = "/tmp/log_test.XXXXXX", buf[512];
	int fd = mkstemp(path), saved = dup(STDERR_FILENO);

	T_TRUE(fd >= 0 && saved >= 0);
	dup2(fd, STDERR_FILENO);
	orch_log(ORCH_LOG_WARNING, "job_end", "job=%s", "x\n<3>event=forged");
	dup2(saved, STDERR_FILENO);
	close(saved);
	ssize_t n = pread(fd, buf, sizeof(buf) - 1, 0);
	close(fd);
	unlink(path);
	T_TRUE(n > 0);
	buf[n] = '\0';
	T_STREQ(buf, "<4>event=job_end job=\"x\\n<3>event=forged\"\n");
}

/* On a terminal (a pty here): no "<N>"; a warning says so in a word; the sink gets the same. */
static void
test_terminal(void)
{
	int master = posix_openpt(O_RDWR | O_NOCTTY), saved = dup(STDERR_FILENO);
	char buf[512];

	T_TRUE(master >= 0 && grantpt(master) == 0 && unlockpt(master) == 0 && saved >= 0);
	int slave = open(ptsname(master), O_RDWR | O_NOCTTY);
	T_TRUE(slave >= 0);
	struct termios tio;
	T_TRUE(tcgetattr(slave, &tio) == 0);
	cfmakeraw(&tio); /* no "\r\n" for "\n" */
	T_TRUE(tcsetattr(slave, TCSANOW, &tio) == 0);
	dup2(slave, STDERR_FILENO);
	orch_log(ORCH_LOG_WARNING, "disk_low", "free=%d", 3);
	orch_log(ORCH_LOG_INFO, "ready", NULL);
	dup2(saved, STDERR_FILENO);
	close(saved);
	close(slave);
	/* a pty hands each write over as it came: read until the closed slave's data ends (EIO) */
	size_t n = 0;
	ssize_t k;
	while (n < sizeof(buf) - 1 && (k = read(master, buf + n, sizeof(buf) - 1 - n)) > 0)
		n += (size_t)k;
	close(master);
	T_TRUE(n > 0);
	buf[n] = '\0';
	T_STREQ(buf, "warning: event=disk_low free=3\nevent=ready\n");
	T_STREQ(got, "event=ready");
}

int
main(void)
{
	orch_log_set_sink(sink, NULL);
	T_RUN(test_plain);
	T_RUN(test_forged);
	T_RUN(test_err);
	T_RUN(test_long);
	T_RUN(test_stderr);
	T_RUN(test_terminal);
	orch_log_set_sink(NULL, NULL);
	return t_done();
}
