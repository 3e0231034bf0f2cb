#pragma once
/*
 * http_exchange.h - the edge's side of reply.h (issue 53): an evhttp request
 * turned once into the plain api_req the handlers take, and the reply_ops that
 * answer it over evhttp (whole answers, SSE streams through sse.h, the close
 * watch and the access line through http_conn.h). Thread: the loop.
 */
struct api_req;
struct evhttp_request;
struct orchd;

/*
 * http_exchange_new - @req as an api_req, kept until it is answered
 * (reply.h). NULL when out of memory: @req is answered 500 then.
 */
struct api_req *http_exchange_new(struct orchd *d, struct evhttp_request *req);
