/*
 * serve_entries.c - a step's TokenEntry messages: made as the scheduler's
 * callbacks report tokens (their strings gathered in serve.text, which moves
 * as it grows), sent together when the step ends, in TokenBatches of at most
 * IPC_MAX_BATCH entries. The arrays grow for a step that reports more than
 * the usual three entries a job (a prompt sent back, serve_echo.c).
 */
#include "base/alloc.h"
#include "serve_int.h"

/* Room for one more entry. */
static bool
room(struct serve *sv)
{
	uint32_t cap = 2 * sv->cap_entries;

	if (sv->n_entries < sv->cap_entries)
		return true;
	Orch__TokenEntry *e = orch_reallocarray(sv->entries, cap, sizeof(*e));
	if (e != NULL)
		sv->entries = e;
	struct entry_text *o = e ? orch_reallocarray(sv->text_off, cap, sizeof(*o)) : NULL;
	if (o != NULL)
		sv->text_off = o;
	Orch__TokenEntry **p = o ? orch_reallocarray(sv->entry_ptrs, cap, sizeof(*p)) : NULL;
	if (p == NULL)
		return false;
	sv->entry_ptrs = p;
	sv->cap_entries = cap;
	return true;
}

Orch__TokenEntry *
serve_entry(struct serve *sv, uint64_t job, const char *text, size_t n, struct entry_text **ret_o)
{
	if (!room(sv))
		return NULL;
	struct entry_text *o = &sv->text_off[sv->n_entries];
	Orch__TokenEntry *e = &sv->entries[sv->n_entries];
	*o = (struct entry_text){.text = sv->text.n, .channel = SIZE_MAX, .recipient = SIZE_MAX};
	orch__token_entry__init(e);
	e->job_id = job;
	sbuf_put(&sv->text, text, n);
	sbuf_putc(&sv->text, '\0');
	if (sv->text.oom)
		return NULL;
	sv->n_entries++;
	*ret_o = o;
	return e;
}

struct serve_mark
serve_entries_mark(const struct serve *sv)
{
	return (struct serve_mark){sv->n_entries, sv->text.n, sv->n_tops};
}

void
serve_entries_undo(struct serve *sv, struct serve_mark m)
{
	sv->n_entries = m.entries;
	sv->n_tops = m.tops;
	sv->text.oom = false;
	sv->text.n = m.text;
	if (sv->text.p != NULL)
		sv->text.p[m.text] = '\0';
}

void
serve_entries_send(struct serve *sv, uint64_t sampled_ns)
{
	sv->last_entries = sv->n_entries;
	for (uint32_t i = 0; i < sv->n_entries; i++) { /* the buffer has stopped moving */
		const struct entry_text *o = &sv->text_off[i];
		sv->entries[i].text = sv->text.p + o->text;
		if (o->channel != SIZE_MAX) {
			sv->entries[i].channel = sv->text.p + o->channel;
			sv->entries[i].recipient = sv->text.p + o->recipient;
		}
		serve_lp_fix(sv, i);
		sv->entry_ptrs[i] = &sv->entries[i];
	}
	for (uint32_t at = 0; at < sv->n_entries; at += IPC_MAX_BATCH) {
		Orch__Envelope env = ORCH__ENVELOPE__INIT;
		Orch__TokenBatch tb = ORCH__TOKEN_BATCH__INIT;
		tb.step = sv->steps;
		tb.sampled_ns = sampled_ns;
		tb.n_tokens =
		        sv->n_entries - at < IPC_MAX_BATCH ? sv->n_entries - at : IPC_MAX_BATCH;
		tb.tokens = sv->entry_ptrs + at;
		env.body_case = ORCH__ENVELOPE__BODY_TOKEN_BATCH;
		env.token_batch = &tb;
		serve_send(sv, &env);
	}
	sbuf_clear(&sv->text);
	sv->n_entries = 0;
	sv->n_tops = 0;
}
