/*
 * ipc_test - the supervisor <-> worker channel: every message survives
 * encode/decode; ipc_check refuses each kind of invalid message; a live
 * pair over ipc:// and tcp:// carries envelopes both ways, times out,
 * signals its pollable fd, and survives random bytes, truncated and
 * oversized messages from a raw NNG peer; protocol versions are checked.
 */
#include <poll.h>
#include <pthread.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

#include <nng/nng.h>
#include <nng/protocol/pair1/pair.h>

#include "base/finish.h"
#include "base/rng.h"
#include "ipc/debug.h"
#include "ipc/ipc.h"
#include "t.h"

/* protobuf-c's strings are char *: writable copies of the literals the tests use */
static char s0[] = "w1";
static char s1[] = "cpu";
static char s2[] = "system";
static char s3[] = "Be brief.";
static char s4[] = "user";
static char s5[] = "Hi — 世界";
static char s6[] = "req-1";
static char s7[] = ",";
static char s8[] = "é";
static char s9[] = "x.gguf: not a GGUF file";
static char s10[] = "\n\n";
static char s11[] = "User:";
static char s12[] = "";

/* Pack @env into a new buffer (*@n bytes). */
static uint8_t *
pack(const Orch__Envelope *env, size_t *n)
{
	*n = orch__envelope__get_packed_size(env);
	uint8_t *b = malloc(*n ? *n : 1);
	if (b != NULL)
		orch__envelope__pack(env, b);
	return b;
}

/* Encode @env, decode it again: the codes of ipc_decode, the copy in *@out. */
static orch_err
round_trip(const Orch__Envelope *env, Orch__Envelope **out)
{
	size_t n;
	uint8_t *b = pack(env, &n);
	orch_err e = ipc_decode(b, n, out, NULL);

	free(b);
	return e;
}

/* A chat Submit with sampling parameters and stop strings survives encode and decode. */
static void
test_round_trip_submit(void)
{
	Orch__Envelope env = ORCH__ENVELOPE__INIT, *out = NULL;
	Orch__Submit sub = ORCH__SUBMIT__INIT;
	Orch__SamplingParams sp = ORCH__SAMPLING_PARAMS__INIT;
	Orch__ChatMessage m0 = ORCH__CHAT_MESSAGE__INIT, m1 = ORCH__CHAT_MESSAGE__INIT;
	Orch__ChatMessage *msgs[2] = {&m0, &m1};
	char *stops[2] = {s10, s11};

	m0.role = s2;
	m0.content = s3;
	m1.role = s4;
	m1.content = s5;
	sp.temperature = 0.7f;
	sp.top_k = 40;
	sp.top_p = 0.9f;
	sp.min_p = 0.05f;
	sp.repeat_penalty = 1.1f;
	sp.has_seed = true;
	sp.seed = 1ull << 40;
	sub.job_id = 42;
	sub.chat = true;
	sub.n_messages = 2;
	sub.messages = msgs;
	sub.sampling = &sp;
	sub.n_stop = 2;
	sub.stop = stops;
	sub.max_tokens = 64;
	sub.correlation_id = s6;
	env.body_case = ORCH__ENVELOPE__BODY_SUBMIT;
	env.submit = &sub;
	T_OK(round_trip(&env, &out));
	T_EQ(out->submit->job_id, 42);
	T_EQ(out->submit->n_messages, 2);
	T_STREQ(out->submit->messages[1]->content, "Hi — 世界");
	T_EQ(out->submit->sampling->seed, 1ull << 40);
	T_STREQ(out->submit->stop[1], "User:");
	ipc_envelope_free(out);
}

