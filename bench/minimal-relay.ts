/**
 * The least an SSE gateway can do, as a yardstick for the throughput table: one stub pi, its
 * lines framed as `id:`/`event:`/`data:` (one buffer per pipe read) and written to one SSE client.
 * No event log, no sessions, no filter, no buffer bound, no metrics, no auth. Run as its own
 * process, like the gateway, so the same three processes share the machine:
 *
 *   node bench/minimal-relay.ts <stub> node-http|hono
 *
 * prints its port, then serves `GET /events` (the stream) and `POST /cmd` (a line for the stub's
 * stdin). `node-http` writes with `res.write`; `hono` goes through Hono's streamSSE and
 * @hono/node-server, as the gateway does.
 */
import { spawn } from "node:child_process";
import { createServer } from "node:http";
import type { AddressInfo } from "node:net";
import { serve } from "@hono/node-server";
import { Hono } from "hono";
import { streamSSE } from "hono/streaming";

const [stubPath, mode] = process.argv.slice(2);
if (!stubPath || (mode !== "node-http" && mode !== "hono"))
	throw new Error("usage: minimal-relay.ts <stub> node-http|hono");
const stub = spawn(process.execPath, [stubPath], { stdio: ["pipe", "pipe", "inherit"] });
process.on("SIGTERM", () => {
	stub.kill();
	process.exit(0);
});

const LF = 0x0a;
const typeLines = Buffer.from("\nevent: message_update\ndata: ");
let seq = 0;
let rest: Buffer | undefined;

/** Every whole line of `chunk` framed into one buffer (the type is not read: the yardstick skips that too). */
function frames(chunk: Buffer): Buffer {
	const bytes = rest ? Buffer.concat([rest, chunk]) : chunk;
	const lines: Buffer[] = [];
	let start = 0;
	for (let lf = bytes.indexOf(LF); lf !== -1; lf = bytes.indexOf(LF, start)) {
		lines.push(bytes.subarray(start, lf));
		start = lf + 1;
	}
	rest = start < bytes.length ? bytes.subarray(start) : undefined;
	let size = 0;
	for (const line of lines) size += 4 + 16 + typeLines.length + line.length + 2;
	const out = Buffer.allocUnsafe(size);
	let at = 0;
	for (const line of lines) {
		at += out.write(`id: ${++seq}`, at, "latin1");
		out.set(typeLines, at);
		at += typeLines.length;
		out.set(line, at);
		at += line.length;
		out[at++] = LF;
		out[at++] = LF;
	}
	return out.subarray(0, at);
}

const command = (line: string) => stub.stdin.write(`${line}\n`);

if (mode === "node-http") {
	const server = createServer((req, res) => {
		if (req.method === "POST") {
			let body = "";
			req.on("data", (d) => {
				body += d;
			});
			req.on("end", () => {
				command(body);
				res.end("{}");
			});
			return;
		}
		res.writeHead(200, { "content-type": "text/event-stream", "cache-control": "no-cache" });
		res.flushHeaders();
		stub.stdout.on("data", (chunk: Buffer) => {
			if (res.write(frames(chunk))) return;
			stub.stdout.pause();
			res.once("drain", () => stub.stdout.resume());
		});
	});
	server.listen(0, "127.0.0.1", () => console.log((server.address() as AddressInfo).port));
} else {
	const app = new Hono();
	app.post("/cmd", async (c) => {
		command(await c.req.text());
		return c.json({});
	});
	app.get("/events", (c) =>
		streamSSE(c, async (stream) => {
			const queued: Buffer[] = [];
			let wake: (() => void) | undefined;
			stub.stdout.on("data", (chunk: Buffer) => {
				queued.push(chunk);
				wake?.();
			});
			while (!stream.aborted) {
				if (queued.length === 0) {
					await new Promise<void>((resolve) => {
						wake = resolve;
					});
					wake = undefined;
					continue;
				}
				const batch = queued.splice(0);
				await stream.write(frames(batch.length === 1 ? (batch[0] as Buffer) : Buffer.concat(batch)));
			}
		}),
	);
	serve({ fetch: app.fetch, port: 0, hostname: "127.0.0.1" }, (info) => console.log(info.port));
}
