import { readFileSync } from "node:fs";
import { createServer as createHttpServer, type Server } from "node:http";
import { createServer as createTcpServer, type Server as TcpServer } from "node:net";
import { join } from "node:path";
import { afterAll, beforeAll, describe, expect, it } from "vitest";
import { agentRun, startTestGateway, type TestGateway } from "../helpers/gateway.ts";
import { collect } from "../helpers/sse.ts";

// Issue 42 item 3: a sandboxed pi's tools have no network unless the operator allows hosts
// (--sandbox-allow-hosts); what is allowed goes through the gateway's egress proxy (HTTP_PROXY in
// the sandbox), which checks the host on plain HTTP and on CONNECT, refuses a loopback address no
// entry names, and reports each refusal as an egress_denied event and in a metric. Real pi, the
// demo model's bash tool, README's layout; every server is on 127.0.0.1, and the one name that is
// not (unlisted.example) is refused by name, never resolved.

let closed: TestGateway;
let open: TestGateway;
let web: Server;
let other: Server;
let echo: TcpServer;
const port = (s: Server | TcpServer) => (s.address() as { port: number }).port;
const seen: string[] = [];
/** The Host each path of `web` was asked with. */
const hostOf = new Map<string, string | undefined>();
const otherSeen: string[] = [];

const listen = async <S extends Server | TcpServer>(server: S) => {
	await new Promise<void>((done) => server.listen(0, "127.0.0.1", done));
	return server;
};

beforeAll(async () => {
	web = await listen(
		createHttpServer((req, res) => {
			seen.push(req.url ?? "");
			hostOf.set(req.url ?? "", req.headers.host);
			res.end(`hello ${req.url}\n`);
		}),
	);
	other = await listen(
		createHttpServer((req, res) => {
			otherSeen.push(req.url ?? "");
			res.end("other\n");
		}),
	);
	echo = await listen(createTcpServer((socket) => socket.pipe(socket)));
	closed = await startTestGateway();
	open = await startTestGateway({
		sandboxAllowHosts: [
			`127.0.0.1:${port(web)}`,
			`127.0.0.1:${port(echo)}`,
			// A listed name that resolves to loopback: refused, as no entry names the address for it.
			`localhost:${port(other)}`,
			"registries",
		],
	});
});
afterAll(async () => {
	await closed?.stop();
	await open?.stop();
	web?.close();
	other?.close();
	echo?.close();
});

/** Runs `script` with pi's bash tool (the demo model's `bash:`) and returns what it wrote. */
async function tool(gw: TestGateway, id: string, script: string): Promise<string> {
	await agentRun(gw, id, `{ ${script} ; } > out.txt 2>&1`);
	return readFileSync(join(await gw.folder(id), "out.txt"), "utf8");
}

// curl leaves 127.0.0.1 out of the proxy (NO_PROXY, for the model relay): `--noproxy ''` puts it back.
const curl = "curl -sS -m 20 --noproxy ''";