static void
test_round_trips(void)
{
	Orch__Envelope env = ORCH__ENVELOPE__INIT, *out = NULL;
	Orch__Hello hello = ORCH__HELLO__INIT;
	Orch__TokenEntry t0 = ORCH__TOKEN_ENTRY__INIT, t1 = ORCH__TOKEN_ENTRY__INIT;
	Orch__TokenEntry *toks[2] = {&t0, &t1};
	Orch__TokenBatch tb = ORCH__TOKEN_BATCH__INIT;
	Orch__End end = ORCH__END__INIT;
	Orch__Error err = ORCH__ERROR__INIT;

	hello.protocol_version = IPC_PROTOCOL_VERSION;
	hello.worker_id = s0;
	hello.device = s1;
	env.body_case = ORCH__ENVELOPE__BODY_HELLO;
	env.hello = &hello;
	T_OK(round_trip(&env, &out));
	T_EQ(out->body_case, ORCH__ENVELOPE__BODY_HELLO);
	T_STREQ(out->hello->worker_id, "w1");
	T_OK(ipc_check_hello(out->hello, NULL, NULL));
	ipc_envelope_free(out);

	t0.job_id = 42;
	t0.index = 0;
	t0.token_id = 432;
	t0.text = s7;
	t1.job_id = 7;
	t1.index = 3;
	t1.token_id = -1; /* text released at the end */
	t1.text = s8;
	Orch__TopLogprob alt = ORCH__TOP_LOGPROB__INIT, *alts[1] = {&alt};
	alt.token_id = 432;
	alt.logprob = -0.25f;
	alt.piece = (ProtobufCBinaryData){1, (uint8_t *)","};
	t0.has_logprob = true;
	t0.logprob = -0.25f;
	t0.piece = alt.piece;
	t0.n_top_logprobs = 1;
	t0.top_logprobs = alts;
	tb.step = 9;
	tb.n_tokens = 2;
	tb.tokens = toks;
	env.body_case = ORCH__ENVELOPE__BODY_TOKEN_BATCH;
	env.token_batch = &tb;
	T_OK(round_trip(&env, &out));
	T_EQ(out->token_batch->n_tokens, 2);
	T_EQ(out->token_batch->tokens[1]->token_id, -1);
	T_STREQ(out->token_batch->tokens[1]->text, "é");
	T_TRUE(out->token_batch->tokens[0]->has_logprob);
	T_EQ(out->token_batch->tokens[0]->n_top_logprobs, 1);
	T_EQ(out->token_batch->tokens[0]->top_logprobs[0]->piece.len, 1);
	T_TRUE(out->token_batch->tokens[0]->top_logprobs[0]->logprob == -0.25f);
	ipc_envelope_free(out);

	end.job_id = 42;
	end.tokens_out = 64;
	end.finish_reason = ORCH__FINISH_REASON__FINISH_LENGTH;
	env.body_case = ORCH__ENVELOPE__BODY_END;
	env.end = &end;
	T_OK(round_trip(&env, &out));
	T_EQ(out->end->finish_reason, ORCH__FINISH_REASON__FINISH_LENGTH);
	ipc_envelope_free(out);

	err.job_id = 0;
	err.code = ORCH__ERROR_CODE__MODEL_LOAD_FAILED;
	err.message = s9;
	err.bytes_needed = 1;
	env.body_case = ORCH__ENVELOPE__BODY_ERROR;
	env.error = &err;
	T_OK(round_trip(&env, &out));
	T_EQ(out->error->code, orch_err_proto(ORCH_EMODEL_LOAD));
	ipc_envelope_free(out);
}

/* Each invalid message is refused with ORCH_EPROTO, by ipc_check and after decoding. */
/* orch.proto's FinishReason follows common/base/finish.c's table. */
static void
test_finish_table(void)
{
	enum orch_finish f;

	T_EQ(orch_finish_proto(ORCH_FINISH_STOP), ORCH__FINISH_REASON__FINISH_STOP);
	T_EQ(orch_finish_proto(ORCH_FINISH_LENGTH), ORCH__FINISH_REASON__FINISH_LENGTH);
	T_EQ(orch_finish_proto(ORCH_FINISH_EOS), ORCH__FINISH_REASON__FINISH_EOS);
	T_EQ(orch_finish_proto(ORCH_FINISH_CANCELLED), 0);
	T_EQ(orch_finish_proto(ORCH_FINISH_ERROR), 0);
	T_TRUE(!orch_finish_from_proto(ORCH__FINISH_REASON__FINISH_UNSPECIFIED, &f));
	T_TRUE(orch_finish_from_proto(ORCH__FINISH_REASON__FINISH_EOS, &f));
	T_EQ(f, ORCH_FINISH_EOS);
	T_TRUE(orch_finish_from_proto(ORCH__FINISH_REASON__FINISH_TOOL_CALLS, &f));
	T_EQ(f, ORCH_FINISH_TOOL_CALLS);
	T_STREQ(orch_finish_openai(ORCH_FINISH_TOOL_CALLS), "tool_calls");
	T_TRUE(!orch_finish_from_proto(ORCH__FINISH_REASON__FINISH_TOOL_CALLS + 1, &f));
	T_STREQ(orch_finish_openai(ORCH_FINISH_EOS), "stop");
	T_STREQ(orch_finish_openai(ORCH_FINISH_LENGTH), "length");
	T_STREQ(orch_finish_name(ORCH_FINISH_EOS), "eos");
}

