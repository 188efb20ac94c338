/**
 * Loaded into a sandboxed pi with `node --import` (spawn.ts): inside the sandbox's own network,
 * which has only a loopback of its own, it listens on 127.0.0.1:<port> and joins each connection
 * to the gateway's relay, a unix socket bound into the sandbox (relay/server.ts). pi's provider
 * base URLs point here (the area's models.json). With `proxySocket` and `proxyPort` it does the same
 * for the tools' egress proxy (relay/egress-proxy.ts), which HTTP_PROXY names. It holds no secret; it runs in pi's process, so
 * it starts before pi's first call and goes with it. Worker threads and forks that load it again
 * find the port taken and do nothing.
 */
import { connect, createServer } from "node:net";
import { isMainThread } from "node:worker_threads";

const params = new URL(import.meta.url).searchParams;
const socket = params.get("socket");
const port = Number(params.get("port"));

/** Joins each connection on the sandbox's 127.0.0.1:`at` to the gateway's unix socket `to`. */
function forward(to, at) {
	const server = createServer((client) => {
		client.setNoDelay(true);
		const relay = connect(to);
		client.pipe(relay).pipe(client);
		client.on("error", () => relay.destroy());
		relay.on("error", () => client.destroy());
		client.on("close", () => relay.destroy());
		relay.on("close", () => client.destroy());
	});
	server.on("error", () => {});
	server.listen(at, "127.0.0.1");
	server.unref();
}

const proxySocket = params.get("proxySocket");
const proxyPort = Number(params.get("proxyPort"));
if (isMainThread && socket && port > 0) forward(socket, port);
if (isMainThread && proxySocket && proxyPort > 0) forward(proxySocket, proxyPort);
