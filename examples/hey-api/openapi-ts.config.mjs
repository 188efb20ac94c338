// @hey-api/openapi-ts configuration for the example SDK: `npm run sdk:hey-api` writes ./client from
// the checked-in openapi.yaml (point `input` at http://127.0.0.1:8787/openapi.json to use a running
// gateway). `.ts` import specifiers let Node 22 run the generated code directly.
export default {
	input: "openapi.yaml",
	output: { path: "examples/hey-api/client", module: { extension: ".ts" } },
	plugins: ["@hey-api/client-fetch", "@hey-api/typescript", "@hey-api/sdk"],
	logs: { file: false },
};
