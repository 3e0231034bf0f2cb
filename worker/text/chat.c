#include "chat.h"

#include <string.h>

#include "gguf/gguf.h"
#include "text/jinja/jinja.h"

const char chat_fallback_template[] =
        "{% for message in messages %}"
        "{{ message['role'] | capitalize }}: {{ message['content'] }}\n\n"
        "{% endfor %}"
        "{% if add_generation_prompt %}Assistant:{% endif %}";

orch_err
chat_template_from_gguf(const struct gguf_file *f, struct jinja_tmpl **ret, bool *ret_fallback,
                        struct orch_errinfo *reterr)
{
	struct gguf_str s;

	if (gguf_get_str(f, "tokenizer.chat_template", &s) == ORCH_OK && s.len > 0) {
		*ret_fallback = false;
		return jinja_compile("tokenizer.chat_template", s.ptr, (size_t)s.len, ret, reterr);
	}
	*ret_fallback = true;
	return jinja_compile("fallback", chat_fallback_template, strlen(chat_fallback_template),
	                     ret, reterr);
}
