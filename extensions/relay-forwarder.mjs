/**
 * Loaded into a sandboxed pi with `node --import` (spawn.ts): inside the sandbox's own network,
 * which has only a loopback of its own, it listens on 127.0.0.1:<port> and joins each connection
 * to the gateway's relay, a unix socket bound into the sandbox (relay/server.ts). pi's provider
 * base URLs point here (the area's models.json). It holds no secret; it runs in pi's process, so
 * it starts before pi's first call and goes with it. Worker threads and forks that load it again
 * find the port taken and do nothing.
 */
import { connect, createServer } from "node:net";
import { isMainThread } from "node:worker_threads";

const params = new URL(import.meta.url).searchParams;
const socket = params.get("socket");
const port = Number(params.get("port"));

if (isMainThread && socket && port > 0) {
	const server = createServer((client) => {
		client.setNoDelay(true);
		const relay = connect(socket);
		client.pipe(relay).pipe(client);
		client.on("error", () => relay.destroy());
		relay.on("error", () => client.destroy());
		client.on("close", () => relay.destroy());
		relay.on("close", () => client.destroy());
	});
	server.on("error", () => {});
	server.listen(port, "127.0.0.1");
	server.unref();
}
