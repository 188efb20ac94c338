import { execFileSync } from "node:child_process";
import { mkdtempSync, readFileSync, rmSync } from "node:fs";
import { createServer, type IncomingMessage, type Server, type ServerResponse } from "node:http";
import { createServer as createHttpsServer } from "node:https";
import { type AddressInfo, createServer as createNetServer, type Socket } from "node:net";
import { tmpdir } from "node:os";
import { join } from "node:path";
import { getCACertificates, setDefaultCACertificates } from "node:tls";
import { afterAll, beforeAll, describe, expect, it } from "vitest";
import type { AnswerHead } from "../../src/sessions/relay/http1.ts";
import { UpstreamCall } from "../../src/sessions/relay/upstream.ts";

// The relay's own HTTP/1.1 client (upstream.ts) against real servers on 127.0.0.1: what it sends,
// what it hands on, and that it keeps a connection between calls only when HTTP lets it.

interface Outcome {
	head?: AnswerHead;
	data: string;
	/** How many reads the data came in. */
	reads: number;
	ended: boolean;
	/** The whole request was handed to the connection. */
	sent: boolean;
	error?: Error;
}

function call(url: string, body = "", method = "POST"): Promise<Outcome> {
	return new Promise((resolve) => {
		const outcome: Outcome = { data: "", reads: 0, ended: false, sent: false };
		new UpstreamCall(new URL(url), method, { "content-length": "999" }, Buffer.from(body), {
			sent: () => (outcome.sent = true),
			head: (head) => (outcome.head = head),
			data: (bytes) => {
				outcome.data += bytes.toString("utf8");
				outcome.reads++;
			},
			end: () => resolve({ ...outcome, ended: true }),
			error: (error) => resolve({ ...outcome, error }),
		});
	});
}

const listen = async (server: Server | ReturnType<typeof createNetServer>): Promise<string> => {
	await new Promise<void>((resolve) => server.listen(0, "127.0.0.1", resolve));
	return `127.0.0.1:${(server.address() as AddressInfo).port}`;
};

const readBody = async (req: IncomingMessage) => {
	let text = "";
	for await (const part of req) text += part;
	return text;
};

describe("a call over plain HTTP", () => {
	let server: Server;
	let origin: string;
	let connections = 0;
	const seen: { method?: string; url?: string; headers: IncomingMessage["headers"]; body: string }[] = [];

	beforeAll(async () => {
		server = createServer(async (req: IncomingMessage, res: ServerResponse) => {
			seen.push({ method: req.method, url: req.url, headers: req.headers, body: await readBody(req) });
			if (req.url === "/stream") {
				res.writeHead(200, { "content-type": "text/event-stream" });
				for (let i = 0; i < 2000; i++) res.write(`data: {"n":${i}}\n\n`);
				return res.end();
			}
			if (req.url === "/close") res.setHeader("connection", "close");
			if (req.url === "/cut") {
				res.writeHead(200, { "content-type": "text/event-stream" });
				res.write("data: 1\n\n");
				return setTimeout(() => res.destroy(), 20);
			}
			res.writeHead(200, { "content-type": "application/json", "x-twice": ["a", "b"] });
			res.end(JSON.stringify({ echo: seen.at(-1)?.body }));
		});
		server.on("connection", () => connections++);
		origin = await listen(server);
	});

	afterAll(() => {
		server.closeAllConnections();
		server.close();
	});

	it("sends the method, path, host and body, and hands on the answer's head and body", async () => {
		const outcome = await call(`http://${origin}/v1/json?x=1`, '{"model":"m"}');
		expect(outcome).toMatchObject({ ended: true, sent: true, data: JSON.stringify({ echo: '{"model":"m"}' }) });
		expect(outcome.head).toMatchObject({ status: 200, headers: { "x-twice": ["a", "b"] } });
		expect(seen.at(-1)).toMatchObject({ method: "POST", url: "/v1/json?x=1", headers: { host: origin } });
	});

	it("sends the body's own length, whatever content-length the caller had, and none for a GET without a body", async () => {
		await call(`http://${origin}/json`, "twelve bytes");
		expect(seen.at(-1)).toMatchObject({ body: "twelve bytes", headers: { "content-length": "12" } });
		await call(`http://${origin}/json`, "", "GET");
		expect(seen.at(-1)?.headers["content-length"]).toBeUndefined();
		expect(seen.at(-1)?.headers["transfer-encoding"]).toBeUndefined();
	});

	it("hands on a stream of 2,000 chunks whole, a read at a time, not a chunk at a time", async () => {
		const outcome = await call(`http://${origin}/stream`, "{}");
		let expected = "";
		for (let i = 0; i < 2000; i++) expected += `data: {"n":${i}}\n\n`;
		expect(outcome.ended).toBe(true);
		expect(outcome.data).toBe(expected);
		expect(outcome.reads).toBeLessThan(2000);
	});

	it("keeps its connection between calls, and not when the answer says close", async () => {
		await call(`http://${origin}/json`, "{}");
		const before = connections;
		await call(`http://${origin}/json`, "{}");
		await call(`http://${origin}/json`, "{}");
		expect(connections).toBe(before);
		await call(`http://${origin}/close`, "{}");
		await call(`http://${origin}/json`, "{}");
		expect(connections).toBe(before + 1);
	});

	it("reports a body cut short as an error after the head", async () => {
		const outcome = await call(`http://${origin}/cut`, "{}");
		expect(outcome.head?.status).toBe(200);
		expect(outcome.ended).toBe(false);
		expect(outcome.error?.message).toMatch(/cut short|closed/);
	});

	it("refuses a header value holding a line break before anything is sent", () => {
		const events = { sent() {}, head() {}, data() {}, end() {}, error() {} };
		const url = new URL(`http://${origin}/json`);
		expect(() => new UpstreamCall(url, "POST", { a: "b\r\nc" }, Buffer.alloc(0), events)).toThrow();
	});
});