static void
test_invalid(void)
{
	Orch__Envelope env = ORCH__ENVELOPE__INIT, *out = NULL;
	Orch__Submit sub = ORCH__SUBMIT__INIT;
	Orch__SamplingParams sp = ORCH__SAMPLING_PARAMS__INIT;
	Orch__Hello hello = ORCH__HELLO__INIT;
	Orch__Cancel cancel = ORCH__CANCEL__INIT;
	Orch__Error err = ORCH__ERROR__INIT;
	Orch__LoadProgress lp = ORCH__LOAD_PROGRESS__INIT;
	char *empty_stop[1] = {s12};

	T_ERR(ipc_check(&env, NULL), ORCH_EPROTO); /* no body */
	T_ERR(round_trip(&env, &out), ORCH_EPROTO);
	env.body_case = ORCH__ENVELOPE__BODY_SUBMIT;
	env.submit = &sub;
	T_ERR(ipc_check(&env, NULL), ORCH_EPROTO); /* job_id 0 */
	sub.job_id = 1;
	T_OK(ipc_check(&env, NULL));
	sub.chat = true;
	T_ERR(ipc_check(&env, NULL), ORCH_EPROTO); /* chat without messages */
	sub.chat = false;
	sub.n_stop = 1;
	sub.stop = empty_stop;
	T_ERR(ipc_check(&env, NULL), ORCH_EPROTO);
	sub.n_stop = 0;
	sub.logprobs = true;
	sub.top_logprobs = 20;
	T_OK(ipc_check(&env, NULL));
	sub.top_logprobs = 21;
	T_ERR(ipc_check(&env, NULL), ORCH_EPROTO);
	sub.top_logprobs = 0;
	sub.sampling = &sp;
	sp.top_p = 1.0f;
	sp.repeat_penalty = 1.0f;
	T_OK(ipc_check(&env, NULL));
	sp.temperature = 2.5f;
	T_ERR(ipc_check(&env, NULL), ORCH_EPROTO);
	T_ERR(round_trip(&env, &out), ORCH_EPROTO);
	sp.temperature = 0.0f / 0.0f;
	T_ERR(ipc_check(&env, NULL), ORCH_EPROTO);
	sp.temperature = 1.0f;
	sp.top_p = 1.5f;
	T_ERR(ipc_check(&env, NULL), ORCH_EPROTO);

	env.body_case = ORCH__ENVELOPE__BODY_HELLO;
	env.hello = &hello;
	T_ERR(ipc_check(&env, NULL), ORCH_EPROTO); /* version 0 */
	hello.protocol_version = IPC_PROTOCOL_VERSION + 1;
	T_OK(ipc_check(&env, NULL));
	struct orch_errinfo ei = {0};
	T_ERR(ipc_check_hello(&hello, NULL, &ei), ORCH_EPROTO);
	T_TRUE(strstr(ei.msg, "protocol version 2, this build speaks 1") != NULL);
	/* another build: refused when the caller names its own */
	char other[] = "orch-0.0.9+abc", w1[] = "w1";
	hello.protocol_version = IPC_PROTOCOL_VERSION;
	hello.build_id = other;
	hello.worker_id = w1;
	T_OK(ipc_check_hello(&hello, NULL, &ei));
	T_OK(ipc_check_hello(&hello, "orch-0.0.9+abc", &ei));
	T_ERR(ipc_check_hello(&hello, "orch-0.1.0+def", &ei), ORCH_EPROTO);
	T_TRUE(strstr(ei.msg,
	              "peer w1 is build 'orch-0.0.9+abc', this is build 'orch-0.1.0+def'") != NULL);
	T_ERR(ipc_check_hello(&hello, "", &ei), ORCH_EPROTO);
	hello.protocol_version = IPC_PROTOCOL_VERSION + 1;

	env.body_case = ORCH__ENVELOPE__BODY_CANCEL;
	env.cancel = &cancel;
	T_ERR(ipc_check(&env, NULL), ORCH_EPROTO);
	env.body_case = ORCH__ENVELOPE__BODY_ERROR;
	env.error = &err;
	T_ERR(ipc_check(&env, NULL), ORCH_EPROTO); /* code unspecified */
	err.code = 99;
	T_ERR(ipc_check(&env, NULL), ORCH_EPROTO);
	env.body_case = ORCH__ENVELOPE__BODY_LOAD_PROGRESS;
	env.load_progress = &lp;
	lp.percent = 101;
	T_ERR(ipc_check(&env, NULL), ORCH_EPROTO);

	/* bytes that are no envelope, and an envelope over the limit */
	static const uint8_t junk[] = {0xff, 0xff, 0xff, 0xff, 0x0f};
	T_ERR(ipc_decode(junk, sizeof(junk), &out, NULL), ORCH_EPROTO);
	T_TRUE(out == NULL);
	uint8_t *big = calloc(1, (size_t)IPC_MAX_MSG + 1);
	T_ERR(ipc_decode(big, (size_t)IPC_MAX_MSG + 1, &out, NULL), ORCH_EPROTO);
	free(big);
}

