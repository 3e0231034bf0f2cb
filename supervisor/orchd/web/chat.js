/*
 * chat.js - orchd's chat page: a model from GET /v1/models, a conversation
 * streamed through POST /v1/chat/completions (stream: true, SSE over fetch),
 * the reasoning a model emits (delta.reasoning_content) in a collapsible
 * block, tokens/s and time to first token after each answer. Plain DOM, text
 * only (never innerHTML); settings and the API key in localStorage. A module:
 * its names stay out of the window's.
 */
const $ = (id) => document.getElementById(id);
const store = window.localStorage;
let messages = []; /* {role, content} sent with each request */
let controller = null; /* the answer being streamed: its AbortController */

function headers() {
	const h = { "Content-Type": "application/json" };
	const key = $("api-key").value.trim();
	if (key) h.Authorization = "Bearer " + key;
	return h;
}

/* The words of an error body ({error: {code, message}}), or the status line. */
async function errorText(res) {
	let text = res.status + " " + res.statusText;
	try {
		const e = (await res.json()).error;
		if (e && e.message) text = e.message + (e.code ? " (" + e.code + ")" : "");
	} catch (_) { /* not JSON: the status line says it */ }
	return text;
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
	const t0 = performance.now();
	let tFirst = null, deltas = 0, usage = null, content = "", stopped = false, failed = null;
	try {
		const res = await fetch("/v1/chat/completions", { method: "POST", headers: headers(),
			body: JSON.stringify(body), signal: controller.signal });
		if (!res.ok) throw new Error(await errorText(res));
		for await (const ev of events(res.body)) {
			if (ev === null) break;
			if (ev.error) throw new Error(ev.error.message + " (" + ev.error.code + ")");
			if (ev.usage) usage = ev.usage;
			const d = (ev.choices && ev.choices[0] && ev.choices[0].delta) || {};
			if (d.reasoning_content) view.addReasoning(d.reasoning_content);
			if (d.content) view.text.textContent = content += d.content;
			if (d.reasoning_content || d.content) {
				deltas++;
				if (tFirst === null) tFirst = performance.now();
				scrollDown();
			}
		}
	} catch (e) {
		if (e.name === "AbortError") stopped = true;
		else failed = e.message;
	} finally {
		if (failed && controller) controller.abort(); /* a bad event: the job ends too */
	}
	const n = usage ? usage.completion_tokens : deltas;
	const stats = el("div", "stats", statsText(n, t0, tFirst, performance.now(), stopped));
	view.bubble.append(stats);
	if (content) conv.push({ role: "assistant", content });
	else if (conv[conv.length - 1].role === "user") conv.pop(); /* no answer: not a turn */
	if (failed) bubble("error", failed);
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
