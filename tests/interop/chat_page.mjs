// chat_page.mjs - orchd's chat page in a real browser (Debian's chromium,
// headless, driven by playwright-core): the models load, a message sent
// with Enter streams an answer from the model and its tokens/s line shows,
// Shift+Enter is a new line, Stop ends a long answer (the network throttled
// so that it is still streaming), an error body is shown in words, and
// a conversation longer than the context is fitted to it (the oldest turns
// left out, said) and a message too long alone says what to change,
// reasoning (delta.reasoning_content) renders in its block - from gpt-oss
// through orchd when the "oss" model is given, and always from a canned
// stream the page is handed (no model emits reasoning otherwise).
// Screenshots go to OUT_DIR. No console error (a CSP violation is one) may
// occur. Run by tests/integration/orchd_chat_page_test.py:
//   node chat_page.mjs CHROMIUM URL OUT_DIR [oss]
import { chromium } from "playwright-core";
import path from "node:path";

const [chromiumPath, url, outDir, oss] = process.argv.slice(2);
let passed = 0, failed = 0;
function check(cond, what) {
	if (cond) passed++;
	else {
		failed++;
		console.error("FAIL:", what);
	}
}

const T = 30000; // ms, for anything that waits on the model

async function shot(page, name) {
	const file = path.join(outDir, name);
	await page.screenshot({ path: file, fullPage: true });
	console.log("screenshot:", file);
}

// Send @text with Enter; wait for the newest assistant bubble's stats line: {text, stats, reasoning}.
async function ask(page, text) {
	const n = await page.locator(".msg.assistant").count();
	await page.fill("#prompt", text);
	await page.press("#prompt", "Enter");
	const bubble = page.locator(".msg.assistant").nth(n);
	await bubble.locator(".stats").waitFor({ timeout: T });
	const reasoning = bubble.locator(".reasoning .text");
	return {
		text: await bubble.locator(":scope > .text").textContent(),
		stats: await bubble.locator(".stats").textContent(),
		reasoning: (await reasoning.count()) ? await reasoning.textContent() : null,
	};
}

async function basics(page) {
	await page.goto(url);
	await page.locator("#model option[value=stories]").waitFor({ state: "attached", timeout: T });
	check(await page.title() === "orch chat", "the title");
	await page.selectOption("#model", "stories");
	await page.fill("#max-tokens", "24");
	await page.fill("#temperature", "0");
	// Shift+Enter is a new line, nothing is sent
	await page.fill("#prompt", "a");
	await page.press("#prompt", "Shift+Enter");
	await page.type("#prompt", "b");
	check(await page.inputValue("#prompt") === "a\nb", "Shift+Enter: a new line");
	check(await page.locator(".msg").count() === 0, "Shift+Enter sends nothing");
	const a = await ask(page, "Once upon a time, there was a little dog.");
	check(await page.locator(".msg.user .text").first().textContent() ===
		"Once upon a time, there was a little dog.", "the user's bubble");
	check(a.text.trim().length > 0, "a streamed answer: " + JSON.stringify(a.text));
	check(/^24 tokens · [0-9.]+ tok\/s · first token \d+ ms$/.test(a.stats), "the stats line: " + a.stats);
	check(await page.inputValue("#prompt") === "", "the prompt is cleared");
	check(!(await page.isDisabled("#send")) && await page.isDisabled("#stop"), "Send on, Stop off after");
	console.log("answer:", JSON.stringify(a.text), "|", a.stats);
	// a second turn carries the first: the conversation grows
	const b = await ask(page, "What did the dog do?");
	check(b.text.trim().length > 0 && await page.locator(".msg").count() === 4, "a second turn");
	await shot(page, "chat_page.png");
}

async function stop(page, cdp) {
	await page.fill("#max-tokens", "1024"); // prompt + max_tokens must fit the 2048 context
	// ~2 KB/s: the answer (hundreds of chunks of ~250 bytes) streams for minutes
	await cdp.send("Network.emulateNetworkConditions", { offline: false, latency: 0,
		downloadThroughput: 2000, uploadThroughput: -1 });
	const n = await page.locator(".msg.assistant").count();
	await page.fill("#prompt", "Tell me a very long story.");
	await page.press("#prompt", "Enter");
	const bubble = page.locator(".msg.assistant").nth(n);
	await page.waitForFunction((i) => {
		const t = document.querySelectorAll(".msg.assistant")[i].querySelector(":scope > .text");
		return t && t.textContent.length > 0;
	}, n, { timeout: T });
	check(await page.isEnabled("#stop") && await page.isDisabled("#send"), "Stop on while streaming");
	await page.click("#stop");
	await bubble.locator(".stats").waitFor({ timeout: 5000 });
	const stats = await bubble.locator(".stats").textContent();
	const text = await bubble.locator(":scope > .text").textContent();
	check(/stopped$/.test(stats), "Stop: the stats line says stopped: " + stats);
	await page.waitForTimeout(500); // nothing more may arrive after Stop
	check(await bubble.locator(":scope > .text").textContent() === text, "Stop: the text stays");
	check(!(await page.isDisabled("#send")), "Send on again after Stop");
	await cdp.send("Network.emulateNetworkConditions", { offline: false, latency: 0,
		downloadThroughput: -1, uploadThroughput: -1 });
}

