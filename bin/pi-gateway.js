#!/usr/bin/env node
// A checkout runs the TypeScript sources (Node >= 22.18 strips types outside node_modules), so a
// stale build never hides a change. The published package has no src/: it runs the JavaScript
// that `npm pack` compiled into dist/, since Node refuses to strip types under node_modules.
import { existsSync } from "node:fs";

const source = new URL("../src/main.ts", import.meta.url);
await import(existsSync(source) ? source.href : new URL("../dist/main.js", import.meta.url).href);
