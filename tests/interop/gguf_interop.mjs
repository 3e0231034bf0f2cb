// gguf_interop.mjs ORCHCTL FILE... - read each GGUF with an independent
// parser (@huggingface/gguf) and compare it with what orch's reader reports
// (orchctl inspect --json --tensors): architecture, hyper-parameters,
// vocabulary size, and every tensor's name, shape, type id and offset.
// Prints "N passed, N failed"; exits non-zero on any difference.
import { gguf } from "@huggingface/gguf";
import { execFileSync } from "node:child_process";

const [orchctl, ...files] = process.argv.slice(2);
let passed = 0, failed = 0;

function check(file, what, ours, theirs) {
	if (ours === theirs) return true;
	console.error(`FAIL ${file}: ${what}: orch ${ours}, @huggingface/gguf ${theirs}`);
	return false;
}

for (const file of files) {
	const ours = JSON.parse(execFileSync(orchctl, ["inspect", "--json", "--tensors", file]));
	const { metadata: md, tensorInfos } = await gguf(file, { allowLocalFile: true });
	const arch = md["general.architecture"];
	let ok = check(file, "architecture", ours.architecture, arch);
	ok &&= check(file, "tensor count", ours.tensor_count, tensorInfos.length);
	if (ours.layers !== undefined)
		ok &&= check(file, "block_count", ours.layers, Number(md[`${arch}.block_count`]));
	const tokens = md["tokenizer.ggml.tokens"];
	if (tokens) ok &&= check(file, "vocab size", ours.tokenizer.vocab_size, tokens.length);
	for (let i = 0; ok && i < tensorInfos.length; i++) {
		const a = ours.tensors[i], b = tensorInfos[i];
		ok &&= check(file, `tensor ${i} name`, a.name, b.name);
		ok &&= check(file, `${a.name} shape`, a.shape.join(","), b.shape.map(Number).join(","));
		ok &&= check(file, `${a.name} type`, a.type_id, Number(b.dtype));
		ok &&= check(file, `${a.name} offset`, a.offset, Number(b.offset));
	}
	if (ok) passed++; else failed++;
}
console.log(`${passed} passed, ${failed} failed`);
process.exit(failed || passed === 0 ? 1 : 0);
