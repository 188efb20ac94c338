/**
 * Bundles the built server (dist/main.js and what it imports, its dependencies included) into
 * dist/pi-gateway.mjs, which the bin runs (`npm run build` ends with this), and the chunks in
 * dist/chunks/ that main.ts imports only when needed: the server itself (loaded once the data dir's
 * compile cache is on, as from the sources), the ACP bridge, backup. `--help`, `keys` or `acp` load
 * neither the server nor pi's libraries. Loading a few files instead of ~900 modules, and carrying
 * the API document instead of generating it, roughly halves a start: BENCHMARKS.md table 17.
 *
 * Left outside, loaded from node_modules as before:
 * - pi (@earendil-works/*): it imports its own files by paths relative to itself;
 * - pino and its transports: pino-pretty runs in a worker that loads its files by name;
 * - swagger-ui-dist: the docs page serves its folder;
 * - optional native add-ons a dependency may try (pg-native, koffi).
 * Worker threads and the cluster's watchdog run from dist/ beside the bundle (src/shared/package-files.ts).
 */
import { readdirSync, rmSync, statSync } from "node:fs";
import { dirname, join } from "node:path";
import { fileURLToPath } from "node:url";
import { build } from "rolldown";
import { builtApiDocument } from "../src/app/app.ts";
import { bundleFile } from "./bundle-current.ts";
import { specApp } from "./openapi.ts";

const root = join(dirname(fileURLToPath(import.meta.url)), "..");
const chunks = join(root, "dist/chunks");
const documentModule = join(root, "dist/app/prebuilt-document.js");

/** The document the routes generate, as every gateway built from these sources would. */
function apiDocument(): unknown {
	specApp();
	const document = builtApiDocument();
	if (!document) throw new Error("createApp built no API document");
	return document;
}

const external = [
	/^node:/,
	/^@earendil-works\//,
	/^pino(-|$|\/)/,
	/^thread-stream/,
	/^swagger-ui-dist/,
	"pg-native",
	/^koffi/,
];

const document = JSON.stringify(apiDocument());
rmSync(chunks, { recursive: true, force: true });
await build({
	input: join(root, "dist/main.js"),
	platform: "node",
	external,
	plugins: [
		{
			name: "prebuilt-document",
			load(id) {
				if (id !== documentModule) return null;
				return `export function prebuiltDocument() { return JSON.parse(${JSON.stringify(document)}); }`;
			},
		},
	],
	output: {
		dir: join(root, "dist"),
		format: "esm",
		entryFileNames: "pi-gateway.mjs",
		chunkFileNames: "chunks/[name]-[hash].mjs",
	},
	logLevel: "warn",
});
const sizes = [bundleFile, ...readdirSync(chunks).map((name) => join(chunks, name))].map((f) => statSync(f).size);
console.log(
	`wrote ${bundleFile.slice(root.length + 1)} and ${sizes.length - 1} chunks in dist/chunks (${(sizes.reduce((a, b) => a + b) / 1e6).toFixed(1)} MB)`,
);
