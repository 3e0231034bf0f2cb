/*
 * chat.js - orchd's chat page: a model from GET /v1/models, a conversation
 * streamed through POST /v1/chat/completions (stream: true, SSE over fetch),
 * the reasoning a model emits (delta.reasoning_content) in a collapsible
 * block, tokens/s and time to first token after each answer. A conversation
 * longer than the model's context is fitted to it: the oldest turns are left
 * out of the request (the page says how many); when even the last message
 * does not fit, the error says what to change. Plain DOM, text only (never
 * innerHTML); settings and the API key in localStorage. A module: its names
 * stay out of the window's.
 */
const $ = (id) => document.getElementById(id);
const store = window.localStorage;
let messages = []; /* {role, content} sent with each request */
let controller = null; /* the answer being streamed: its AbortController */
const contexts = {}; /* model id: its context_length from /v1/models */

function headers() {
	const h = { "Content-Type": "application/json" };
	const key = $("api-key").value.trim();
	if (key) h.Authorization = "Bearer " + key;
	return h;
}

/* An error body ({error: {code, message}}) as {text, code}: its words, or the status line. */
async function errorOf(res) {
	let text = res.status + " " + res.statusText, code = null;
	try {
		const e = (await res.json()).error;
		if (e && e.message) text = e.message + (e.code ? " (" + e.code + ")" : "");
		if (e && e.code) code = e.code;
	} catch (_) { /* not JSON: the status line says it */ }
	return { text, code };
}

async function errorText(res) {
	return (await errorOf(res)).text;
}

function el(tag, cls, text) {
	const e = document.createElement(tag);
	if (cls) e.className = cls;
	if (text !== undefined) e.textContent = text;
	return e;
}

function scrollDown() {
	const m = document.querySelector("main");
	m.scrollTop = m.scrollHeight;
}

function bubble(role, text) {
	const b = el("div", "msg " + role);
	b.append(el("div", "text", text));
	$("conversation").append(b);
	scrollDown();
	return b;
}

function status(text) {
	$("status").textContent = text;
}

async function loadModels() {
	const sel = $("model");
	status("loading models…");
	try {
		const res = await fetch("/v1/models", { headers: headers() });
		if (!res.ok) return status("models: " + (await errorText(res)));
		const list = (await res.json()).data || [];
		sel.replaceChildren();
		for (const m of list) {
			contexts[m.id] = m.context_length || 0;
			const o = el("option", "", m.id + (m.state && m.state.toLowerCase() !== "ready" ? " (" + m.state.toLowerCase() + ")" : ""));
			o.value = m.id;
			sel.append(o);
		}
		if (list.some((m) => m.id === store.getItem("orch.model"))) sel.value = store.getItem("orch.model");
		status(list.length ? "" : "no models are configured");
	} catch (e) {
		status("models: " + e.message);
	}
}

/* The SSE events of @body's stream, one parsed JSON object at a time (null: [DONE]). */
async function* events(body) {
	const reader = body.getReader();
	const dec = new TextDecoder();
	let buf = "";
	for (;;) {
		const { value, done } = await reader.read();
		if (done) return;
		/* normalised after joining: a CR and its LF may come in two reads */
		buf = (buf + dec.decode(value, { stream: true })).replace(/\r\n/g, "\n");
		let cut;
		while ((cut = buf.indexOf("\n\n")) >= 0) {
			const block = buf.slice(0, cut);
			buf = buf.slice(cut + 2);
			const data = block.split("\n").filter((l) => l.startsWith("data:"))
				.map((l) => l.slice(5).replace(/^ /, "")).join("\n");
			if (data === "[DONE]") return yield null;
			if (data) yield JSON.parse(data);
		}
	}
}

/* An assistant bubble: its reasoning block (made when the first reasoning comes) and text. */
function answerView() {
	const b = bubble("assistant", "");
	const view = { bubble: b, text: b.querySelector(".text"), reasoning: null };
	view.addReasoning = (t) => {
		if (!view.reasoning) {
			const d = el("details", "reasoning");
			d.open = true;
			d.append(el("summary", "", "Reasoning"), el("div", "text"));
			b.prepend(d);
			view.reasoning = d.querySelector(".text");
		}
		view.reasoning.textContent += t;
	};
	return view;
}

/* "N tokens · R tok/s · first token T ms": R over the time after the first token. */
function statsText(n, t0, tFirst, tEnd, stopped) {
	const parts = [n + " tokens"];
	if (tFirst !== null) {
		const span = (tEnd - tFirst) / 1000;
		const rate = n > 1 && span > 0 ? (n - 1) / span : n / ((tEnd - t0) / 1000);
		parts.push(rate.toFixed(1) + " tok/s", "first token " + Math.round(tFirst - t0) + " ms");
	}
	if (stopped) parts.push("stopped");
	return parts.join(" · ");
}