// A conversation longer than the model's context ("small": 256 tokens): the oldest turns are
// left out and the page says so; a message that cannot fit alone is an error saying what to change.
async function fit(page) {
	await page.click("#new-chat");
	await page.selectOption("#model", "small");
	await page.fill("#max-tokens", "100");
	await page.fill("#temperature", "0");
	const long = "Once upon a time, there was a little girl who liked to play in the park with her " +
		"friends and her dog every day after school. ";
	const a = await ask(page, long + long);
	check(a.text.trim().length > 0, "fit: the first turn is answered");
	const b = await ask(page, long + long);
	const note = page.locator(".msg.assistant").last().locator(".note");
	check(b.text.trim().length > 0 && await note.count() === 1 &&
		/^The oldest turn was left out to fit the model's context of 256 tokens\.$/.test(
			await note.textContent()),
		"fit: the second turn is answered, the first left out, said: " +
		(await note.count() ? await note.textContent() : "(no note)"));
	await shot(page, "chat_page_fit.png");
	await page.fill("#prompt", long.repeat(12));
	await page.press("#prompt", "Enter");
	const e = page.locator(".msg.error").last();
	await e.waitFor({ timeout: T });
	const text = await e.textContent();
	check(/CONTEXT_LENGTH_EXCEEDED/.test(text) && /lower Max tokens \(now 100\)/.test(text) &&
		/larger context than 256 tokens/.test(text), "fit: a message too long alone says what to change: " + text);
	await page.selectOption("#model", "stories");
}

async function errors(page) {
	await page.fill("#temperature", "7");
	await page.fill("#max-tokens", "8");
	await page.fill("#prompt", "hello");
	await page.press("#prompt", "Enter");
	const e = page.locator(".msg.error").last();
	await e.waitFor({ timeout: T });
	const text = await e.textContent();
	check(text === "'temperature' must be in [0, 2], got 7 (INVALID_REQUEST)",
		"an error body in words: " + text);
	await page.fill("#temperature", "0");
}

// A canned stream (role, reasoning, content, usage, [DONE]) for this page only.
async function cannedReasoning(page) {
	const chunk = (o) => "data: " + JSON.stringify(o) + "\n\n";
	const body = chunk({ choices: [{ index: 0, delta: { role: "assistant", content: "" } }] }) +
		chunk({ choices: [{ index: 0, delta: { reasoning_content: "Think <b>first</b>, " } }] }) +
		chunk({ choices: [{ index: 0, delta: { reasoning_content: "then answer." } }] }) +
		chunk({ choices: [{ index: 0, delta: { content: "The answer." } }] }) +
		chunk({ choices: [{ index: 0, delta: {}, finish_reason: "stop" }] }) +
		chunk({ choices: [], usage: { prompt_tokens: 3, completion_tokens: 3, total_tokens: 6 } }) +
		"data: [DONE]\n\n";
	await page.route("**/v1/chat/completions", (r) =>
		r.fulfill({ status: 200, contentType: "text/event-stream", body }));
	await page.click("#new-chat");
	const a = await ask(page, "canned");
	await page.unroute("**/v1/chat/completions");
	check(a.reasoning === "Think <b>first</b>, then answer.", "canned: reasoning as text: " + a.reasoning);
	check(a.text === "The answer." && /^3 tokens /.test(a.stats), "canned: content, usage: " + a.stats);
	check(await page.locator(".reasoning b").count() === 0, "canned: no markup from the model");
}

async function gptOss(page) {
	await page.click("#new-chat");
	await page.selectOption("#model", "oss");
	await page.fill("#max-tokens", "64");
	const a = await ask(page, "Say hello");
	check(a.reasoning === "The user wants a greeting. 👋", "gpt-oss: reasoning: " + a.reasoning);
	check(a.text === "Hello, world!", "gpt-oss: content: " + a.text);
	check(await page.locator(".reasoning summary").first().textContent() === "Reasoning", "the block's title");
	await shot(page, "chat_page_reasoning.png");
}

const browser = await chromium.launch({ executablePath: chromiumPath, headless: true });
try {
	const page = await browser.newPage({ viewport: { width: 1000, height: 700 } });
	const problems = [];
	page.on("console", (m) => m.type() === "error" && problems.push(m.text()));
	page.on("pageerror", (e) => problems.push(e.message));
	const cdp = await page.context().newCDPSession(page);
	await basics(page);
	await stop(page, cdp);
	await errors(page);
	await fit(page);
	await cannedReasoning(page);
	if (oss) await gptOss(page);
	// the error test's 400 is logged by chromium as a failed resource load; nothing else may be
	const other = problems.filter((p) => !/status of 400/.test(p));
	check(other.length === 0, "no console errors: " + JSON.stringify(other));
} catch (e) {
	failed++;
	console.error("FAIL:", e.stack || e);
} finally {
	await browser.close();
}
console.log(`chat_page.mjs: ${passed} passed, ${failed} failed`);
process.exit(failed ? 1 : 0);
