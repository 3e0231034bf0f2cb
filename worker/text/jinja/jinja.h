#pragma once
/*
 * jinja.h - the chat-template interpreter: the subset of Jinja that model
 * chat templates use, with jinja2's semantics as Hugging Face transformers
 * configures them (trim_blocks, lstrip_blocks, no trailing newline kept,
 * undefined values that are falsy and print as "", transformers' tojson,
 * loop controls, raise_exception, strftime_now). docs/chat-templates.md
 * lists what is supported.
 *
 * A compiled template is immutable: any number of threads may render it at once.
 */
#include <stdint.h>

#include "base/err.h"
#include "base/sbuf.h"

struct jinja_tmpl;

/*
 * jinja_compile - parse @len bytes of @src; @name appears in messages
 * ("NAME:LINE:COL: what"). ORCH_ETEMPLATE for a syntax error, ORCH_ENOMEM.
 */
orch_err jinja_compile(const char *name, const char *src, size_t len, struct jinja_tmpl **ret,
                       struct orch_errinfo *reterr);

/* jinja_free - NULL is fine. */
void jinja_free(struct jinja_tmpl *t);

struct jinja_opts {
	int64_t now; /* seconds since the epoch (UTC) that strftime_now formats; < 0: the clock */
};

/*
 * jinja_render - render @t with the members of the JSON object @vars
 * (a cJSON *: messages, tools, bos_token, ...) as variables, appending to
 * @out. ORCH_ETEMPLATE_RAISE when the template called raise_exception()
 * (reterr->msg is exactly its message), ORCH_ETEMPLATE for a runtime error
 * ("NAME:LINE:COL: what"), ORCH_ENOMEM. @out may hold partial output on error.
 */
orch_err jinja_render(const struct jinja_tmpl *t, const void *vars, const struct jinja_opts *o,
                      struct sbuf *out, struct orch_errinfo *reterr);
