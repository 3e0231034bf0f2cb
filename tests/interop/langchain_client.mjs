// langchain_client.mjs - LangChain JS (@langchain/openai's ChatOpenAI with a
// baseURL, the way applications point LangChain at vLLM or llama-server)
// against a running orchd serving a random-weight model whose chat template
// teaches the hermes call syntax (Qwen2.5's): the model knows nothing, so
// what validates is the grammar's doing. Each result is checked by the zod
// schema it was asked for (zod's own parser, not orch's):
//
// - withStructuredOutput(zodSchema) with method jsonSchema (response_format
//   json_schema, strict) and functionCalling (a forced tool call);
// - bindTools([tool], {tool_choice: "any"}) (LangChain's word for
//   "required"): AIMessage.tool_calls with parsed args, invoked and streamed
//   (tool_call_chunks joined);
// - the tool's result sent back as a ToolMessage: another turn.
//
// usage: node langchain_client.mjs BASE_URL MODEL N [EXTRA_JSON]
// EXTRA_JSON: more request fields for every call (modelKwargs), e.g. a
// logit_bias that lets a random harmony model end its analysis.
// Prints one line per check; exit status 1 when any fails.
import { ChatOpenAI } from "@langchain/openai";
import { AIMessage, HumanMessage, ToolMessage } from "@langchain/core/messages";
import { z } from "zod";

const [baseURL, model, nArg, extraArg] = process.argv.slice(2);
const extra = JSON.parse(extraArg || "{}");
const N = Number(nArg || 4);
let failed = 0;

function check(cond, what, detail) {
	console.log(`${cond ? "ok  " : "FAIL"} ${what}${cond ? "" : ": " + JSON.stringify(detail).slice(0, 2000)}`);
	if (!cond) failed++;
}

const llm = (seed) =>
	new ChatOpenAI({
		model, apiKey: "unused", temperature: 1, maxTokens: 300, maxRetries: 0, timeout: 120000,
		configuration: { baseURL }, modelKwargs: { seed, ...extra },
	});
const Person = z.object({
	name: z.string().max(20),
	age: z.number().int().min(0).max(150),
	role: z.enum(["admin", "user"]),
	tags: z.array(z.string().max(8)).max(3),
});
const weather = {
	name: "get_weather",
	description: "The weather in a city",
	schema: z.object({ city: z.string().min(1).max(20), unit: z.enum(["celsius", "fahrenheit"]) }),
};

async function structured(method) {
	const bad = [];
	let good = 0;
	for (let i = 0; i < N; i++) {
		try {
			const out = await llm(100 + i).withStructuredOutput(Person, { name: "person", method, strict: true })
				.invoke("Describe a person.");
			const r = Person.safeParse(out);
			if (!r.success) bad.push({ out, err: r.error.issues });
			else good++;
		} catch (e) {
			// a generation cut by maxTokens cannot parse: LangChain throws; count it apart
			if (!/length|parse|JSON/i.test(String(e))) bad.push(String(e));
		}
	}
	check(good > 0 && bad.length === 0, `withStructuredOutput(zod), method ${method}: ${good} of ${N} results, all parse with zod`, bad.slice(0, 3));
}

async function tools() {
	const bad = [];
	let last;
	for (let i = 0; i < N; i++) {
		const msg = await llm(200 + i).bindTools([weather], { tool_choice: "any" }).invoke("Weather in Paris?");
		if (msg.response_metadata?.finish_reason === "length") continue;
		if (!msg.tool_calls?.length) bad.push({ why: "no tool_calls", msg });
		for (const c of msg.tool_calls || []) {
			const r = weather.schema.safeParse(c.args);
			if (c.name !== "get_weather" || !c.id || !r.success) bad.push({ c, err: r.error?.issues });
		}
		last = last || (msg.tool_calls?.length ? msg : undefined);
	}
	check(last !== undefined && bad.length === 0, "bindTools, tool_choice any: tool_calls whose args zod accepts", bad.slice(0, 3));
	return last;
}

async function streamed() {
	let joined;
	const s = await llm(300).bindTools([weather], { tool_choice: "any" }).stream("Weather in Oslo?");
	for await (const chunk of s) joined = joined ? joined.concat(chunk) : chunk;
	const calls = joined?.tool_calls || [];
	const ok = calls.length > 0 && calls.every((c) => c.name === "get_weather" && weather.schema.safeParse(c.args).success);
	check(ok || joined?.response_metadata?.finish_reason === "length",
		"bindTools streamed: tool_call_chunks joined into valid tool_calls", joined?.tool_calls);
}

async function roundTrip(ai) {
	if (!ai) return check(false, "a tool call to answer", ai);
	const call = ai.tool_calls[0];
	const msg = await llm(400).bindTools([weather]).invoke([
		new HumanMessage("Weather in Paris?"),
		new AIMessage({ content: "", tool_calls: [call] }),
		new ToolMessage({ content: '{"temperature": 21}', tool_call_id: call.id }),
	]);
	check(msg.usage_metadata?.input_tokens > 0, `the ToolMessage turn is taken (${msg.usage_metadata?.input_tokens} prompt tokens)`, msg);
}

try {
	await structured("jsonSchema");
	await structured("functionCalling");
	await roundTrip(await tools());
	await streamed();
} catch (e) {
	check(false, "no exception", String(e.stack || e));
}
console.log(failed ? `${failed} failed` : "all passed");
process.exit(failed ? 1 : 0);
