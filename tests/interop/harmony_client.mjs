// harmony_client.mjs - the official `openai` npm client against orchd serving
// a gpt-oss model whose output the worker's test hook scripts (see
// tests/integration/orchd_harmony_test.py): a chat with a system prompt and a
// tool; reasoning_content and content apart, streamed and not; a tool call as
// tool_calls, streamed and not; the client's own assistant message (tool
// call, reasoning and all) sent back with the tool's result, as applications
// do, answered.
//
// usage: node harmony_client.mjs BASE_URL MODEL
// Prints one line per check; exit status 1 when any fails.
import { check, counts, openaiClient } from "./checks.mjs";

const [baseURL, model] = process.argv.slice(2);
const client = openaiClient(baseURL);

const system = { role: "system", content: "You are a terse assistant." };
const tools = [{
	type: "function",
	function: {
		name: "get_weather",
		description: "Current weather in a city",
		parameters: { type: "object", properties: { city: { type: "string" } }, required: ["city"] },
	},
}];

// reasoning and answer, not streamed, then streamed
const hello = [system, { role: "user", content: "Say hello" }];
const plain = await client.chat.completions.create({ model, messages: hello, temperature: 0 });
const msg = plain.choices[0].message;
check(msg.content === "Hello, world!", "content is the final channel", msg);
check(msg.reasoning_content === "The user wants a greeting. 👋", "reasoning_content is the analysis", msg);
check(plain.choices[0].finish_reason === "stop", "finish_reason stop", plain.choices[0]);

let reasoning = "", content = "", sawContentFirst = false;
const stream = await client.chat.completions.create({ model, messages: hello, stream: true });
for await (const chunk of stream) {
	for (const c of chunk.choices) {
		if (c.delta?.reasoning_content) {
			if (content) sawContentFirst = true;
			reasoning += c.delta.reasoning_content;
		}
		content += c.delta?.content ?? "";
	}
}
check(reasoning === msg.reasoning_content && content === msg.content && !sawContentFirst,
	"streamed reasoning then content, as plain", { reasoning, content });

// a tool call, not streamed
const ask = [system, { role: "user", content: "What is the weather in Paris?" }];
const called = await client.chat.completions.create({ model, messages: ask, tools, tool_choice: "auto" });
const cmsg = called.choices[0].message;
const call = cmsg.tool_calls?.[0];
check(called.choices[0].finish_reason === "tool_calls", "finish_reason tool_calls", called.choices[0]);
check(cmsg.tool_calls?.length === 1 && call.type === "function" && call.function.name === "get_weather",
	"one call of get_weather", cmsg);
check(JSON.parse(call?.function?.arguments ?? "null")?.city === "Paris", "its arguments parse", call);
check(cmsg.reasoning_content === "I should call get_weather.", "the reasoning before the call", cmsg);

// the same, streamed: the SDK's stream helper puts the deltas together
const runner = client.chat.completions.stream({ model, messages: ask, tools });
const final = await runner.finalChatCompletion();
const scall = final.choices[0].message.tool_calls?.[0];
check(scall?.function?.name === "get_weather" && scall?.function?.arguments === call?.function?.arguments &&
	scall?.id?.startsWith("call_") && final.choices[0].finish_reason === "tool_calls",
	"streamed tool call assembled by the SDK", final.choices[0]);

// the round trip: the assistant message as received, then the tool's result
const back = [...ask, cmsg, { role: "tool", tool_call_id: call?.id, content: "sunny, 22C" }];
const answer = await client.chat.completions.create({ model, messages: back, tools });
check(answer.choices[0].message.content === "It is sunny in Paris, 22 °C.", "the tool's result answered",
	answer.choices[0]);

if (counts.failed) {
	console.log(`${counts.failed} failed`);
	process.exit(1);
}
console.log("all passed");