/* One request of @body streamed into @view: what came of it. */
async function attempt(body, view) {
	const r = { t0: performance.now(), tFirst: null, deltas: 0, usage: null, content: "",
		stopped: false, failed: null, code: null };
	try {
		const res = await fetch("/v1/chat/completions", { method: "POST", headers: headers(),
			body: JSON.stringify(body), signal: controller.signal });
		if (!res.ok) {
			const e = await errorOf(res);
			r.code = e.code;
			throw new Error(e.text);
		}
		for await (const ev of events(res.body)) {
			if (ev === null) break;
			if (ev.error) {
				r.code = ev.error.code;
				throw new Error(ev.error.message + " (" + ev.error.code + ")");
			}
			if (ev.usage) r.usage = ev.usage;
			const d = (ev.choices && ev.choices[0] && ev.choices[0].delta) || {};
			if (d.reasoning_content) view.addReasoning(d.reasoning_content);
			if (d.content) view.text.textContent = r.content += d.content;
			if (d.reasoning_content || d.content) {
				r.deltas++;
				if (r.tFirst === null) r.tFirst = performance.now();
				scrollDown();
			}
		}
	} catch (e) {
		if (e.name === "AbortError") r.stopped = true;
		else r.failed = e.message;
	} finally {
		if (r.failed && controller) controller.abort(); /* a bad event: the job ends too */
	}
	return r;
}

/* @msgs less its oldest turn (a user message and the answers after it; system messages stay),
 * or null when only the last user message is left. */
function dropOldest(msgs) {
	const first = msgs.findIndex((m) => m.role !== "system");
	let next = first + 1;
	while (next < msgs.length && msgs[next].role !== "user") next++;
	if (first < 0 || next >= msgs.length) return null;
	return msgs.slice(0, first).concat(msgs.slice(next));
}

async function send(text) {
	const model = $("model").value;
	if (!model) return status("pick a model first");
	const conv = messages; /* "New chat" during the answer starts another conversation */
	conv.push({ role: "user", content: text });
	bubble("user", text);
	const view = answerView();
	const body = { model, messages: conv, stream: true, stream_options: { include_usage: true } };
	const maxTokens = parseInt($("max-tokens").value, 10);
	const temperature = parseFloat($("temperature").value);
	if (maxTokens > 0) body.max_tokens = maxTokens;
	if (temperature >= 0) body.temperature = temperature;
	busy(true);
	controller = new AbortController();
	let r, dropped = 0;
	for (;;) { /* too long for the context: the oldest turns left out, one at a time */
		r = await attempt(body, view);
		const fewer = r.code === "CONTEXT_LENGTH_EXCEEDED" && !r.content && r.deltas === 0
			? dropOldest(body.messages) : null;
		if (fewer === null) break;
		body.messages = fewer;
		dropped++;
		controller = new AbortController();
	}
	if (r.code === "CONTEXT_LENGTH_EXCEEDED") {
		const ctx = contexts[model] ? contexts[model] + " tokens" : "its context";
		r.failed += " — lower Max tokens" + (maxTokens > 0 ? " (now " + maxTokens + ")" : "") +
			", shorten the message, or serve " + model + " with a larger context than " + ctx +
			" (context = N in its [model] section, or orchd --context N)";
	}
	const n = r.usage ? r.usage.completion_tokens : r.deltas;
	const stats = el("div", "stats", statsText(n, r.t0, r.tFirst, performance.now(), r.stopped));
	view.bubble.append(stats);
	if (dropped > 0 && !r.failed)
		view.bubble.append(el("div", "note", "The " + (dropped === 1 ? "oldest turn was" :
			"oldest " + dropped + " turns were") + " left out to fit the model's context" +
			(contexts[model] ? " of " + contexts[model] + " tokens" : "") + "."));
	if (r.content) conv.push({ role: "assistant", content: r.content });
	else if (conv[conv.length - 1].role === "user") conv.pop(); /* no answer: not a turn */
	if (r.failed) bubble("error", r.failed);
	controller = null;
	busy(false);
	scrollDown();
}

function busy(on) {
	$("send").disabled = on;
	$("stop").disabled = !on;
	status(on ? "answering…" : "");
}

function init() {
	for (const [id, key] of [["api-key", "orch.key"], ["max-tokens", "orch.max_tokens"],
		["temperature", "orch.temperature"]]) {
		const v = store.getItem(key);
		if (v !== null) $(id).value = v;
		$(id).addEventListener("change", () => store.setItem(key, $(id).value));
	}
	$("api-key").addEventListener("change", loadModels);
	$("model").addEventListener("change", () => store.setItem("orch.model", $("model").value));
	$("composer").addEventListener("submit", (e) => {
		e.preventDefault();
		const text = $("prompt").value.trim();
		if (!text || controller) return;
		$("prompt").value = "";
		send(text);
	});
	$("prompt").addEventListener("keydown", (e) => {
		if (e.key === "Enter" && !e.shiftKey && !e.isComposing) {
			e.preventDefault();
			$("composer").requestSubmit();
		}
	});
	$("stop").addEventListener("click", () => controller && controller.abort());
	$("new-chat").addEventListener("click", () => {
		if (controller) controller.abort();
		messages = [];
		$("conversation").replaceChildren();
	});
	loadModels();
	$("prompt").focus();
}

init();
