// schema_fuzz.mjs - constrained output against random JSON schemas: a seeded
// generator writes schemas from the subset orch takes (docs/json-schema.md:
// types, properties/required/additionalProperties false, enum, const,
// anyOf, oneOf with disjoint branches, allOf of bounds, items, prefixItems,
// minItems/maxItems, string lengths, patterns, formats, number ranges,
// $defs/$ref with recursion), orchd generates from each with a random-weight
// model (the model knows nothing: a valid output is the grammar's doing),
// and ajv, a validator that is not orch's, checks every completed output.
// A schema orchd refuses is a failure too: the generator writes only what
// the documented subset takes.
//
// usage: node schema_fuzz.mjs BASE_URL MODEL SCHEMAS GENS [SEED]
// Prints one line per schema that fails (with the schema and the output to
// replay it), then a summary; exit status 1 when any fails.
import Ajv from "ajv/dist/2020.js";
import addFormats from "ajv-formats";

const [baseURL, model, nSchemas, nGens, seedArg] = process.argv.slice(2);
const SCHEMAS = Number(nSchemas || 40), GENS = Number(nGens || 5);
const SEED = Number(seedArg || 20261123);
const ajv = new Ajv({ strict: true, strictTypes: false, strictTuples: false, allErrors: true });
addFormats(ajv);

// mulberry32: a small seeded PRNG, so a failing seed replays
function prng(seed) {
	let a = seed >>> 0;
	return () => {
		a = (a + 0x6d2b79f5) >>> 0;
		let t = a;
		t = Math.imul(t ^ (t >>> 15), t | 1);
		t ^= t + Math.imul(t ^ (t >>> 7), t | 61);
		return ((t ^ (t >>> 14)) >>> 0) / 4294967296;
	};
}
let rnd = prng(SEED);
const int = (lo, hi) => lo + Math.floor(rnd() * (hi - lo + 1));
const pick = (a) => a[int(0, a.length - 1)];
const chance = (p) => rnd() < p;

const WORDS = ["red", "green", "blue", "x", "hello world", "a\"b", "tab\t", "é", "日本", ""];
const PATTERNS = ["^[a-z]{2,5}$", "^[A-Z][a-z]{0,6}$", "^\\d{3}-\\d{4}$", "^(foo|bar){1,3}$", "^[0-9a-f]{8}$",
	"^v\\d+\\.\\d+$", "^(?:yes|no|maybe)$", "^[^\"\\\\]{1,4}$", "^a.c$", "^\\w{1,6}$"];
const FORMATS = ["date", "time", "date-time", "uuid", "email"];

function strSchema() {
	switch (int(0, 4)) {
	case 0: {
		const lo = int(0, 3);
		return { type: "string", minLength: lo, maxLength: lo + int(0, 8) };
	}
	case 1: return { type: "string", pattern: pick(PATTERNS) };
	case 2: return { type: "string", format: pick(FORMATS) };
	case 3: return { enum: [...new Set(Array.from({ length: int(1, 4) }, () => pick(WORDS)))] };
	default: return { const: pick(WORDS) };
	}
}

function numSchema() {
	const type = chance(0.6) ? "integer" : "number";
	if (chance(0.3)) return { type };
	const lo = int(-1000, 1000), hi = lo + int(1, 2000);
	const s = { type };
	if (chance(0.5)) s.minimum = lo; else s.exclusiveMinimum = lo;
	if (chance(0.5)) s.maximum = hi; else s.exclusiveMaximum = hi;
	if (chance(0.15)) return { allOf: [{ type, minimum: lo }, { maximum: hi }] };
	return s;
}

function leaf() {
	switch (int(0, 5)) {
	case 0: case 1: return strSchema();
	case 2: case 3: return numSchema();
	case 4: return { type: "boolean" };
	default: return chance(0.5) ? { type: "null" } : { enum: [1, "one", null, true, 2.5] };
	}
}

// a schema of each of these types, for oneOf branches that cannot overlap
function ofType(t, depth, defs) {
	switch (t) {
	case "string": return { type: "string", maxLength: int(0, 6) };
	case "integer": return chance(0.5) ? { type: "integer", minimum: 0, maximum: 99 } : { type: "integer" };
	case "boolean": return { type: "boolean" };
	case "null": return { type: "null" };
	case "array": return { type: "array", items: gen(depth + 1, defs), maxItems: int(0, 3) };
	default: return objSchema(depth + 1, defs);
	}
}