describe("a call to a server that", () => {
	const raw = async (answer: (socket: Socket) => void) => {
		const server = createNetServer((socket) => socket.once("data", () => answer(socket)));
		const origin = await listen(server);
		return { url: `http://${origin}/x`, close: () => server.close() };
	};

	it("is not there fails before any head", async () => {
		const server = createNetServer();
		const origin = await listen(server);
		await new Promise((resolve) => server.close(resolve));
		const outcome = await call(`http://${origin}/x`, "{}");
		expect(outcome.head).toBeUndefined();
		expect(outcome.error).toBeDefined();
	});

	it("sends 100 Continue first is read past it, and a body to the connection's end is read to it", async () => {
		const server = await raw((s) =>
			s.end("HTTP/1.1 100 Continue\r\n\r\nHTTP/1.1 200 OK\r\nContent-Type: text/plain\r\n\r\nall of it"),
		);
		const outcome = await call(server.url, "{}");
		expect(outcome).toMatchObject({ ended: true, data: "all of it", head: { status: 200 } });
		server.close();
	});

	it("answers with both a length and chunks, or garbage, fails the call", async () => {
		for (const answer of [
			"HTTP/1.1 200 OK\r\nContent-Length: 3\r\nTransfer-Encoding: chunked\r\n\r\n3\r\nabc\r\n0\r\n\r\n",
			"HTTP/1.1 200 OK\r\nTransfer-Encoding: chunked\r\n\r\nzz\r\n",
			"SSH-2.0-OpenSSH\r\n\r\n",
		]) {
			const server = await raw((s) => s.end(answer));
			expect((await call(server.url, "{}")).error, answer).toBeDefined();
			server.close();
		}
	});

	it("closes a kept connection while it is idle has it dropped, and the next call opens another", async () => {
		let connections = 0;
		let closed = 0;
		// Each answer is HTTP/1.1 with a length (a connection to keep), and then the server closes it.
		const server = createNetServer((socket) => {
			connections++;
			socket.on("close", () => closed++);
			socket.once("data", () => socket.write("HTTP/1.1 200 OK\r\nContent-Length: 2\r\n\r\nok", () => socket.end()));
		});
		const origin = await listen(server);
		expect((await call(`http://${origin}/a`, "{}")).data).toBe("ok");
		while (closed < 1) await new Promise((resolve) => setTimeout(resolve, 10));
		expect((await call(`http://${origin}/a`, "{}")).data).toBe("ok");
		expect(connections).toBe(2);
		server.close();
	});
});

describe("a call over TLS", () => {
	let dir: string;
	let server: ReturnType<typeof createHttpsServer>;
	let origin: string;
	const defaults = getCACertificates("default");

	beforeAll(async () => {
		dir = mkdtempSync(join(tmpdir(), "relay-upstream-tls-"));
		execFileSync(
			"openssl",
			[
				...["req", "-x509", "-newkey", "ec", "-pkeyopt", "ec_paramgen_curve:prime256v1", "-nodes", "-days", "1"],
				...["-subj", "/CN=relay-test", "-addext", "subjectAltName=IP:127.0.0.1"],
				...["-keyout", join(dir, "key.pem"), "-out", join(dir, "cert.pem")],
			],
			{ stdio: "ignore" },
		);
		const key = readFileSync(join(dir, "key.pem"));
		const cert = readFileSync(join(dir, "cert.pem"));
		server = createHttpsServer({ key, cert }, (_req, res) => res.end("over tls"));
		origin = await listen(server);
	});

	afterAll(() => {
		setDefaultCACertificates(defaults);
		server.closeAllConnections();
		server.close();
		rmSync(dir, { recursive: true, force: true });
	});

	it("checks the provider's certificate: one it does not trust fails the call", async () => {
		const outcome = await call(`https://${origin}/x`, "{}");
		expect(outcome.error?.message).toMatch(/self.signed|certificate/i);
	});

	it("reaches a provider it trusts", async () => {
		setDefaultCACertificates([...defaults, readFileSync(join(dir, "cert.pem"), "utf8")]);
		expect(await call(`https://${origin}/x`, "{}")).toMatchObject({ ended: true, data: "over tls" });
	});
});
