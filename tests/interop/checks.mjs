// checks.mjs - what the openai-client tests share: the client for BASE_URL (no
// retries, so a refusal is seen as it is), and check(), one line per check.
import OpenAI from "openai";

export const counts = { failed: 0 };

export function openaiClient(baseURL) {
	return new OpenAI({ baseURL, apiKey: "unused", maxRetries: 0, timeout: 30000 });
}

export function check(cond, what, detail) {
	console.log(`${cond ? "ok  " : "FAIL"} ${what}${cond ? "" : ": " + JSON.stringify(detail)}`);
	if (!cond) counts.failed++;
}
