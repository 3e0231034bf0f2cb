// openapi_check.mjs - docs/openapi.json is a valid OpenAPI 3 document (an
// independent validator: schema, $refs, path parameters); prints its
// operations, one "METHOD PATH" a line, for orchd_test to call each.
// usage: node openapi_check.mjs FILE
import SwaggerParser from "@apidevtools/swagger-parser";

const api = await SwaggerParser.validate(process.argv[2]);
for (const [path, item] of Object.entries(api.paths))
	for (const method of ["get", "post", "delete"])
		if (item[method]) console.log(`${method.toUpperCase()} ${path}`);
