#pragma once
/*
 * err.h - the one error enum of orch (STYLE.md rule 1).
 *
 * Every fallible function returns an orch_err; ORCH_OK is 0. Values are
 * append-only: they cross processes and appear in logs. Each code maps, in
 * one table (err.c), to a wire name (the stable code of DESIGN.md §3), an
 * HTTP status, a protobuf ErrorCode value and whether a retry can help.
 * Several internal codes may share a wire name: a GGUF that fails its magic
 * check and one whose tensors overlap are both MODEL_LOAD_FAILED on the wire,
 * but tests and logs see which check failed.
 */
#include <stdbool.h>

#ifdef __cplusplus
extern "C" {
#endif

enum orch_err {
	ORCH_OK = 0,
	ORCH_EINVAL = 1,       /* invalid argument or request */
	ORCH_ENOMEM = 2,       /* host allocation failed */
	ORCH_EIO = 3,          /* read/write/open failed (errno in the message) */
	ORCH_ENOTFOUND = 4,    /* key, tensor or file not present */
	ORCH_ETYPE = 5,        /* present, but of another type */
	ORCH_ERANGE = 6,       /* value out of the allowed range */
	ORCH_EUNSUPPORTED = 7, /* well-formed but not supported by orch */
	/* GGUF validation, one code per check */
	ORCH_EGGUF_MAGIC = 8,      /* not a GGUF file */
	ORCH_EGGUF_VERSION = 9,    /* GGUF v1, big-endian, or unknown version */
	ORCH_EGGUF_TRUNCATED = 10, /* a read ran past the end of the file */
	ORCH_EGGUF_LIMIT = 11,     /* a count or length over its sane limit */
	ORCH_EGGUF_DUPLICATE = 12, /* two keys or two tensors share a name */
	ORCH_EGGUF_VTYPE = 13,     /* unknown metadata value type, bad bool */
	ORCH_EGGUF_TTYPE = 14,     /* unknown ggml tensor type id */
	ORCH_EGGUF_SHAPE = 15,     /* bad dims: zero, overflow, row not whole blocks */
	ORCH_EGGUF_ALIGN = 16,     /* bad alignment value or misaligned tensor */
	ORCH_EGGUF_BOUNDS = 17,    /* tensor data outside the data section */
	ORCH_EGGUF_OVERLAP = 18,   /* two tensors' data overlap */
	ORCH_EGGUF_NAME = 19,      /* empty name, or a NUL byte inside one */
	/* DESIGN.md §3 wire codes without a more specific internal code */
	ORCH_EMODEL_NOT_FOUND = 20,
	ORCH_EMODEL_LOAD = 21,
	ORCH_EINSUFFICIENT_VRAM = 22,
	ORCH_EVRAM = 23, /* VRAM_OOM: one job fails, the worker keeps serving */
	ORCH_ECUDA = 24, /* sticky CUDA error: the worker exits for a restart */
	ORCH_ECONTEXT = 25,
	ORCH_ETIMEOUT = 26,
	ORCH_ECANCELLED = 27,
	ORCH_EWORKER_LOST = 28,
	ORCH_EQUEUE_FULL = 29,
	ORCH_EINTERNAL = 30,
	ORCH_ETEMPLATE = 31,       /* chat template syntax or runtime error */
	ORCH_ETEMPLATE_RAISE = 32, /* the template called raise_exception() */
	/* the supervisor ↔ worker channel (ipc/) */
	ORCH_EAGAIN = 33,  /* no message within the timeout */
	ORCH_EPROTO = 34,  /* a malformed, oversized or incompatible message */
	ORCH_ECLOSED = 35, /* the channel is closed */
	/* the HTTP APIs only (never in a worker's Error message) */
	ORCH_EUNAUTHORIZED = 36,    /* no valid bearer token */
	ORCH_EOVERLOADED = 37,      /* too many open streams (max_connections) */
	ORCH_EJOB_NOT_FOUND = 38,   /* no such job, or its events expired */
	ORCH_EROUTE_NOT_FOUND = 39, /* no such route, worker or admin object */
	/* the HTTP edge (issue 16): a request refused before any route sees it */
	ORCH_ELENGTH_REQUIRED = 40,   /* a body without Content-Length (chunked, or none) */
	ORCH_ETOO_LARGE = 41,         /* a body over max_body_bytes */
	ORCH_EMEDIA_TYPE = 42,        /* a body that is not application/json */
	ORCH_EMISDIRECTED = 43,       /* a Host the allow-list refuses */
	ORCH_EHEADERS_TOO_LARGE = 44, /* a head over max_header_bytes, or too many fields */
	/* issue 18: every answer of the public listener is a JSON error of this table */
	ORCH_EMETHOD = 45,          /* a known path, a method it does not take (405, with Allow) */
	ORCH_ENOT_IMPLEMENTED = 46, /* a method orchd does not know at all */
	ORCH_EEXPECTATION = 47,     /* an Expect other than 100-continue */
	/* issue 62: the request's own deadline (X-Deadline, deadline_ms) passed */
	ORCH_EDEADLINE = 48,
};
typedef enum orch_err orch_err;

#define ORCH_ERR_COUNT 49

/* Detail for a failure, filled by orch_errf(). Callers that do not care pass NULL. */
struct orch_errinfo {
	orch_err code;
	char msg[512];
};

/*
 * orch_errf - record a failure and return its code.
 * Formats the message into @reterr (when not NULL) and returns @code, so a
 * failing path is one line: return orch_errf(reterr, ORCH_EIO, "open %s: %m", p);
 * An argument may be @reterr->msg itself (a message passed on under another
 * code). Thread: any (writes only *reterr).
 */
orch_err orch_errf(struct orch_errinfo *reterr, orch_err code, const char *fmt, ...)
        __attribute__((format(printf, 3, 4)));

/* orch_err_name - the C name of @code ("ORCH_EGGUF_MAGIC"); "ORCH_E?" when out of range. */
const char *orch_err_name(orch_err code);

/* orch_err_wire - the stable wire name of @code (DESIGN.md §3), e.g. "MODEL_LOAD_FAILED". */
const char *orch_err_wire(orch_err code);

/* orch_err_http - the HTTP status an API answer with @code carries. */
int orch_err_http(orch_err code);

/* orch_err_proto - the protobuf ErrorCode value of @code's wire name (0 for OK). */
int orch_err_proto(orch_err code);

/*
 * orch_err_of_proto - the orch_err a protobuf ErrorCode value stands for: the first
 * whose wire name it is (ORCH_EINTERNAL for a value not known).
 */
orch_err orch_err_of_proto(int proto);

/* orch_err_retriable - whether retrying the same request elsewhere or later can succeed. */
bool orch_err_retriable(orch_err code);

#ifdef __cplusplus
}
#endif