/* Tokenize and TokenizeResult: round trip, and ipc_check's rules. */
static void
test_tokenize(void)
{
	Orch__Envelope env = ORCH__ENVELOPE__INIT, *out = NULL;
	Orch__Tokenize tk = ORCH__TOKENIZE__INIT;
	Orch__TokenizeResult tr = ORCH__TOKENIZE_RESULT__INIT;
	Orch__ChatMessage msg = ORCH__CHAT_MESSAGE__INIT, *msgs[1] = {&msg};
	int32_t ids[3] = {1, 2, 3}, neg[1] = {-1};
	char text[] = "Hello", role[] = "user",
	     str0[] = "\xc4\xa0"
	              "a",
	     str1[] = "b", str2[] = "c";
	char *strs[3] = {str0, str1, str2};
	uint8_t bytes[] = {0xe4, 0xb8};
	ProtobufCBinaryData pieces[3] = {{2, bytes}, {1, bytes}, {0, NULL}};

	env.body_case = ORCH__ENVELOPE__BODY_TOKENIZE;
	env.tokenize = &tk;
	T_ERR(ipc_check(&env, NULL), ORCH_EPROTO); /* request_id 0 */
	tk.request_id = 7;
	tk.text = text;
	T_OK(round_trip(&env, &out));
	T_EQ(out->tokenize->request_id, 7);
	T_STREQ(out->tokenize->text, "Hello");
	ipc_envelope_free(out);
	tk.n_tokens = 3; /* tokens to tokenize */
	tk.tokens = ids;
	T_ERR(ipc_check(&env, NULL), ORCH_EPROTO);
	tk.detokenize = true; /* ... and text to detokenize */
	T_ERR(ipc_check(&env, NULL), ORCH_EPROTO);
	tk.text = (char *)protobuf_c_empty_string;
	T_OK(ipc_check(&env, NULL));
	tk.detokenize = false;
	tk.n_tokens = 0;
	tk.n_messages = 1;
	tk.messages = msgs;
	T_ERR(ipc_check(&env, NULL), ORCH_EPROTO); /* a message without a role */
	msg.role = role;
	T_OK(ipc_check(&env, NULL));

	env.body_case = ORCH__ENVELOPE__BODY_TOKENIZE_RESULT;
	env.tokenize_result = &tr;
	T_ERR(ipc_check(&env, NULL), ORCH_EPROTO); /* request_id 0 */
	tr.request_id = 7;
	tr.n_tokens = 3;
	tr.tokens = ids;
	tr.n_pieces = 3;
	tr.pieces = pieces;
	tr.n_strings = 3;
	tr.strings = strs;
	T_OK(round_trip(&env, &out));
	T_EQ(out->tokenize_result->n_tokens, 3);
	T_EQ(out->tokenize_result->pieces[0].len, 2);
	T_STREQ(out->tokenize_result->strings[0], "\xc4\xa0"
	                                          "a");
	ipc_envelope_free(out);
	tr.n_strings = 2; /* not one per token */
	T_ERR(ipc_check(&env, NULL), ORCH_EPROTO);
	tr.n_strings = 0;
	pieces[2].len = IPC_MAX_PIECE + 1;
	T_ERR(ipc_check(&env, NULL), ORCH_EPROTO);
	pieces[2].len = 0;
	tr.tokens = neg;
	tr.n_tokens = 1;
	tr.n_pieces = 0;
	T_ERR(ipc_check(&env, NULL), ORCH_EPROTO); /* a negative token */
	tr.n_tokens = 0;
	tr.code = 99;
	T_ERR(ipc_check(&env, NULL), ORCH_EPROTO);
	tr.code = ORCH__ERROR_CODE__INVALID_REQUEST;
	T_OK(ipc_check(&env, NULL));
}

