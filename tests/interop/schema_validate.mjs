// schema_validate.mjs - ajv (with ajv-formats) over outputs orch made under real-world
// schemas (issue 56): reads a JSON file [{name, schema, outputs: [text...]}], picks
// ajv's class by the schema's $schema (draft-04 through 2020-12, 2020-12 when absent),
// validates every output, and prints one JSON line per schema:
// {"name", "strict", "invalid": [{"output", "errors"}]}. strict is true when the
// schema compiles under ajv's strict mode; a schema that is not strict-clean
// (keywords ajv does not know, as real schemas have) is validated with strict off,
// and the line says so. A schema ajv cannot compile at all prints "error".
//
// usage: node schema_validate.mjs FILE
import { readFileSync } from "node:fs";
import Ajv04 from "ajv-draft-04";
import Ajv07 from "ajv";
import Ajv2019 from "ajv/dist/2019.js";
import Ajv2020 from "ajv/dist/2020.js";
import addFormats from "ajv-formats";
import draft6 from "ajv/dist/refs/json-schema-draft-06.json" with { type: "json" };

function make(schema, strict) {
	const tag = typeof schema.$schema === "string" ? schema.$schema : "";
	const opts = { strict, allErrors: true, validateSchema: false, logger: false };
	let ajv;
	if (tag.includes("draft-04")) ajv = new Ajv04(opts);
	else if (tag.includes("draft-06") || tag.includes("draft-07")) {
		ajv = new Ajv07(opts);
		ajv.addMetaSchema(draft6);
	} else if (tag.includes("2019-09")) ajv = new Ajv2019(opts);
	else ajv = new Ajv2020(opts);
	addFormats(ajv);
	return ajv.compile(schema);
}

const items = JSON.parse(readFileSync(process.argv[2], "utf8"));
for (const it of items) {
	let strict = true, validate;
	try {
		validate = make(it.schema, true);
	} catch {
		strict = false;
		try {
			validate = make(it.schema, false);
		} catch (e) {
			console.log(JSON.stringify({ name: it.name, error: String(e).slice(0, 300) }));
			continue;
		}
	}
	const invalid = [];
	for (const out of it.outputs) {
		if (!validate(JSON.parse(out)))
			invalid.push({ output: out.slice(0, 2000), errors: validate.errors.slice(0, 3) });
	}
	console.log(JSON.stringify({ name: it.name, strict, invalid }));
}