function objSchema(depth, defs) {
	const props = {}, names = [];
	const n = int(1, 4);
	for (let i = 0; i < n; i++) {
		const name = pick(["id", "name", "a", "b", "value", "list", "nested", "ok", "ü", "k" + i]) + (names.length ? i : "");
		if (props[name]) continue;
		props[name] = gen(depth + 1, defs);
		names.push(name);
	}
	const s = { type: "object", properties: props };
	const req = names.filter(() => chance(0.6));
	if (req.length) s.required = req;
	if (chance(0.7)) s.additionalProperties = false;
	return s;
}

function arrSchema(depth, defs) {
	if (chance(0.2)) {
		const prefix = Array.from({ length: int(1, 3) }, () => gen(depth + 1, defs));
		return { type: "array", prefixItems: prefix, items: false, minItems: int(0, prefix.length) };
	}
	const lo = int(0, 2);
	return { type: "array", items: gen(depth + 1, defs), minItems: lo, maxItems: lo + int(0, 3) };
}

function gen(depth, defs) {
	const r = rnd();
	if (depth >= 3 || r < 0.35) return leaf();
	if (r < 0.55) return objSchema(depth, defs);
	if (r < 0.7) return arrSchema(depth, defs);
	if (r < 0.8) return { anyOf: Array.from({ length: int(2, 3) }, () => gen(depth + 1, defs)) };
	if (r < 0.88) {
		const types = ["string", "integer", "boolean", "null", "array", "object"].sort(() => rnd() - 0.5);
		return { oneOf: types.slice(0, int(2, 3)).map((t) => ofType(t, depth, defs)) };
	}
	// a named definition, used here and maybe again elsewhere
	const name = "d" + Object.keys(defs).length;
	defs[name] = {}; // the name taken before the definitions inside it take theirs
	defs[name] = gen(depth + 1, defs);
	return { $ref: "#/$defs/" + name };
}

function schema() {
	const defs = {};
	let s = chance(0.8) ? objSchema(0, defs) : gen(0, defs);
	if (chance(0.15)) { // a recursive node: each level may stop (an optional, short list)
		defs.node = {
			type: "object",
			properties: { v: { type: "integer", minimum: 0, maximum: 9 }, kids: { type: "array", items: { $ref: "#/$defs/node" }, maxItems: 2 } },
			required: ["v"],
			additionalProperties: false,
		};
		s = { type: "object", properties: { root: { $ref: "#/$defs/node" }, extra: s }, required: ["root"], additionalProperties: false };
	}
	if (Object.keys(defs).length) s.$defs = defs;
	return s;
}

async function generate(s, i) {
	const r = await fetch(baseURL + "/chat/completions", {
		method: "POST",
		headers: { "Content-Type": "application/json" },
		body: JSON.stringify({
			model,
			messages: [{ role: "user", content: "JSON " + i }],
			temperature: 1,
			seed: i,
			max_tokens: 400,
			response_format: { type: "json_schema", json_schema: { name: "fuzz", schema: s, strict: true } },
		}),
	});
	return { status: r.status, body: await r.json() };
}

let failed = 0, complete = 0, cut = 0;
for (let k = 0; k < SCHEMAS; k++) {
	rnd = prng(SEED + k); // schema k alone replays from SEED + k
	const s = schema();
	let validate;
	try {
		validate = ajv.compile(s);
	} catch (e) {
		console.log(`FAIL schema ${k} (seed ${SEED + k}): the generator wrote a schema ajv refuses: ${e} ${JSON.stringify(s)}`);
		failed++;
		continue;
	}
	const rs = await Promise.all(Array.from({ length: GENS }, (_, i) => generate(s, i)));
	const bad = [];
	for (const { status, body } of rs) {
		if (status !== 200) { bad.push({ status, error: body.error }); continue; }
		const c = body.choices[0];
		if (c.finish_reason === "length") { cut++; continue; }
		let v;
		try { v = JSON.parse(c.message.content); } catch (e) { bad.push({ text: c.message.content, error: String(e) }); continue; }
		if (c.finish_reason !== "stop" || !validate(v))
			bad.push({ text: c.message.content, finish: c.finish_reason, errors: validate.errors });
		else
			complete++;
	}
	if (bad.length) {
		failed++;
		console.log(`FAIL schema ${k} (seed ${SEED + k}): ${JSON.stringify(bad[0]).slice(0, 1500)} schema ${JSON.stringify(s)}`);
	}
}
const total = SCHEMAS * GENS;
console.log(`schema_fuzz: seed ${SEED}, ${SCHEMAS} schemas x ${GENS}: ${complete} complete and valid, ${cut} cut by max_tokens, ${failed} schemas failed`);
if (complete < total / 4) {
	console.log(`FAIL fewer than a quarter of the generations completed (${complete} of ${total}): the check is too weak`);
	failed++;
}
if (failed === 0) console.log("all passed");
process.exit(failed ? 1 : 0);
