/* http_static_test.c - the chat page's compiled-in files: the table, the lookup, If-None-Match. */
#include <string.h>

#include "http_static.h"
#include "t.h"

/* Every file of supervisor/orchd/web/ is in, whole, with a quoted 16-digit ETag. */
static void
test_table(void)
{
	static const char *const paths[] = {"/index.html", "/chat.js", "/chat.css", "/favicon.svg"};

	T_EQ(http_static_n_files, sizeof(paths) / sizeof(paths[0]));
	for (size_t i = 0; i < sizeof(paths) / sizeof(paths[0]); i++) {
		const struct http_static_file *f = http_static_find(paths[i]);
		T_TRUE(f != NULL);
		T_STREQ(f->path, paths[i]);
		T_TRUE(f->n > 100);
		T_EQ(f->bytes[f->n], 0);
		T_EQ(strlen(f->etag), 18);
		T_TRUE(f->etag[0] == '"' && f->etag[17] == '"');
		T_EQ(strspn(f->etag + 1, "0123456789abcdef"), 16);
	}
	T_TRUE(http_static_find("/") == http_static_find("/index.html"));
	T_TRUE(memcmp(http_static_find("/")->bytes, "<!doctype html>", 15) == 0);
	T_TRUE(strcmp(http_static_find("/chat.js")->etag, http_static_find("/chat.css")->etag) !=
	       0);
	T_TRUE(http_static_find("/chat.js/") == NULL);
	T_TRUE(http_static_find("chat.js") == NULL);
	T_TRUE(http_static_find("/index") == NULL);
	T_TRUE(http_static_find("") == NULL);
}

/* If-None-Match: a list, weak or strong, "*"; nothing else matches. */
static void
test_etag_match(void)
{
	static const char *const yes[] = {"\"0123456789abcdef\"",
	                                  "W/\"0123456789abcdef\"",
	                                  "\"x\", \"0123456789abcdef\"",
	                                  "\"x\",W/\"0123456789abcdef\" ",
	                                  "*",
	                                  " \"0123456789abcdef\"\t, \"y\""};
	static const char *const no[] = {"",
	                                 "\"0123456789abcde\"",
	                                 "\"0123456789abcdef",
	                                 "0123456789abcdef",
	                                 "\"x\", \"y\"",
	                                 "w/\"0123456789abcdef\"",
	                                 "\"0123456789abcdef\"x",
	                                 ",,,"};
	const char *tag = "\"0123456789abcdef\"";

	for (size_t i = 0; i < sizeof(yes) / sizeof(yes[0]); i++)
		T_TRUE(http_static_etag_match(yes[i], tag));
	for (size_t i = 0; i < sizeof(no) / sizeof(no[0]); i++)
		T_TRUE(!http_static_etag_match(no[i], tag));
	T_TRUE(!http_static_etag_match(NULL, tag));
}

int
main(void)
{
	T_RUN(test_table);
	T_RUN(test_etag_match);
	return t_done();
}
