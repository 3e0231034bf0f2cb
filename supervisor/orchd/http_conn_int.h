#pragma once
/*
 * http_conn_int.h - what http_conn.c (the connections) and http_accept.c
 * (accept() failures) share: the layer's state. Not for other modules.
 */
#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>

#include "http_access.h"
#include "http_conn.h"
#include "http_head.h"
#include "http_host.h"
#include "params.h"

struct bufferevent;
struct event;
struct evbuffer_cb_entry;
struct evconnlistener;
struct evhttp_connection;
struct evhttp_request;

#define CONN_BUCKETS   4096
#define CLIENT_BUCKETS 1024
#define ANSWER_MAX     2048

enum phase { P_NEW, P_IDLE, P_HEAD, P_BODY, P_BUSY, P_DOOMED };

struct client {
	struct client *next;
	uint8_t addr[16]; /* IPv6, or IPv4 mapped into it */
	uint32_t n;       /* its connections */
};

struct conn {
	struct http_edge *e;
	struct conn *prev, *next; /* every connection */
	struct conn *hnext;       /* its hash bucket, once admitted */
	struct bufferevent *bev;
	struct evhttp_connection *evcon;             /* NULL until admitted */
	struct evbuffer_cb_entry *watch, *out_watch; /* its input; its output (bytes sent) */
	struct event *timer;
	struct client *client;
	enum phase phase;
	int deadline;       /* MET_DEADLINE_* of the armed timer */
	uint32_t requests;  /* heads accepted */
	uint64_t body_left; /* BODY: bytes still to come */
	struct http_head_scan scan;
	struct params_err verdict;  /* DOOMED: the answer */
	struct http_access access;  /* the request in progress, for the access log */
	struct evhttp_request *req; /* BUSY: evhttp's request, once route() has it */
	int status;                 /* its answer's, once the answer's head is out (0: not yet) */
	http_close_fn user_close;
	void *user_arg;
};

struct http_edge {
	struct orchd *d;
	struct http_hosts hosts;
	struct http_head_rules rules;
	struct conn *conns;
	uint32_t n_conns;
	struct conn *bucket[CONN_BUCKETS];
	struct client *clients[CLIENT_BUCKETS];
	/* the listener */
	struct evconnlistener *listener;
	struct event *ev_resume;
	int reserve_fd; /* /dev/null, closed for a moment to accept() and refuse */
	bool paused, episode, logged;
	uint64_t episode_refused, episode_ms, last_log_ms;
	char busy[ANSWER_MAX]; /* the 503 of a connection refused at accept() */
	size_t busy_n;
};

/* http_conn_format_answer - the whole response to a refusal @pe into @out (@cap bytes): its
 * length, 0 when it fails. */
size_t http_conn_format_answer(const struct params_err *pe, char *out, size_t cap);

/* http_conn_send_answer - best effort: a response into an empty send buffer of a non-blocking
 * socket; the bytes sent. */
size_t http_conn_send_answer(int fd, const char *p, size_t n);

/* http_accept_episode_end - accept() works again: log the episode's end (http_accept.c). */
void http_accept_episode_end(struct http_edge *e);
