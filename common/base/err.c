#include "err.h"

#include <stdarg.h>
#include <stdio.h>
#include <string.h>

/*
 * Wire codes and their protobuf ErrorCode values. The order is the proto
 * enum's order (value = index + 1); append only.
 */
enum wire {
	W_OK,
	W_INVALID_REQUEST,
	W_MODEL_NOT_FOUND,
	W_MODEL_LOAD_FAILED,
	W_INSUFFICIENT_VRAM,
	W_VRAM_OOM,
	W_CUDA_ERROR,
	W_CONTEXT_LENGTH_EXCEEDED,
	W_INFERENCE_TIMEOUT,
	W_CANCELLED,
	W_WORKER_LOST,
	W_QUEUE_FULL,
	W_INTERNAL,
	W_UNAUTHORIZED,
	W_OVERLOADED,
	W_JOB_NOT_FOUND,
	W_NOT_FOUND,
	W_LENGTH_REQUIRED,
	W_PAYLOAD_TOO_LARGE,
	W_UNSUPPORTED_MEDIA_TYPE,
	W_MISDIRECTED_REQUEST,
	W_HEADERS_TOO_LARGE,
	W_METHOD_NOT_ALLOWED,
	W_NOT_IMPLEMENTED,
	W_EXPECTATION_FAILED,
	W_DEADLINE_EXCEEDED,
};

static const struct {
	const char *name;
	int http;
	bool retriable;
} wires[] = {
        [W_OK] = {"OK", 200, false},
        [W_INVALID_REQUEST] = {"INVALID_REQUEST", 400, false},
        [W_MODEL_NOT_FOUND] = {"MODEL_NOT_FOUND", 404, false},
        [W_MODEL_LOAD_FAILED] = {"MODEL_LOAD_FAILED", 503, false},
        [W_INSUFFICIENT_VRAM] = {"INSUFFICIENT_VRAM", 503, true},
        [W_VRAM_OOM] = {"VRAM_OOM", 503, true},
        [W_CUDA_ERROR] = {"CUDA_ERROR", 500, true},
        [W_CONTEXT_LENGTH_EXCEEDED] = {"CONTEXT_LENGTH_EXCEEDED", 400, false},
        [W_INFERENCE_TIMEOUT] = {"INFERENCE_TIMEOUT", 504, true},
        [W_CANCELLED] = {"CANCELLED", 499, false},
        [W_WORKER_LOST] = {"WORKER_LOST", 503, true},
        [W_QUEUE_FULL] = {"QUEUE_FULL", 429, true},
        [W_INTERNAL] = {"INTERNAL", 500, false},
        [W_UNAUTHORIZED] = {"UNAUTHORIZED", 401, false},
        [W_OVERLOADED] = {"OVERLOADED", 503, true},
        [W_JOB_NOT_FOUND] = {"JOB_NOT_FOUND", 404, false},
        [W_NOT_FOUND] = {"NOT_FOUND", 404, false},
        [W_LENGTH_REQUIRED] = {"LENGTH_REQUIRED", 411, false},
        [W_PAYLOAD_TOO_LARGE] = {"PAYLOAD_TOO_LARGE", 413, false},
        [W_UNSUPPORTED_MEDIA_TYPE] = {"UNSUPPORTED_MEDIA_TYPE", 415, false},
        [W_MISDIRECTED_REQUEST] = {"MISDIRECTED_REQUEST", 421, false},
        [W_HEADERS_TOO_LARGE] = {"HEADERS_TOO_LARGE", 431, false},
        [W_METHOD_NOT_ALLOWED] = {"METHOD_NOT_ALLOWED", 405, false},
        [W_NOT_IMPLEMENTED] = {"NOT_IMPLEMENTED", 501, false},
        [W_EXPECTATION_FAILED] = {"EXPECTATION_FAILED", 417, false},
        [W_DEADLINE_EXCEEDED] = {"DEADLINE_EXCEEDED", 504, false},
};