describe("tool egress", () => {
	it("without an allow list, a tool reaches nothing: no proxy, no loopback server", async () => {
		const id = await closed.session();
		const out = await tool(
			closed,
			id,
			[
				`curl -sS -m 20 http://127.0.0.1:${port(web)}/direct; echo "direct=$?"`,
				'echo "proxies=$(env | grep -ci _proxy)"',
				"(exec 3<>/dev/tcp/127.0.0.1/4318) 2>/dev/null && echo 'proxy open' || echo 'proxy closed'",
			].join("; "),
		);
		expect(out).toContain("direct=7");
		expect(out).toContain("proxies=0");
		expect(out).toContain("proxy closed");
		expect(seen).not.toContain("/direct");
	});

	it("with the loopback server's address listed, plain HTTP and CONNECT reach it through the proxy", async () => {
		const id = await open.session();
		const connect = `CONNECT 127.0.0.1:${port(echo)} HTTP/1.1\\r\\nHost: 127.0.0.1:${port(echo)}\\r\\n\\r\\nping-through\\n`;
		const out = await tool(
			open,
			id,
			[
				'echo "env=$HTTP_PROXY $HTTPS_PROXY $http_proxy $https_proxy no=$NO_PROXY"',
				`${curl} http://127.0.0.1:${port(web)}/plain`,
				`${curl} -p http://127.0.0.1:${port(web)}/tunnel`,
				// Domain fronting: a Host of another site, behind the address allowed.
				`${curl} -H 'Host: attacker-site.example.net' http://127.0.0.1:${port(web)}/fronted`,
				// A CONNECT by hand to the echo server, its first bytes sent with the request.
				`exec 3<>/dev/tcp/127.0.0.1/4318; printf '${connect}' >&3; timeout 20 head -n 3 <&3; exec 3>&-`,
			].join("; "),
		);
		const proxy = "http://127.0.0.1:4318";
		expect(out).toContain(`env=${proxy} ${proxy} ${proxy} ${proxy} no=127.0.0.1,localhost`);
		expect(out).toContain("hello /plain");
		expect(out).toContain("hello /tunnel");
		expect(out).toContain("HTTP/1.1 200 Connection Established");
		expect(out).toContain("ping-through");
		expect(seen).toEqual(expect.arrayContaining(["/plain", "/tunnel", "/fronted"]));
		// The Host sent is the target checked, never the client's own.
		expect(hostOf.get("/fronted")).toBe(`127.0.0.1:${port(web)}`);
	});

	it("refuses what is not listed with 403, an egress_denied event and the metric", async () => {
		const id = await open.session();
		const out = await tool(
			open,
			id,
			[
				// Another loopback port, plain and by CONNECT.
				`${curl} -o /dev/null -w 'plain=%{http_code}\\n' http://127.0.0.1:${port(other)}/nope`,
				`${curl} -p http://127.0.0.1:${port(other)}/nope; echo "connect=$?"`,
				// A name not on the list (never resolved).
				`${curl} -o /dev/null -w 'name=%{http_code}\\n' http://unlisted.example/`,
				// A listed name whose address is loopback, which no entry names.
				`${curl} -o /dev/null -w 'localhost=%{http_code}\\n' http://localhost:${port(other)}/`,
			].join("; "),
		);
		expect(out).toContain("plain=403");
		expect(out).toMatch(/CONNECT tunnel failed, response 403/);
		expect(out).toContain("name=403");
		expect(out).toContain("localhost=403");
		expect(otherSeen).toEqual([]);

		const log = await open.fetch(`/v1/sessions/${id}/events?after=0&types=egress_denied`, {
			headers: { accept: "text/event-stream" },
		});
		const frames = await collect(log, (f) => f.json.host === "localhost");
		const denials = frames.map((f) => f.json).filter((e) => e.type === "egress_denied");
		const o = port(other);
		expect(denials).toEqual([
			expect.objectContaining({
				type: "egress_denied",
				sessionId: id,
				host: "127.0.0.1",
				port: o,
				reason: "not_allowed",
			}),
			expect.objectContaining({ host: "127.0.0.1", port: o, reason: "not_allowed" }),
			expect.objectContaining({ host: "unlisted.example", port: 80, reason: "not_allowed" }),
			expect.objectContaining({ host: "localhost", port: o, reason: "private_address" }),
		]);
		expect(denials[3].detail).toContain("127.0.0.1");

		const metrics = await (await open.fetch("/metrics")).text();
		expect(metrics).toMatch(/pi_gateway_egress_denied_total\{reason="not_allowed"\} 3\b/);
		expect(metrics).toMatch(/pi_gateway_egress_denied_total\{reason="private_address"\} 1\b/);
	});

	it("a session narrows the operator's list, and cannot widen it", async () => {
		const wider = await open.api("/v1/sessions", {
			method: "POST",
			json: { sandboxAllowHosts: [`127.0.0.1:${port(other)}`] },
		});
		expect(wider.status).toBe(403);
		expect(wider.body.code).toBe("egress_not_allowed");
		const garbled = await open.api("/v1/sessions", { method: "POST", json: { sandboxAllowHosts: ["a b"] } });
		expect(garbled.status).toBe(400);
		expect(garbled.body.code).toBe("egress_entry_invalid");

		const id = await open.session({ sandboxAllowHosts: [`127.0.0.1:${port(echo)}`] });
		const out = await tool(
			open,
			id,
			`${curl} -o /dev/null -w 'web=%{http_code}\n' http://127.0.0.1:${port(web)}/narrowed`,
		);
		expect(out).toContain("web=403");
		expect(seen).not.toContain("/narrowed");
	});
});
