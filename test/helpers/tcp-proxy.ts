import { connect, type Socket, createServer as tcpServer } from "node:net";

export interface TcpProxy {
	port: number;
	/** The head of every HTTP request that went through. */
	requests: string[];
	/** Cuts every open connection (new ones still pass). */
	cut(): void;
	/** Cuts every connection and refuses new ones until resume(): the target is gone, as far as clients can tell. */
	pause(): Promise<void>;
	/** Accepts again, on the same port. */
	resume(): Promise<void>;
	close(): Promise<void>;
}

/** A TCP proxy on 127.0.0.1 in front of `target` (a port there) that a test can cut or take away. */
export async function startProxy(target: number, port = 0): Promise<TcpProxy> {
	const sockets = new Set<Socket>();
	const requests: string[] = [];
	const cut = () => {
		for (const socket of sockets) socket.destroy();
	};
	const listen = (at: number) => {
		const server = tcpServer((client) => {
			const upstream = connect(target, "127.0.0.1");
			sockets.add(client).add(upstream);
			let head = "";
			client.on("data", (chunk) => {
				if (head.includes("\r\n\r\n") || head.length > 65536) return;
				head += chunk.toString("latin1");
				if (head.includes("\r\n\r\n")) requests.push(head.slice(0, head.indexOf("\r\n\r\n")));
			});
			client.pipe(upstream).pipe(client);
			const drop = () => {
				client.destroy();
				upstream.destroy();
				sockets.delete(client);
				sockets.delete(upstream);
			};
			client.on("error", drop).on("close", drop);
			upstream.on("error", drop).on("close", drop);
		});
		return new Promise<typeof server>((resolve, reject) => {
			server.once("error", reject);
			server.listen(at, "127.0.0.1", () => resolve(server));
		});
	};
	let server: Awaited<ReturnType<typeof listen>> | undefined = await listen(port);
	const bound = (server.address() as { port: number }).port;
	const stop = () =>
		new Promise<void>((done) => {
			cut();
			if (!server) return done();
			server.close(() => done());
			server = undefined;
		});
	return {
		port: bound,
		requests,
		cut,
		pause: stop,
		resume: async () => {
			server ??= await listen(bound);
		},
		close: stop,
	};
}