static const struct {
	const char *name;
	enum wire wire;
} codes[ORCH_ERR_COUNT] = {
        [ORCH_OK] = {"ORCH_OK", W_OK},
        [ORCH_EINVAL] = {"ORCH_EINVAL", W_INVALID_REQUEST},
        [ORCH_ENOMEM] = {"ORCH_ENOMEM", W_INTERNAL},
        [ORCH_EIO] = {"ORCH_EIO", W_MODEL_LOAD_FAILED},
        [ORCH_ENOTFOUND] = {"ORCH_ENOTFOUND", W_MODEL_LOAD_FAILED},
        [ORCH_ETYPE] = {"ORCH_ETYPE", W_MODEL_LOAD_FAILED},
        [ORCH_ERANGE] = {"ORCH_ERANGE", W_INVALID_REQUEST},
        [ORCH_EUNSUPPORTED] = {"ORCH_EUNSUPPORTED", W_MODEL_LOAD_FAILED},
        [ORCH_EGGUF_MAGIC] = {"ORCH_EGGUF_MAGIC", W_MODEL_LOAD_FAILED},
        [ORCH_EGGUF_VERSION] = {"ORCH_EGGUF_VERSION", W_MODEL_LOAD_FAILED},
        [ORCH_EGGUF_TRUNCATED] = {"ORCH_EGGUF_TRUNCATED", W_MODEL_LOAD_FAILED},
        [ORCH_EGGUF_LIMIT] = {"ORCH_EGGUF_LIMIT", W_MODEL_LOAD_FAILED},
        [ORCH_EGGUF_DUPLICATE] = {"ORCH_EGGUF_DUPLICATE", W_MODEL_LOAD_FAILED},
        [ORCH_EGGUF_VTYPE] = {"ORCH_EGGUF_VTYPE", W_MODEL_LOAD_FAILED},
        [ORCH_EGGUF_TTYPE] = {"ORCH_EGGUF_TTYPE", W_MODEL_LOAD_FAILED},
        [ORCH_EGGUF_SHAPE] = {"ORCH_EGGUF_SHAPE", W_MODEL_LOAD_FAILED},
        [ORCH_EGGUF_ALIGN] = {"ORCH_EGGUF_ALIGN", W_MODEL_LOAD_FAILED},
        [ORCH_EGGUF_BOUNDS] = {"ORCH_EGGUF_BOUNDS", W_MODEL_LOAD_FAILED},
        [ORCH_EGGUF_OVERLAP] = {"ORCH_EGGUF_OVERLAP", W_MODEL_LOAD_FAILED},
        [ORCH_EGGUF_NAME] = {"ORCH_EGGUF_NAME", W_MODEL_LOAD_FAILED},
        [ORCH_EMODEL_NOT_FOUND] = {"ORCH_EMODEL_NOT_FOUND", W_MODEL_NOT_FOUND},
        [ORCH_EMODEL_LOAD] = {"ORCH_EMODEL_LOAD", W_MODEL_LOAD_FAILED},
        [ORCH_EINSUFFICIENT_VRAM] = {"ORCH_EINSUFFICIENT_VRAM", W_INSUFFICIENT_VRAM},
        [ORCH_EVRAM] = {"ORCH_EVRAM", W_VRAM_OOM},
        [ORCH_ECUDA] = {"ORCH_ECUDA", W_CUDA_ERROR},
        [ORCH_ECONTEXT] = {"ORCH_ECONTEXT", W_CONTEXT_LENGTH_EXCEEDED},
        [ORCH_ETIMEOUT] = {"ORCH_ETIMEOUT", W_INFERENCE_TIMEOUT},
        [ORCH_ECANCELLED] = {"ORCH_ECANCELLED", W_CANCELLED},
        [ORCH_EWORKER_LOST] = {"ORCH_EWORKER_LOST", W_WORKER_LOST},
        [ORCH_EQUEUE_FULL] = {"ORCH_EQUEUE_FULL", W_QUEUE_FULL},
        [ORCH_EINTERNAL] = {"ORCH_EINTERNAL", W_INTERNAL},
        [ORCH_ETEMPLATE] = {"ORCH_ETEMPLATE", W_INTERNAL},
        [ORCH_ETEMPLATE_RAISE] = {"ORCH_ETEMPLATE_RAISE", W_INVALID_REQUEST},
        [ORCH_EAGAIN] = {"ORCH_EAGAIN", W_INTERNAL},
        [ORCH_EPROTO] = {"ORCH_EPROTO", W_INTERNAL},
        [ORCH_ECLOSED] = {"ORCH_ECLOSED", W_WORKER_LOST},
        [ORCH_EUNAUTHORIZED] = {"ORCH_EUNAUTHORIZED", W_UNAUTHORIZED},
        [ORCH_EOVERLOADED] = {"ORCH_EOVERLOADED", W_OVERLOADED},
        [ORCH_EJOB_NOT_FOUND] = {"ORCH_EJOB_NOT_FOUND", W_JOB_NOT_FOUND},
        [ORCH_EROUTE_NOT_FOUND] = {"ORCH_EROUTE_NOT_FOUND", W_NOT_FOUND},
        [ORCH_ELENGTH_REQUIRED] = {"ORCH_ELENGTH_REQUIRED", W_LENGTH_REQUIRED},
        [ORCH_ETOO_LARGE] = {"ORCH_ETOO_LARGE", W_PAYLOAD_TOO_LARGE},
        [ORCH_EMEDIA_TYPE] = {"ORCH_EMEDIA_TYPE", W_UNSUPPORTED_MEDIA_TYPE},
        [ORCH_EMISDIRECTED] = {"ORCH_EMISDIRECTED", W_MISDIRECTED_REQUEST},
        [ORCH_EHEADERS_TOO_LARGE] = {"ORCH_EHEADERS_TOO_LARGE", W_HEADERS_TOO_LARGE},
        [ORCH_EMETHOD] = {"ORCH_EMETHOD", W_METHOD_NOT_ALLOWED},
        [ORCH_ENOT_IMPLEMENTED] = {"ORCH_ENOT_IMPLEMENTED", W_NOT_IMPLEMENTED},
        [ORCH_EEXPECTATION] = {"ORCH_EEXPECTATION", W_EXPECTATION_FAILED},
        [ORCH_EDEADLINE] = {"ORCH_EDEADLINE", W_DEADLINE_EXCEEDED},
};