/* An envelope with a Cancel of @job. */
static Orch__Envelope
cancel_env(Orch__Cancel *c, uint64_t job)
{
	Orch__Envelope env = ORCH__ENVELOPE__INIT;

	c->job_id = job;
	env.body_case = ORCH__ENVELOPE__BODY_CANCEL;
	env.cancel = c;
	return env;
}

static void
live_pair(const char *url)
{
	struct ipc_chan *srv = NULL, *cli = NULL;
	Orch__Cancel c = ORCH__CANCEL__INIT;
	Orch__Envelope env = cancel_env(&c, 5), *out = NULL;
	nng_socket raw;

	T_OK(ipc_open(url, IPC_LISTEN, &srv, NULL));
	T_OK(ipc_open(url, IPC_DIAL, &cli, NULL));
	T_OK(ipc_send(cli, &env, 5000, NULL));
	T_OK(ipc_recv(srv, 5000, &out, NULL));
	T_EQ(out->cancel->job_id, 5);
	ipc_envelope_free(out);
	env = cancel_env(&c, 6); /* and the other way */
	T_OK(ipc_send(srv, &env, 5000, NULL));
	T_OK(ipc_recv(cli, 5000, &out, NULL));
	T_EQ(out->cancel->job_id, 6);
	ipc_envelope_free(out);
	T_ERR(ipc_recv(srv, 0, &out, NULL), ORCH_EAGAIN);
	T_ERR(ipc_recv(srv, 50, &out, NULL), ORCH_EAGAIN);

	/* the pollable fd */
	int fd = ipc_recv_fd(srv);
	T_TRUE(fd >= 0);
	env = cancel_env(&c, 7);
	T_OK(ipc_send(cli, &env, 5000, NULL));
	struct pollfd p = {fd, POLLIN, 0};
	T_EQ(poll(&p, 1, 5000), 1);
	T_OK(ipc_recv(srv, 0, &out, NULL));
	T_EQ(out->cancel->job_id, 7);
	ipc_envelope_free(out);

	/*
	 * A raw peer sends garbage: each is dropped with EPROTO, then a good one
	 * arrives. It talks to a fresh listener: pair1 refuses a second peer, and
	 * the old listener may not have seen the first one hang up yet, which
	 * would lose the first message with the refused pipe.
	 */
	ipc_close(cli);
	ipc_close(srv);
	T_OK(ipc_open(url, IPC_LISTEN, &srv, NULL));
	T_TRUE(nng_pair1_open(&raw) == 0);
	T_TRUE(nng_dial(raw, url, NULL, 0) == 0);
	struct rng r;
	uint8_t junk[300];
	rng_seed(&r, 99);
	for (size_t i = 0; i < sizeof(junk); i++)
		junk[i] = (uint8_t)rng_next(&r);
	size_t n;
	env = cancel_env(&c, 8);
	uint8_t *good = pack(&env, &n);
	/* one at a time: a pair1 peer holds few unread messages */
	orch_err e;
	T_TRUE(nng_send(raw, junk, sizeof(junk), 0) == 0);
	if ((e = ipc_recv(srv, 5000, &out, NULL)) == ORCH_OK) /* random bytes may decode */
		ipc_envelope_free(out);
	else
		T_ERR(e, ORCH_EPROTO);
	T_TRUE(nng_send(raw, good, n - 1, 0) == 0); /* truncated */
	T_ERR(ipc_recv(srv, 5000, &out, NULL), ORCH_EPROTO);
	uint8_t *big = calloc(1, (size_t)IPC_MAX_MSG + 10);
	T_TRUE(nng_send(raw, big, (size_t)IPC_MAX_MSG + 10, 0) == 0); /* oversized */
	T_ERR(ipc_recv(srv, 5000, &out, NULL), ORCH_EPROTO);
	T_TRUE(nng_send(raw, good, n, 0) == 0);
	T_OK(ipc_recv(srv, 5000, &out, NULL));
	T_EQ(out->cancel->job_id, 8);
	ipc_envelope_free(out);
	free(big);
	free(good);
	nng_close(raw);
	ipc_close(srv);
}

