// tools_client.mjs - tool calling through the official `openai` npm client
// against a running orchd serving random-weight models whose chat templates
// teach a call syntax (Qwen2.5's hermes <tool_call>, Llama 3.2's JSON): the
// model knows nothing, so every valid call is the grammar's doing, and each
// call's arguments are checked by ajv (a JSON Schema validator that is not
// orch's) against its function's parameters:
//
// - tool_choice "required", N generations per model at temperature 1: every
//   answer that ends with finish_reason "tool_calls" has calls of known
//   functions, content null, arguments that parse and validate;
// - a named function with parallel_tool_calls false: exactly one call, of it;
// - streamed: delta.tool_calls joined by index (the first chunk of a call
//   carries its id, type and name) validate the same way;
// - the tool's result sent back (role "tool", tool_call_id) is a turn the
//   template takes;
// - the same on a harmony model (gpt-oss tiny, when given): a forced call is
//   a message to functions.NAME after an optional analysis message, so the
//   requests raise <|end|>'s logit (logit_bias) for a random model to end its
//   analysis within max_tokens; a named function ends with finish_reason
//   "stop" (OpenAI's), "required" with "tool_calls".
//
// usage: node tools_client.mjs BASE_URL HERMES_MODEL LLAMA3_MODEL N [HARMONY_MODEL]
// Prints one line per check; exit status 1 when any fails.
import Ajv from "ajv/dist/2020.js";
import OpenAI from "openai";

const [baseURL, hermes, llama, nArg, harmony] = process.argv.slice(2);
const N = Number(nArg || 50);
const client = new OpenAI({ baseURL, apiKey: "unused", maxRetries: 0, timeout: 120000 });
const ajv = new Ajv({ strict: true, allErrors: true });
let failed = 0;

function check(cond, what, detail) {
	console.log(`${cond ? "ok  " : "FAIL"} ${what}${cond ? "" : ": " + JSON.stringify(detail).slice(0, 2000)}`);
	if (!cond) failed++;
}

const tools = [
	{
		type: "function",
		function: {
			name: "get_weather",
			description: "The weather in a city",
			parameters: {
				type: "object",
				properties: {
					city: { type: "string", minLength: 1, maxLength: 20 },
					unit: { enum: ["celsius", "fahrenheit"] },
					days: { type: "integer", minimum: 1, maximum: 7 },
				},
				required: ["city", "unit"],
				additionalProperties: false,
			},
		},
	},
	{
		type: "function",
		function: {
			name: "search",
			description: "Search the web",
			parameters: {
				type: "object",
				properties: {
					query: { type: "string", maxLength: 30 },
					filters: { type: "array", items: { enum: ["news", "images"] }, maxItems: 2 },
				},
				required: ["query"],
				additionalProperties: false,
			},
		},
	},
	{ type: "function", function: { name: "now", description: "The time" } },
];
const validators = Object.fromEntries(
	tools.map((t) => [t.function.name, ajv.compile(t.function.parameters || { type: "object" })]),
);
const messages = [{ role: "user", content: "What is the weather in Paris?" }];
const extra = {}; // per model: more request fields

// A harmony model's <|end|> raised, so that a random model's analysis ends.
async function harmonyExtra(model) {
	const r = await fetch(baseURL.replace(/\/v1\/?$/, "") + "/tokenize", {
		method: "POST", headers: { "Content-Type": "application/json" },
		body: JSON.stringify({ model, content: "<|end|>" }),
	});
	const t = await r.json();
	check(t.tokens?.length === 1, `${model}: <|end|> is one token`, t);
	return { logit_bias: { [t.tokens[0]]: 12 } };
}

// The calls of a message: each known, its arguments valid; the problems found.
function problems(calls, only) {
	const bad = [];
	for (const c of calls || []) {
		const v = validators[c.function?.name];
		let args;
		try {
			args = JSON.parse(c.function.arguments);
		} catch (e) {
			bad.push({ call: c, why: "arguments do not parse" });
			continue;
		}
		if (!v || (only && c.function.name !== only)) bad.push({ call: c, why: "unexpected function" });
		else if (!v(args)) bad.push({ call: c, why: v.errors });
		if (!c.id || c.type !== "function") bad.push({ call: c, why: "no id or type" });
	}
	if (!calls || calls.length === 0) bad.push({ why: "no tool_calls" });
	return bad;
}