static enum wire
wire_of(orch_err code)
{
	if ((unsigned)code >= ORCH_ERR_COUNT || codes[code].name == NULL)
		return W_INTERNAL;
	return codes[code].wire;
}

orch_err
orch_errf(struct orch_errinfo *reterr, orch_err code, const char *fmt, ...)
{
	char msg[sizeof(reterr->msg)];
	va_list ap;

	if (reterr == NULL)
		return code;
	reterr->code = code;
	va_start(ap, fmt);
	vsnprintf(msg, sizeof(msg), fmt, ap); /* an argument may be reterr->msg itself */
	va_end(ap);
	memcpy(reterr->msg, msg, sizeof(msg));
	return code;
}

const char *
orch_err_name(orch_err code)
{
	if ((unsigned)code >= ORCH_ERR_COUNT || codes[code].name == NULL)
		return "ORCH_E?";
	return codes[code].name;
}

const char *
orch_err_wire(orch_err code)
{
	return wires[wire_of(code)].name;
}

int
orch_err_http(orch_err code)
{
	return wires[wire_of(code)].http;
}

int
orch_err_proto(orch_err code)
{
	return (int)wire_of(code);
}

orch_err
orch_err_of_proto(int proto)
{
	for (int c = 1; c < ORCH_ERR_COUNT; c++)
		if (orch_err_proto((orch_err)c) == proto)
			return (orch_err)c;
	return ORCH_EINTERNAL;
}

bool
orch_err_retriable(orch_err code)
{
	return wires[wire_of(code)].retriable;
}
