// openai_client.mjs - the official `openai` npm client against a running
// orchd: models list, a chat completion (plain and streamed, which must agree
// at temperature 0), a completion that must equal the golden text, a streamed
// completion, the client's own error class for an unknown model, and
// models.retrieve: the model's object, and NotFoundError (not retried) for an
// unknown one; logprobs on both APIs; n 2.
//
// usage: node openai_client.mjs BASE_URL MODEL GOLDEN_TEXT_FILE
// Prints one line per check; exit status 1 when any fails.
import { readFileSync } from "node:fs";
import OpenAI from "openai";

const [baseURL, model, goldenFile] = process.argv.slice(2);
const golden = readFileSync(goldenFile, "utf8");
const client = new OpenAI({ baseURL, apiKey: "unused", maxRetries: 0, timeout: 30000 });
let failed = 0;

function check(cond, what, detail) {
	console.log(`${cond ? "ok  " : "FAIL"} ${what}${cond ? "" : ": " + JSON.stringify(detail)}`);
	if (!cond) failed++;
}

const models = await client.models.list();
const ids = [];
for await (const m of models) ids.push(m.id);
check(ids.includes(model), "models.list names the model", ids);

const one = await client.models.retrieve(model);
check(one.id === model && one.object === "model" && typeof one.created === "number" &&
	one.owned_by === "orch", "models.retrieve is the OpenAI model object", one);
check(one.state === "ready" && one.context_length > 0 && one.max_context_length > 0 &&
	one.file_size_bytes > 0 && typeof one.quant_kind === "string" &&
	typeof one.architecture === "string", "models.retrieve has orch's facts", one);

// the client's default retries (2): a 404 must not be retried, a 5xx would be
let calls = 0;
const counted = new OpenAI({
	baseURL, apiKey: "unused", timeout: 30000,
	fetch: (url, init) => { calls++; return fetch(url, init); },
});
try {
	await counted.models.retrieve("no-such-model");
	check(false, "retrieve of an unknown model is an error", "no error");
} catch (e) {
	check(e instanceof OpenAI.NotFoundError && e.status === 404 && calls === 1,
		"retrieve of an unknown model is NotFoundError, not retried",
		{ status: e.status, calls, message: e.message });
}

const messages = [{ role: "user", content: "Tell me a story" }];
const chat = await client.chat.completions.create({ model, messages, max_tokens: 16, temperature: 0 });
const content = chat.choices[0]?.message?.content;
check(typeof content === "string" && content.length > 0, "chat completion has content", chat);
check(chat.choices[0].message.role === "assistant", "chat message role", chat.choices[0]);
check(chat.usage?.completion_tokens > 0 && chat.usage.total_tokens ===
	chat.usage.prompt_tokens + chat.usage.completion_tokens, "chat usage", chat.usage);
check(["stop", "length"].includes(chat.choices[0].finish_reason), "chat finish_reason", chat.choices[0]);

const stream = await client.chat.completions.create({
	model, messages, max_tokens: 16, temperature: 0, stream: true,
	stream_options: { include_usage: true },
});
let streamed = "";
let usage = null;
let finish = null;
for await (const chunk of stream) {
	if (chunk.usage) usage = chunk.usage;
	for (const c of chunk.choices) {
		streamed += c.delta?.content ?? "";
		if (c.finish_reason) finish = c.finish_reason;
	}
}
check(streamed === content, "streamed chat equals the plain one", { streamed, content });
check(usage?.completion_tokens === chat.usage.completion_tokens, "streamed chat usage", usage);
check(finish === chat.choices[0].finish_reason, "streamed chat finish_reason", finish);

const prompt = "Once upon a time";
const comp = await client.completions.create({ model, prompt, max_tokens: 64, temperature: 0 });
check(comp.choices[0].text === golden, "completion equals the golden text",
	{ got: comp.choices[0].text, want: golden });
check(comp.usage?.completion_tokens === 64, "completion usage", comp.usage);

const cstream = await client.completions.create({ model, prompt, max_tokens: 64, temperature: 0, stream: true });
let ctext = "";
for await (const chunk of cstream) ctext += chunk.choices[0]?.text ?? "";
check(ctext === golden, "streamed completion equals the golden text", ctext);

try {
	await client.completions.create({ model: "no-such-model", prompt, max_tokens: 4 });
	check(false, "unknown model is an error", "no error");
} catch (e) {
	check(e instanceof OpenAI.NotFoundError && e.status === 404, "unknown model is NotFoundError",
		{ status: e.status, message: e.message });
}
// logprobs (issue 20): completions' legacy shape, chat's content list, a bad combination
const lc = await client.completions.create({ model, prompt, max_tokens: 8, temperature: 0, logprobs: 2 });
const lp = lc.choices[0].logprobs;
check(lp && lp.tokens.length === 8 && lp.token_logprobs.every((x) => x <= 0) &&
	lp.top_logprobs.every((t) => Object.keys(t).length === 2) && lp.text_offset[0] === 0 &&
	lp.tokens.join("") === lc.choices[0].text, "completion logprobs: tokens, token_logprobs, top_logprobs, text_offset", lp);
const lchat = await client.chat.completions.create({
	model, messages, max_tokens: 8, temperature: 0, logprobs: true, top_logprobs: 3,
});
const lcont = lchat.choices[0].logprobs?.content ?? [];
check(lcont.length === lchat.usage.completion_tokens && lcont.every((e) =>
	typeof e.token === "string" && e.logprob <= 0 && Array.isArray(e.bytes) &&
	e.top_logprobs.length === 3 && e.top_logprobs[0].token === e.token &&
	e.top_logprobs[0].logprob >= e.top_logprobs[1].logprob),
	"chat logprobs: one entry per token, greedy picks the likeliest", lchat.choices[0].logprobs);
// n: several choices (issue 20)
const two = await client.chat.completions.create({ model, messages, max_tokens: 8, n: 2, seed: 4 });
check(two.choices.length === 2 && two.choices.map((c) => c.index).join() === "0,1" &&
	two.choices.every((c) => typeof c.message.content === "string") && two.usage.completion_tokens === 16,
	"chat n 2: two choices", two);
try {
	await client.chat.completions.create({ model, messages, max_tokens: 4, top_logprobs: 2 });
	check(false, "top_logprobs without logprobs is an error", "no error");
} catch (e) {
	check(e instanceof OpenAI.BadRequestError && /top_logprobs/.test(e.message),
		"top_logprobs without logprobs is BadRequestError naming it", { status: e.status, message: e.message });
}

console.log(`openai_client: ${failed ? failed + " failed" : "all passed"}`);
process.exit(failed ? 1 : 0);
