// structured_client.mjs - constrained output through the official `openai`
// npm client against a running orchd serving random-weight models (the model
// knows nothing: every valid output is the grammar's doing), each output
// checked by ajv, a JSON Schema validator that is not orch's:
//
// - three schemas of increasing size (types, required and optional
//   properties, additionalProperties false, enum, const, anyOf, arrays with
//   minItems/maxItems, integer and number ranges, string lengths, a pattern,
//   formats date / date-time / uuid / email, $ref with recursion): N
//   generations each at temperature 1 with response_format json_schema
//   (strict); every one that ends with finish_reason "stop" parses and
//   validates, and one cut by max_tokens says "length";
// - the same schema streamed: the deltas joined validate;
// - json_object: a JSON object;
// - a second model with a real 151,936-token vocabulary (Qwen2's);
// - a harmony model (gpt-oss tiny, when given), where the schema shapes the
//   final channel after an optional analysis: N / 10 generations per schema
//   (at least 3) and one streamed, every completed content valid, and some
//   with their reasoning_content; <|end|>'s logit is raised (logit_bias) so
//   that a random model's analysis ends within max_tokens.
//
// usage: node structured_client.mjs BASE_URL MODEL REAL_VOCAB_MODEL N [HARMONY_MODEL]
// Prints one line per check; exit status 1 when any fails.
import Ajv from "ajv/dist/2020.js";
import addFormats from "ajv-formats";
import OpenAI from "openai";

const [baseURL, model, realModel, nArg, harmony] = process.argv.slice(2);
const N = Number(nArg || 200);
const client = new OpenAI({ baseURL, apiKey: "unused", maxRetries: 0, timeout: 120000 });
const ajv = new Ajv({ strict: true, allErrors: true });
addFormats(ajv);
let failed = 0;

function check(cond, what, detail) {
	console.log(`${cond ? "ok  " : "FAIL"} ${what}${cond ? "" : ": " + JSON.stringify(detail).slice(0, 2000)}`);
	if (!cond) failed++;
}

const schemas = {
	small: {
		type: "object",
		properties: { name: { type: "string", maxLength: 20 }, age: { type: "integer", minimum: 0, maximum: 150 } },
		required: ["name", "age"],
		additionalProperties: false,
	},
	medium: {
		type: "object",
		properties: {
			id: { type: "string", format: "uuid" },
			title: { type: "string", minLength: 1, maxLength: 30 },
			tags: { type: "array", items: { enum: ["red", "green", "blue"] }, minItems: 1, maxItems: 3 },
			score: { type: "number", minimum: -10, maximum: 10 },
			done: { type: "boolean" },
			when: { type: "string", format: "date" },
			at: { type: "string", format: "date-time" },
			mail: { type: "string", format: "email" },
			code: { type: "string", pattern: "^[A-Z]{2}-[0-9]{3}$" },
			kind: { const: "task" },
			note: { anyOf: [{ type: "string", maxLength: 10 }, { type: "null" }] },
		},
		required: ["id", "title", "tags", "score", "done", "kind"],
		additionalProperties: false,
	},
	large: {
		$defs: {
			node: {
				type: "object",
				properties: {
					label: { type: "string", maxLength: 8 },
					weight: { type: "integer", exclusiveMinimum: -5, exclusiveMaximum: 100 },
					children: { type: "array", items: { $ref: "#/$defs/node" }, maxItems: 2 },
				},
				required: ["label"],
				additionalProperties: false,
			},
			addr: {
				type: "object",
				properties: {
					street: { type: "string", maxLength: 16 },
					zip: { type: "string", pattern: "^[0-9]{5}$" },
					country: { enum: ["FR", "DE", "JP", null, 7] },
				},
				required: ["street", "zip", "country"],
				additionalProperties: false,
			},
		},
		type: "object",
		properties: {
			tree: { $ref: "#/$defs/node" },
			home: { $ref: "#/$defs/addr" },
			work: { anyOf: [{ $ref: "#/$defs/addr" }, { type: "null" }] },
			pairs: { type: "array", items: { type: "array", items: { type: "integer" }, minItems: 2, maxItems: 2 }, maxItems: 3 },
			ratio: { type: "number", minimum: 0, maximum: 1 },
			flags: { type: "object", properties: { a: { type: "boolean" }, b: { type: "boolean" } }, additionalProperties: false },
		},
		required: ["tree", "home", "work", "ratio"],
		additionalProperties: false,
	},
};

const extra = {}; // per model: more request fields

async function generate(m, name, schema, i) {
	const r = await client.chat.completions.create({
		model: m,
		messages: [{ role: "user", content: `Give me ${name} JSON ${i}` }],
		temperature: 1,
		seed: i,
		max_tokens: 600,
		response_format: { type: "json_schema", json_schema: { name, schema, strict: true } },
		...extra[m],
	});
	return r.choices[0];
}

