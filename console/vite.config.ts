import { fileURLToPath } from "node:url";
import { defineConfig } from "vite";
import { consoleAssets } from "../scripts/console-assets.ts";

// Fixed file names (the gateway serves a short, known list of paths without a token), asked for
// with the build's id (`console.js?v=…`, scripts/console-assets.ts), so a browser keeps them for a
// year and a new build is a new URL; each precompressed (.br, .gz) at build. The first load is one
// JS file and one CSS file, no preload polyfill (it would be inline); the changes review (diff
// views, highlighter, grammars) is one lazy chunk of its own, console-review.js, fetched only when
// changes are shown.
export default defineConfig({
	root: fileURLToPath(new URL(".", import.meta.url)),
	base: "./",
	publicDir: false,
	logLevel: "warn",
	oxc: { jsx: { runtime: "automatic", importSource: "preact" } },
	plugins: [consoleAssets()],
	build: {
		outDir: fileURLToPath(new URL("../dist/console", import.meta.url)),
		emptyOutDir: true,
		modulePreload: false,
		cssCodeSplit: false,
		assetsInlineLimit: 0,
		target: "es2022",
		rollupOptions: {
			output: {
				entryFileNames: "console.js",
				chunkFileNames: "console-[name].js",
				assetFileNames: "console.[ext]",
			},
		},
	},
});
