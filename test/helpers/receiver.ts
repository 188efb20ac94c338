import { createServer, type IncomingHttpHeaders } from "node:http";
import type { AddressInfo } from "node:net";

export interface Received {
	headers: IncomingHttpHeaders;
	body: string;
	json: { type: string; timestamp: string; data: Record<string, any> };
	/** The status the receiver answered. */
	status: number;
}

/**
 * A webhook receiver on 127.0.0.1:0 that records every request. `answer(n)` picks the status of
 * the n-th request (0-based), 204 by default.
 */
export async function startReceiver(answer: (n: number, json: Received["json"]) => number = () => 204) {
	const received: Received[] = [];
	const server = createServer((req, res) => {
		const chunks: Buffer[] = [];
		req.on("data", (c: Buffer) => chunks.push(c));
		req.on("end", () => {
			const body = Buffer.concat(chunks).toString("utf8");
			const json = JSON.parse(body);
			const status = answer(received.length, json);
			received.push({ headers: req.headers, body, json, status });
			res.writeHead(status).end();
		});
	});
	await new Promise<void>((resolve) => server.listen(0, "127.0.0.1", resolve));
	const url = `http://127.0.0.1:${(server.address() as AddressInfo).port}/hook`;
	return {
		url,
		received,
		of: (type: string) => received.filter((r) => r.json.type === type),
		close: () => new Promise<void>((resolve) => server.close(() => resolve())),
	};
}