// @n generations of @schema on @m, 8 at a time: [complete, cut, invalid outputs, reasoned]
async function run(m, name, schema, n) {
	const validate = ajv.compile(schema);
	let complete = 0, cut = 0, reasoned = 0;
	const bad = [];
	for (let i = 0; i < n; i += 8) {
		const batch = [];
		for (let k = i; k < Math.min(n, i + 8); k++) batch.push(generate(m, name, schema, k));
		for (const c of await Promise.all(batch)) {
			if (c.finish_reason === "length") { cut++; continue; }
			if (c.message.reasoning_content) reasoned++;
			let v;
			try { v = JSON.parse(c.message.content); } catch (e) { bad.push({ text: c.message.content, error: String(e) }); continue; }
			if (c.finish_reason === "stop" && validate(v)) complete++;
			else bad.push({ text: c.message.content, finish: c.finish_reason, errors: validate.errors });
		}
	}
	return [complete, cut, bad, reasoned];
}

for (const [name, schema] of Object.entries(schemas)) {
	const t0 = Date.now();
	const [complete, cut, bad] = await run(model, name, schema, N);
	check(bad.length === 0, `${name}: every completed output of ${N} validates (${complete} complete, ${cut} cut by max_tokens, ${Date.now() - t0} ms)`, bad.slice(0, 3));
	check(complete >= N * 0.9, `${name}: at least 90% complete within max_tokens (${complete}/${N})`, { complete, cut });
}

// cut short: finish_reason "length", and the text is where it stopped
{
	const r = await client.chat.completions.create({
		model, messages: [{ role: "user", content: "x" }], temperature: 1, seed: 3, max_tokens: 3,
		response_format: { type: "json_schema", json_schema: { name: "large", schema: schemas.large } },
	});
	check(r.choices[0].finish_reason === "length" && r.choices[0].message.content.startsWith("{"),
		"a generation cut by max_tokens ends with finish_reason length", r.choices[0]);
}

// Streamed on @m with schema @name: whether the deltas joined end "stop" and validate.
async function streamed(m, name, what) {
	const stream = await client.chat.completions.create({
		model: m, messages: [{ role: "user", content: "stream" }], temperature: 1, seed: 5, max_tokens: 600,
		stream: true, ...extra[m],
		response_format: { type: "json_schema", json_schema: { name, schema: schemas[name], strict: true } },
	});
	let text = "", finish = null;
	for await (const chunk of stream) {
		text += chunk.choices[0]?.delta?.content ?? "";
		finish = chunk.choices[0]?.finish_reason ?? finish;
	}
	const validate = ajv.compile(schemas[name]);
	let ok = false;
	try { ok = finish === "stop" && validate(JSON.parse(text)); } catch { ok = false; }
	check(ok, what, { text, finish, errors: validate.errors });
}

// streamed: the deltas joined are the same kind of valid output
await streamed(model, "medium", "streamed json_schema output validates");

// json_object: any JSON object
{
	let objects = 0;
	for (let i = 0; i < 8; i++) {
		const r = await client.chat.completions.create({
			model, messages: [{ role: "user", content: "json" }], temperature: 1, seed: 100 + i, max_tokens: 600,
			response_format: { type: "json_object" },
		});
		const c = r.choices[0];
		try {
			const v = JSON.parse(c.message.content);
			if (c.finish_reason === "stop" && v !== null && typeof v === "object" && !Array.isArray(v)) objects++;
		} catch { /* counted as not an object */ }
		if (c.finish_reason === "length") objects++; /* cut: not checkable, not wrong */
	}
	check(objects === 8, "json_object outputs are JSON objects", objects);
}

// a real vocabulary: byte-level BPE tokens that span several JSON tokens
if (realModel) {
	const [complete, cut, bad] = await run(realModel, "medium", schemas.medium, 16);
	check(bad.length === 0 && complete >= 12, `Qwen2's vocabulary: every completed output of 16 validates (${complete} complete, ${cut} cut)`, bad.slice(0, 3));
}

// harmony: the schema shapes the final channel; an analysis may come first
if (harmony) {
	const t = await (await fetch(baseURL.replace(/\/v1\/?$/, "") + "/tokenize", {
		method: "POST", headers: { "Content-Type": "application/json" },
		body: JSON.stringify({ model: harmony, content: "<|end|>" }),
	})).json();
	extra[harmony] = { logit_bias: { [t.tokens[0]]: 12 } };
	const n = Math.max(3, Math.round(N / 10));
	let reasonedAll = 0;
	for (const [name, schema] of Object.entries(schemas)) {
		const [complete, cut, bad, reasoned] = await run(harmony, name, schema, n);
		reasonedAll += reasoned;
		check(bad.length === 0 && complete >= 1, `harmony ${name}: every completed output of ${n} validates (${complete} complete, ${cut} cut, ${reasoned} with reasoning)`, bad.slice(0, 3));
	}
	check(reasonedAll > 0, "harmony: some answers came after an analysis (reasoning_content)", reasonedAll);
	await streamed(harmony, "small", "harmony: streamed json_schema content validates");
}

console.log(failed ? `${failed} failed` : "all passed");
process.exit(failed ? 1 : 0);
