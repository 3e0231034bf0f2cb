// lenient_client.mjs - the official `openai` npm client sending what SDKs and
// frameworks add (store, metadata, service_tier, parallel_tool_calls (used),
// response_format text, user): orch answers; a schema keyword orch cannot
// enforce is BadRequestError naming response_format and the keyword; a max_tokens past the context is BadRequestError
// CONTEXT_LENGTH_EXCEEDED (issue 18).
//
// usage: node lenient_client.mjs BASE_URL MODEL
// Prints one line per check; exit status 1 when any fails.
import OpenAI from "openai";
import { check, counts, openaiClient } from "./checks.mjs";

const [baseURL, model] = process.argv.slice(2);
const client = openaiClient(baseURL);

const messages = [{ role: "user", content: "Tell me a story" }];
const extra = {
	store: true, metadata: { run: "lenient" }, service_tier: "auto", user: "u-1",
	parallel_tool_calls: false, response_format: { type: "text" },
};
try {
	const chat = await client.chat.completions.create({ model, messages, max_tokens: 8, ...extra });
	check(typeof chat.choices[0]?.message?.content === "string", "chat with SDK extras answers", chat);
} catch (e) {
	check(false, "chat with SDK extras answers", { status: e.status, message: e.message });
}
try {
	const stream = await client.chat.completions.create({ model, messages, max_tokens: 8, stream: true, ...extra });
	let n = 0;
	for await (const chunk of stream) n += chunk.choices.length;
	check(n > 0, "streamed chat with SDK extras answers", n);
} catch (e) {
	check(false, "streamed chat with SDK extras answers", { status: e.status, message: e.message });
}
try {
	await client.chat.completions.create({ model, messages, max_tokens: 8,
		response_format: { type: "json_schema", json_schema: { name: "x", schema: { type: "array", contains: {}, maxContains: 1 } } } });
	check(false, "a schema keyword orch cannot enforce is refused", "no error");
} catch (e) {
	check(e instanceof OpenAI.BadRequestError && e.param === "response_format" && /unsupported keyword 'maxContains'/.test(e.message),
		"an unenforceable schema keyword is BadRequestError naming it", { status: e.status, message: e.message, param: e.param });
}
try {
	await client.completions.create({ model, prompt: "Once upon a time there was a little girl", max_tokens: 254 });
	check(false, "max_tokens past the context is refused", "no error");
} catch (e) {
	check(e instanceof OpenAI.BadRequestError && e.code === "CONTEXT_LENGTH_EXCEEDED" && /max_tokens 254/.test(e.message),
		"max_tokens past the context is BadRequestError CONTEXT_LENGTH_EXCEEDED", { status: e.status, code: e.code, message: e.message });
}

console.log(`lenient_client: ${counts.failed ? counts.failed + " failed" : "all passed"}`);
process.exit(counts.failed ? 1 : 0);