async function required(model) {
	let done = 0, length = 0, calls = 0;
	const bad = [];
	const jobs = [];
	for (let i = 0; i < N; i++)
		jobs.push(
			client.chat.completions
				.create({ model, messages, tools, tool_choice: "required", temperature: 1, seed: 1000 + i, max_tokens: 400, ...extra[model] })
				.then((r) => {
					const ch = r.choices[0];
					if (ch.finish_reason === "length") return length++;
					done++;
					calls += ch.message.tool_calls?.length || 0;
					const p = problems(ch.message.tool_calls);
					if (ch.finish_reason !== "tool_calls" || ch.message.content !== null)
						p.push({ why: "finish or content", ch });
					if (p.length) bad.push(p);
				}),
		);
	await Promise.all(jobs);
	check(done > 0 && bad.length === 0, `${model}: tool_choice required, ${done} of ${N} done (${length} cut by max_tokens), ${calls} calls, all valid`, bad.slice(0, 3));
}

async function named(model) {
	const bad = [];
	for (let i = 0; i < Math.min(N, 4); i++) {
		const r = await client.chat.completions.create({
			model, messages, tools, temperature: 1, seed: 2000 + i, max_tokens: 400,
			tool_choice: { type: "function", function: { name: "search" } }, parallel_tool_calls: false, ...extra[model],
		});
		const ch = r.choices[0];
		if (ch.finish_reason === "length") continue;
		const p = problems(ch.message.tool_calls, "search");
		if (ch.finish_reason !== "stop") p.push({ why: "a named function ends with stop", ch });
		if (ch.message.tool_calls?.length !== 1) p.push({ why: "not one call", ch });
		if (p.length) bad.push(p);
	}
	check(bad.length === 0, `${model}: a named function, parallel_tool_calls false: one call of it`, bad.slice(0, 3));
}

async function streamed(model) {
	const bad = [];
	let last;
	for (let i = 0; i < Math.min(N, 4); i++) {
		const s = await client.chat.completions.create({
			model, messages, tools, tool_choice: "required", temperature: 1, seed: 3000 + i, max_tokens: 400, stream: true,
			...extra[model],
		});
		const calls = [];
		let finish = null;
		for await (const chunk of s) {
			const ch = chunk.choices[0];
			if (!ch) continue;
			for (const d of ch.delta?.tool_calls || []) {
				if (!calls[d.index]) calls[d.index] = { id: d.id, type: d.type, function: { name: d.function?.name, arguments: "" } };
				calls[d.index].function.arguments += d.function?.arguments || "";
			}
			finish = ch.finish_reason || finish;
		}
		if (finish === "length") continue;
		const p = problems(calls);
		if (finish !== "tool_calls") p.push({ why: "finish", finish });
		if (p.length) bad.push(p);
		last = calls;
	}
	check(bad.length === 0, `${model}: streamed delta.tool_calls joined validate`, bad.slice(0, 3));
	return last;
}

async function result(model, calls) {
	const call = calls?.[0];
	if (!call) return check(false, `${model}: a call to answer`, calls);
	const r = await client.chat.completions.create({
		model, tools, max_tokens: 8, temperature: 0,
		messages: [...messages, { role: "assistant", content: null, tool_calls: [call] },
			{ role: "tool", tool_call_id: call.id, content: '{"temperature": 21}' }],
	});
	check(r.choices[0].message !== undefined && r.usage.prompt_tokens > 0,
		`${model}: the tool's result goes through the template (${r.usage.prompt_tokens} prompt tokens)`, r);
}

for (const model of harmony ? [hermes, llama, harmony] : [hermes, llama]) {
	try {
		if (model === harmony) extra[model] = await harmonyExtra(model);
		await required(model);
		await named(model);
		await result(model, await streamed(model));
	} catch (e) {
		check(false, `${model}: no exception`, String(e));
	}
}
console.log(failed ? `${failed} failed` : "all passed");
process.exit(failed ? 1 : 0);