static void
test_live_ipc(void)
{
	char url[128];

	snprintf(url, sizeof(url), "ipc:///tmp/orch-ipc-test-%d.sock", (int)getpid());
	live_pair(url);
	unlink(url + strlen("ipc://"));
}

static void
test_live_tcp(void)
{
	char url[64];

	/* below the ephemeral range (32768-60999), where no client connection sits */
	snprintf(url, sizeof(url), "tcp://127.0.0.1:%d", 20000 + (int)(getpid() % 12000));
	live_pair(url);
}

static void
test_open_errors(void)
{
	struct ipc_chan *c = NULL;
	struct orch_errinfo e = {0};

	T_ERR(ipc_open("bogus://x", IPC_LISTEN, &c, &e), ORCH_EINVAL);
	T_TRUE(c == NULL && strstr(e.msg, "bogus://x") != NULL);
	T_ERR(ipc_open("ipc:///nonexistent-dir/x.sock", IPC_LISTEN, &c, &e), ORCH_EIO);
	T_STREQ(ipc_body_name(ORCH__ENVELOPE__BODY_TOKEN_BATCH), "token_batch");
	T_STREQ(ipc_body_name((Orch__Envelope__BodyCase)99), "unknown");
}

struct dump_req {
	const char *url;
	orch_err rv;
	struct sbuf out;
};

static void *
dump_thread(void *arg)
{
	struct dump_req *r = arg;

	r->rv = ipc_debug_dump(r->url, 5000, &r->out, NULL);
	return NULL;
}

