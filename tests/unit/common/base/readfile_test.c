/* readfile_test.c - orch_read_file: contents, NUL termination, missing file, size cap. */
#include "base/alloc.h"
#include "base/readfile.h"
#include "t.h"

static void
test_read(void)
{
	char *buf = NULL;
	size_t n = 0;
	struct orch_errinfo e = {0};

	T_OK(orch_read_file(t_path("templates/ggml-vocab-phi-3.chat_template.jinja"), 1 << 20, &buf,
	                    &n, &e));
	T_EQ(n, 269); /* SOURCE.md lists the file at 269 bytes */
	T_EQ(buf[n], '\0');
	orch_free(buf);
	T_ERR(orch_read_file("/nonexistent/x", 10, &buf, &n, &e), ORCH_EIO);
	T_TRUE(strstr(e.msg, "/nonexistent/x") != NULL);
	T_ERR(orch_read_file(t_path("models/stories260K.gguf"), 1000, &buf, &n, &e), ORCH_ERANGE);
	T_OK(orch_read_file("/dev/null", 10, &buf, &n, &e));
	T_EQ(n, 0);
	T_STREQ(buf, "");
	orch_free(buf);
}

int
main(void)
{
	T_RUN(test_read);
	return t_done();
}
