#!/usr/bin/env node
// The published package runs the compiled JavaScript in dist/ (`npm pack` builds it: Node does
// not strip types under node_modules). A checkout without a build runs the TypeScript sources
// directly (Node >= 22.18 strips types outside node_modules).
import { existsSync } from "node:fs";

const compiled = new URL("../dist/main.js", import.meta.url);
await import(existsSync(compiled) ? compiled.href : new URL("../src/main.ts", import.meta.url).href);