/* The debug stream's control URL, topic filtering and a request answered. */
static void
test_debug_stream(void)
{
	char ctl[64], url[128], req[16];
	struct orch_errinfo e = {0};
	struct ipc_debug *d = NULL;
	struct ipc_debug_sub *all = NULL, *steps = NULL;
	struct sbuf r = {0};
	const char *only_step[] = {"step"};

	T_OK(ipc_debug_ctl_url("ipc:///run/orch/w1.debug", ctl, sizeof(ctl), NULL));
	T_STREQ(ctl, "ipc:///run/orch/w1.debug.ctl");
	T_OK(ipc_debug_ctl_url("tcp://127.0.0.1:7000", ctl, sizeof(ctl), NULL));
	T_STREQ(ctl, "tcp://127.0.0.1:7001");
	T_ERR(ipc_debug_ctl_url("tcp://127.0.0.1:65535", ctl, sizeof(ctl), &e), ORCH_EINVAL);
	T_ERR(ipc_debug_ctl_url("tcp://127.0.0.1:x", ctl, sizeof(ctl), &e), ORCH_EINVAL);
	T_ERR(ipc_debug_ctl_url("tcp://127.0.0.1", ctl, sizeof(ctl), &e), ORCH_EINVAL);
	T_ERR(ipc_debug_ctl_url("inproc://x", ctl, sizeof(ctl), &e), ORCH_EINVAL);
	T_TRUE(strstr(e.msg, "inproc://x") != NULL);
	T_ERR(ipc_debug_ctl_url("ipc://", ctl, sizeof(ctl), &e), ORCH_EINVAL);
	T_ERR(ipc_debug_ctl_url("ipc:///a/very/long/path/that/does/not/fit/in/sixty/four/bytes",
	                        ctl, sizeof(ctl), &e),
	      ORCH_EINVAL);

	snprintf(url, sizeof(url), "ipc:///tmp/orch-ipc-debug-%d.sock", (int)getpid());
	T_OK(ipc_debug_open(url, &d, NULL));
	T_TRUE(ipc_debug_request_fd(d) >= 0);
	T_OK(ipc_debug_sub_open(url, NULL, 0, &all, NULL));
	T_OK(ipc_debug_sub_open(url, only_step, 1, &steps, NULL));
	/* subscriptions connect in the background: publish until both have one */
	bool got_all = false, got_step = false;
	for (int i = 0; i < 500 && !(got_all && got_step); i++) {
		ipc_debug_publishf(d, "log", "event=x n=%d", i);
		ipc_debug_publishf(d, "step", "step=%d", i);
		ipc_debug_publish(d, "stepx", "no", 2); /* not "step": filtered out */
		while (ipc_debug_sub_next(all, 5, &r, NULL) == ORCH_OK)
			got_all |= strncmp(r.p, "log event=x n=", 14) == 0;
		while (ipc_debug_sub_next(steps, 5, &r, NULL) == ORCH_OK) {
			T_TRUE(strncmp(r.p, "step step=", 10) == 0);
			got_step = true;
		}
	}
	T_TRUE(got_all && got_step);
	T_TRUE(!ipc_debug_request(d, req, sizeof(req)));

	/* a dump request from another thread: poll, take, reply */
	struct dump_req dr = {url, ORCH_EIO, {0}};
	pthread_t th;
	T_TRUE(pthread_create(&th, NULL, dump_thread, &dr) == 0);
	struct pollfd p = {ipc_debug_request_fd(d), POLLIN, 0};
	T_EQ(poll(&p, 1, 5000), 1);
	T_TRUE(ipc_debug_request(d, req, sizeof(req)));
	T_STREQ(req, "dump");
	T_OK(ipc_debug_reply(d, "worker id=x\n", 12, NULL));
	pthread_join(th, NULL);
	T_OK(dr.rv);
	T_STREQ(dr.out.p, "worker id=x\n");
	sbuf_fini(&dr.out);

	/* nobody there: a dump times out */
	ipc_debug_sub_close(all);
	ipc_debug_sub_close(steps);
	ipc_debug_close(d);
	T_ERR(ipc_debug_dump(url, 200, &r, &e), ORCH_EAGAIN);
	T_ERR(ipc_debug_open("bogus://x", &d, &e), ORCH_EINVAL);
	T_TRUE(d == NULL);
	T_ERR(ipc_debug_sub_open("bogus://x", NULL, 0, &all, &e), ORCH_EINVAL);
	sbuf_fini(&r);
	unlink(url + strlen("ipc://"));
	char path[160];
	snprintf(path, sizeof(path), "%s.ctl", url + strlen("ipc://"));
	unlink(path);
}

int
main(void)
{
	T_RUN(test_round_trips);
	T_RUN(test_round_trip_submit);
	T_RUN(test_finish_table);
	T_RUN(test_invalid);
	T_RUN(test_tokenize);
	T_RUN(test_live_ipc);
	T_RUN(test_live_tcp);
	T_RUN(test_open_errors);
	T_RUN(test_debug_stream);
	return t_done();
}
